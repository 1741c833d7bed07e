/* PEM certificates, bundles and keys from arbitrary bytes: every parser and
 * pki_cert_check() either succeeds or fails cleanly, with no leak, no
 * passphrase prompt and nothing left on OpenSSL's error queue. */
#include <openssl/err.h>
#include <stdint.h>

#include "pki/pki.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW ((usec_t) 1735689600ULL * USEC_PER_SEC)

static const char *const DNS[] = {"localhost", "etcd.openshift-etcd.svc", NULL};
static const char *const IPS[] = {"127.0.0.1", "::1", NULL};

static void inspect_all(const char *s)
{
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *sk = NULL;

        if (pki_certs_from_pem(s, &sk) < 0)
                return;
        for (int i = 0; i < sk_X509_num(sk); i++) {
                _cleanup_(pki_cert_info_freep) PkiCertInfo *info = NULL;
                _cleanup_free_ char *pem = NULL;
                usec_t na;

                (void) pki_cert_get_info(sk_X509_value(sk, i), &info);
                (void) pki_cert_to_pem(sk_X509_value(sk, i), &pem);
                (void) pki_cert_get_not_after(sk_X509_value(sk, i), &na);
        }
}

static void keys(const char *s)
{
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        _cleanup_free_ char *pem = NULL;

        if (pki_key_from_pem(s, &k) < 0)
                return;
        (void) pki_key_get_type(k);
        (void) pki_key_to_pem(k, &pem);
}

static void verdicts(const char *s)
{
        PkiCheck c = {.ca_pem = s, .dns = DNS, .ips = IPS, .refresh = PKI_LEAF_REFRESH_WINDOW};
        _cleanup_free_ char *r1 = NULL, *r2 = NULL, *r3 = NULL, *merged = NULL;
        _cleanup_(pki_pair_freep) PkiPair *pair = NULL;
        const char *bundles[] = {s, s, NULL};
        double days;

        (void) pki_cert_check(s, s, &c, NOW, &r1);
        (void) pki_cert_check(s, NULL, NULL, NOW, NULL);
        (void) pki_verify_chain(s, s, PKI_PURPOSE_SERVER, NOW, &r2);
        (void) pki_verify_chain(s, s, PKI_PURPOSE_ANY, NOW, &r3);
        (void) pki_bundle_merge(bundles, NOW, &merged, NULL);
        (void) pki_bundle_contains(s, s);
        (void) pki_cert_expiration_days(s, NOW, &days);
        (void) pki_pair_from_pem(s, s, &pair);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_free_ char *s = NULL;

        if (size > (size_t) 256 * 1024)
                return 0;
        s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = 0;

        inspect_all(s);
        keys(s);
        verdicts(s);
        if (ERR_peek_error() != 0)
                abort(); /* the library must always drain the error queue */
        return 0;
}
