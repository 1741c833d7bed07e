/* Writing a certificate and its key to disk for static pods and the render
 * command. The key goes first so a crash in between leaves a pair that
 * pki_cert_check() reports as PKI_KEY_MISMATCH (and gets re-issued), never
 * a new certificate whose key is lost. write_file_atomic() creates its
 * temporary file with mkostemp() (mode 0600), so a key is never readable by
 * others at any point. */
#include <sys/stat.h>

#include "base/fileio.h"
#include "pki-internal.h"

static bool name_valid(const char *name)
{
        return name && *name && !strchr(name, '/') && !streq(name, ".") && !streq(name, "..");
}

int pki_write_pair(const char *dir, const char *name, const char *cert_pem, const char *key_pem)
{
        _cleanup_free_ char *crt = NULL, *key = NULL;
        int r;

        assert_return(dir && *dir && name_valid(name), -EINVAL);
        assert_return(pki_pem_check(cert_pem) >= 0 && pki_pem_check(key_pem) >= 0, -EINVAL);

        crt = strdup_printf("%s/%s.crt", dir, name);
        key = strdup_printf("%s/%s.key", dir, name);
        if (!crt || !key)
                return -ENOMEM;
        r = write_file_atomic(key, key_pem, strlen(key_pem), 0600);
        if (r < 0)
                return r;
        return write_file_atomic(crt, cert_pem, strlen(cert_pem), 0644);
}
