/* YAML -> cJSON: any input either parses or fails cleanly, with no leak. */
#include <stdint.h>

#include "base/json.h"
#include "base/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        cJSON *j = NULL;
        char *err = NULL;

        if (yaml_parse_all((const char *) data, size, &j, &err) >= 0) {
                char *s = json_print(j);
                free(s);
                cJSON_Delete(j);
        }
        free(err);
        return 0;
}
