/* kubeconfig files: any content loads or fails with a message, no leak. */
#include <stdint.h>

#include "base/fileio.h"
#include "kube/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void cleanup(void)
{
        (void) unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        KubeConfig *c = NULL;
        char *err = NULL;

        if (!path[0]) {
                (void) snprintf(path, sizeof path, "/tmp/fuzz-kubeconfig-%d", (int) getpid());
                (void) atexit(cleanup);
        }
        if (write_file_atomic(path, data, size, 0600) < 0)
                return 0;
        if (kube_config_from_files(path, NULL, &c, &err) >= 0)
                kube_config_free(c);
        free(err);
        return 0;
}
