/* Watch stream lines and Status bodies: JSON parsing with our depth bound,
 * then the informer's event application and Status decoding. */
#include <stdint.h>

#include "base/json.h"
#include "kube/client.h"
#include "kube/informer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static Informer *inf;

static void setup(void)
{
        static Loop *loop;
        static KubeClient *client;
        KubeConfig *cfg = calloc(1, sizeof *cfg);

        cfg->server = strdup("http://127.0.0.1:1");
        loop = loop_new();
        client = kube_client_new(loop, cfg);
        inf = informer_new(client, &KUBE_PODS, NULL, NULL);
        (void) informer_add_label_index(inf, "app");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        cJSON *j = NULL;

        if (!inf)
                setup();
        if (json_parse((const char *) data, size, &j) < 0)
                return 0;
        (void) informer_apply_watch_line(inf, j);
        KubeStatus st = {};
        (void) kube_status_parse(json_get_object(j, "object"), &st);
        kube_status_done(&st);
        cJSON_Delete(j);
        return 0;
}
