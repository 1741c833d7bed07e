/* Shared plumbing for the pki files: enum names, OpenSSL error mapping (the
 * only place it happens), time and address conversions, PEM/BIO helpers. */
#include <arpa/inet.h>
#include <limits.h>
#include <openssl/err.h>
#include <time.h>

#include "base/log.h"
#include "pki-internal.h"

static const char *const status_table[_PKI_STATUS_MAX] = {
        [PKI_VALID] = "valid",
        [PKI_EXPIRING] = "expiring",
        [PKI_EXPIRED] = "expired",
        [PKI_WRONG_SANS] = "wrong-sans",
        [PKI_WRONG_SIGNER] = "wrong-signer",
        [PKI_WRONG_PURPOSE] = "wrong-purpose",
        [PKI_KEY_MISMATCH] = "key-mismatch",
        [PKI_UNPARSEABLE] = "unparseable",
};

static const char *const key_type_table[_PKI_KEY_TYPE_MAX] = {
        [PKI_KEY_RSA_2048] = "rsa2048",
        [PKI_KEY_ECDSA_P256] = "ecdsa-p256",
};

const char *pki_status_to_string(PkiStatus s)
{
        if (s < 0 || s >= _PKI_STATUS_MAX)
                return NULL;
        return status_table[s];
}

const char *pki_key_type_to_string(PkiKeyType t)
{
        if (t < 0 || t >= _PKI_KEY_TYPE_MAX)
                return NULL;
        return key_type_table[t];
}

PkiKeyType pki_key_type_from_string(const char *s)
{
        if (!s)
                return _PKI_KEY_TYPE_INVALID;
        for (size_t i = 0; i < ELEMENTSOF(key_type_table); i++)
                if (streq(s, key_type_table[i]))
                        return (PkiKeyType) i;
        return _PKI_KEY_TYPE_INVALID;
}

int pki_openssl_error_quiet(int fallback)
{
        unsigned long e;
        int r = fallback;

        while ((e = ERR_get_error()) != 0)
                if (!ERR_SYSTEM_ERROR(e) && ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE)
                        r = -ENOMEM;
        return r;
}

int pki_openssl_error(int fallback, const char *what)
{
        unsigned long e, first = 0;
        int r = fallback;

        while ((e = ERR_get_error()) != 0) {
                if (first == 0)
                        first = e;
                if (!ERR_SYSTEM_ERROR(e) && ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE)
                        r = -ENOMEM;
        }
        if (first != 0 && log_level_enabled(LOG_LEVEL_DEBUG)) {
                char buf[256];

                ERR_error_string_n(first, buf, sizeof buf);
                log_debug("pki: %s: %s", what, buf);
        }
        return r;
}

int pki_no_passphrase(char *buf, int size, int rwflag, void *userdata)
{
        return -1;
}

int pki_pem_check(const char *pem)
{
        if (!pem)
                return -EINVAL;
        if (strnlen(pem, PKI_PEM_MAX + 1) > PKI_PEM_MAX)
                return -E2BIG;
        return 0;
}

int pki_bio_from_pem(const char *pem, BIO **ret)
{
        int r;

        assert(ret);
        r = pki_pem_check(pem);
        if (r < 0)
                return r;
        /* PKI_PEM_MAX is far below INT_MAX. */
        BIO *b = BIO_new_mem_buf(pem, (int) strlen(pem));
        if (!b)
                return pki_openssl_error(-ENOMEM, "BIO_new_mem_buf");
        *ret = b;
        return 0;
}

int pki_bio_to_string(BIO *b, char **ret)
{
        char *data = NULL;
        long n;

        assert(b && ret);
        n = BIO_get_mem_data(b, &data);
        if (n < 0)
                return pki_openssl_error(-ENOMEM, "BIO_get_mem_data");
        char *s = malloc((size_t) n + 1);
        if (!s)
                return -ENOMEM;
        if (n > 0)
                memcpy(s, data, (size_t) n);
        s[n] = 0;
        *ret = s;
        return 0;
}

int pki_asn1_time_to_sec(const ASN1_TIME *t, int64_t *ret)
{
        struct tm tm = {};

        assert(ret);
        if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
                return pki_openssl_error(-EBADMSG, "ASN1_TIME_to_tm");
        *ret = (int64_t) timegm(&tm);
        return 0;
}

char *pki_format_sec(char *buf, size_t n, int64_t sec)
{
        struct tm tm = {};
        time_t t = (time_t) sec;

        if (!gmtime_r(&t, &tm) || strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                (void) snprintf(buf, n, "@%lld", (long long) sec);
        return buf;
}

int pki_ip_parse(const char *s, unsigned char ret[16], size_t *ret_len)
{
        assert(ret && ret_len);
        if (!s)
                return -EINVAL;
        if (inet_pton(AF_INET, s, ret) == 1) {
                *ret_len = 4;
                return 0;
        }
        if (inet_pton(AF_INET6, s, ret) == 1) {
                *ret_len = 16;
                return 0;
        }
        return -EINVAL;
}

int pki_ip_format(const unsigned char *a, size_t len, char *buf, size_t n)
{
        assert(a && buf);
        if (len != 4 && len != 16)
                return -EBADMSG;
        if (!inet_ntop(len == 4 ? AF_INET : AF_INET6, a, buf, (socklen_t) n))
                return -errno;
        return 0;
}

int pki_key_digest(EVP_PKEY *key, const EVP_MD **ret)
{
        assert(key && ret);
        switch (EVP_PKEY_get_base_id(key)) {
        case EVP_PKEY_RSA:
        case EVP_PKEY_EC:
                *ret = EVP_sha256();
                return 0;
        default:
                return -EOPNOTSUPP;
        }
}
