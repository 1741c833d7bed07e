/* Verdicts on existing material: pki_cert_check() decides whether a
 * certificate and key on hand can stay (and says why not, in words an
 * operator can act on), pki_verify_chain() runs OpenSSL's path validation
 * at an injected time with a TLS purpose. */
#include <openssl/err.h>
#include <strings.h>

#include "pki-internal.h"

static bool strv_contains(char *const *v, const char *s, bool icase)
{
        for (char *const *p = v; p && *p; p++)
                if (icase ? strcasecmp(*p, s) == 0 : streq(*p, s))
                        return true;
        return false;
}

/* Canonical text of every expected address, so "::1" equals "0::1". */
static int canonical_ips(const char *const *ips, char ***ret)
{
        size_t n = 0;

        for (const char *const *p = ips; p && *p; p++)
                n++;
        char **v = calloc(n + 1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                unsigned char a[16];
                char buf[64];
                size_t len;
                int r = pki_ip_parse(ips[i], a, &len);

                if (r >= 0)
                        r = pki_ip_format(a, len, buf, sizeof buf);
                if (r >= 0 && !(v[i] = strdup(buf)))
                        r = -ENOMEM;
                if (r < 0) {
                        pki_strv_free(v);
                        return r;
                }
        }
        *ret = v;
        return 0;
}

/* Appends "missing DNS SAN x" / "unexpected IP SAN y" items to f, counting
 * the differences in *n. */
static void diff_sans(FILE *f, const char *kind, char *const *want, char *const *have, bool icase, int *n)
{
        for (char *const *w = want; w && *w; w++)
                if (!strv_contains(have, *w, icase))
                        (void) fprintf(f, "%smissing %s SAN %s", (*n)++ ? ", " : "", kind, *w);
        for (char *const *h = have; h && *h; h++)
                if (!strv_contains(want, *h, icase))
                        (void) fprintf(f, "%sunexpected %s SAN %s", (*n)++ ? ", " : "", kind, *h);
}

static int check_sans(X509 *x, const PkiCheck *c, FILE *f)
{
        char **dns = NULL, **ips = NULL, **want_ips = NULL;
        int r, n = 0;

        r = pki_cert_get_sans(x, &dns, &ips);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                (void) fputs("cannot parse the subjectAltName extension", f);
                return PKI_UNPARSEABLE;
        }
        r = canonical_ips(c->ips, &want_ips);
        if (r >= 0) {
                diff_sans(f, "DNS", (char *const *) c->dns, dns, true, &n);
                diff_sans(f, "IP", want_ips, ips, false, &n);
                r = n > 0 ? PKI_WRONG_SANS : PKI_VALID;
        }
        pki_strv_free(dns);
        pki_strv_free(ips);
        pki_strv_free(want_ips);
        return r;
}

static bool signed_by(X509 *x, X509 *ca)
{
        EVP_PKEY *k = X509_get0_pubkey(ca);
        bool ok = k && X509_check_issued(ca, x) == X509_V_OK && X509_verify(x, k) == 1;

        ERR_clear_error();
        return ok;
}

static int check_signer(X509 *x, const char *ca_pem, FILE *f)
{
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *cas = NULL;
        char issuer[256];
        int r;

        r = pki_certs_from_pem(ca_pem, &cas);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                (void) fputs(r == -E2BIG ? "the CA bundle is too large" : "cannot parse the CA bundle", f);
                return PKI_UNPARSEABLE;
        }
        for (int i = 0; i < sk_X509_num(cas); i++)
                if (signed_by(x, sk_X509_value(cas, i)))
                        return PKI_VALID;
        if (!X509_NAME_oneline(X509_get_issuer_name(x), issuer, sizeof issuer))
                (void) snprintf(issuer, sizeof issuer, "?");
        ERR_clear_error();
        (void) fprintf(f, "not signed by any of the %d CA(s) in the bundle (issuer %s)", sk_X509_num(cas),
                       issuer);
        return PKI_WRONG_SIGNER;
}

static int check_expiry(X509 *x, usec_t now, usec_t refresh, FILE *f)
{
        int64_t na, left;
        char buf[64];
        int r;

        r = pki_asn1_time_to_sec(X509_get0_notAfter(x), &na);
        if (r < 0) {
                (void) fputs("cannot parse notAfter", f);
                return PKI_UNPARSEABLE;
        }
        left = na - pki_usec_to_sec(now);
        if (left <= 0) {
                (void) fprintf(f, "expired at %s", pki_format_sec(buf, sizeof buf, na));
                return PKI_EXPIRED;
        }
        if ((uint64_t) left < refresh / USEC_PER_SEC) {
                (void) fprintf(f, "expires at %s, %lld day(s) left, inside the %llu-day refresh window",
                               pki_format_sec(buf, sizeof buf, na), (long long) (left / 86400),
                               (unsigned long long) (refresh / PKI_USEC_PER_DAY));
                return PKI_EXPIRING;
        }
        (void) fprintf(f, "valid until %s", pki_format_sec(buf, sizeof buf, na));
        return PKI_VALID;
}

