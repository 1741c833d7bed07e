/* An etcd client's PEM files read into an HttpTls (host/tls.h). */
#include "tls.h"
#include "base/fileio.h"
#include "base/macro.h"

#define TLS_FILE_MAX (1024 * 1024)

int host_tls_load(const char *cacert, const char *cert, const char *key, HttpTls *ret, char **ret_error)
{
        const char *paths[] = {cacert, cert, key};
        char *pems[3] = {};
        int r = 0;

        assert_return(ret && ret_error, -EINVAL);
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                if (!paths[i])
                        continue;
                r = read_full_file(paths[i], TLS_FILE_MAX, &pems[i], NULL);
                if (r < 0) {
                        *ret_error = strdup_printf("cannot read %s: %s", paths[i],
                                                   r == -E2BIG ? "larger than 1 MiB" : strerror(-r));
                        break;
                }
        }
        if (r < 0) {
                for (size_t i = 0; i < ELEMENTSOF(pems); i++)
                        free(pems[i]);
                return r;
        }
        *ret = (HttpTls){.ca_pem = pems[0], .cert_pem = pems[1], .key_pem = pems[2]};
        return 0;
}

void host_tls_done(HttpTls *t)
{
        free(t->ca_pem);
        free(t->cert_pem);
        if (t->key_pem)
                explicit_bzero(t->key_pem, strlen(t->key_pem));
        free(t->key_pem);
        *t = (HttpTls){};
}