static int check_all(const char *cert_pem, const char *key_pem, const PkiCheck *c, usec_t now, FILE *f)
{
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_(X509_freep) X509 *x = NULL;
        int r;

        r = pki_cert_from_pem(cert_pem, &x);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                (void) fputs(r == -E2BIG ? "certificate too large" : "cannot parse the certificate", f);
                return PKI_UNPARSEABLE;
        }
        if (key_pem) {
                r = pki_key_from_pem(key_pem, &key);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        (void) fputs("cannot parse the private key", f);
                        return PKI_UNPARSEABLE;
                }
                if (X509_check_private_key(x, key) != 1) {
                        ERR_clear_error();
                        (void) fputs("the private key does not match the certificate", f);
                        return PKI_KEY_MISMATCH;
                }
        }
        if (c && c->ca_pem) {
                r = check_signer(x, c->ca_pem, f);
                if (r != PKI_VALID)
                        return r;
        }
        if (c && (c->dns || c->ips)) {
                r = check_sans(x, c, f);
                if (r != PKI_VALID)
                        return r;
        }
        return check_expiry(x, now, c ? c->refresh : 0, f);
}

int pki_cert_check(const char *cert_pem, const char *key_pem, const PkiCheck *check, usec_t now,
                   char **ret_reason)
{
        PKI_ERR_GUARD;
        /* reason before f: the stream is closed (and writes it) before it is freed. */
        _cleanup_free_ char *reason = NULL;
        _cleanup_(fclosep) FILE *f = NULL;
        size_t len = 0;
        int r;

        assert_return(cert_pem, -EINVAL);
        if (check)
                for (const char *const *p = check->ips; p && *p; p++) {
                        unsigned char a[16];
                        size_t n;

                        assert_return(pki_ip_parse(*p, a, &n) >= 0, -EINVAL);
                }
        f = open_memstream(&reason, &len);
        if (!f)
                return -ENOMEM;
        r = check_all(cert_pem, key_pem, check, now, f);
        if (r < 0)
                return r;
        if (fclose(TAKE_PTR(f)) != 0)
                return -ENOMEM;
        if (ret_reason)
                *ret_reason = TAKE_PTR(reason);
        return r;
}

static int verify_status(X509_STORE_CTX *ctx, char **ret_reason)
{
        int err = X509_STORE_CTX_get_error(ctx), depth = X509_STORE_CTX_get_error_depth(ctx), status;
        X509 *at = X509_STORE_CTX_get_current_cert(ctx);
        char subject[256] = "?";

        switch (err) {
        case X509_V_ERR_OUT_OF_MEM:
                return -ENOMEM;
        case X509_V_ERR_CERT_HAS_EXPIRED:
        case X509_V_ERR_CERT_NOT_YET_VALID:
                status = PKI_EXPIRED;
                break;
        case X509_V_ERR_INVALID_PURPOSE:
                status = PKI_WRONG_PURPOSE;
                break;
        default:
                status = PKI_WRONG_SIGNER;
        }
        if (at)
                (void) X509_NAME_oneline(X509_get_subject_name(at), subject, sizeof subject);
        ERR_clear_error();
        if (ret_reason) {
                char *r = strdup_printf("%s at depth %d (%s)", X509_verify_cert_error_string(err), depth,
                                        subject);
                if (!r)
                        return -ENOMEM;
                *ret_reason = r;
        }
        return status;
}

int pki_verify_chain(const char *leaf_pem, const char *bundle_pem, PkiPurpose purpose, usec_t now,
                     char **ret_reason)
{
        PKI_ERR_GUARD;
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *chain = NULL, *roots = NULL;
        /* Declared before ctx, so freed after it. */
        _cleanup_(X509_freep) X509 *leaf = NULL;
        _cleanup_(X509_STORE_CTX_freep) X509_STORE_CTX *ctx = NULL;
        _cleanup_(X509_STORE_freep) X509_STORE *store = NULL;
        static const int purposes[_PKI_PURPOSE_MAX] = {
                [PKI_PURPOSE_ANY] = 0,
                [PKI_PURPOSE_SERVER] = X509_PURPOSE_SSL_SERVER,
                [PKI_PURPOSE_CLIENT] = X509_PURPOSE_SSL_CLIENT,
        };
        int r;

        assert_return(leaf_pem && bundle_pem, -EINVAL);
        assert_return(purpose >= 0 && purpose < _PKI_PURPOSE_MAX, -EINVAL);

        r = pki_certs_from_pem(leaf_pem, &chain);
        if (r < 0)
                return r == -ENODATA ? -EBADMSG : r;
        r = pki_certs_from_pem(bundle_pem, &roots);
        if (r < 0)
                return r == -ENODATA ? -EBADMSG : r;
        store = X509_STORE_new();
        ctx = X509_STORE_CTX_new();
        if (!store || !ctx)
                return pki_openssl_error(-ENOMEM, "X509_STORE_new");
        for (int i = 0; i < sk_X509_num(roots); i++)
                if (X509_STORE_add_cert(store, sk_X509_value(roots, i)) != 1)
                        return pki_openssl_error(-ENOMEM, "X509_STORE_add_cert");

        leaf = sk_X509_shift(chain);
        int ok = X509_STORE_CTX_init(ctx, store, leaf, chain);
        if (ok == 1) {
                X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);

                X509_VERIFY_PARAM_set_time(param, (time_t) pki_usec_to_sec(now));
                if (purposes[purpose] != 0)
                        ok = X509_VERIFY_PARAM_set_purpose(param, purposes[purpose]);
        }
        if (ok != 1)
                return pki_openssl_error(-ENOMEM, "X509_STORE_CTX_init");
        ok = X509_verify_cert(ctx);
        if (ok < 0)
                return pki_openssl_error(-EIO, "X509_verify_cert");
        if (ok == 0)
                return verify_status(ctx, ret_reason);
        ERR_clear_error();
        if (ret_reason && !(*ret_reason = strdup("verified")))
                return -ENOMEM;
        return PKI_VALID;
}
