/* Issuing: self-signed signers and the server/client/peer certificates
 * they sign, with the extensions upstream's certificates carry.
 * SANs are built as GENERAL_NAMEs, never through OpenSSL's config-string
 * syntax, so a name cannot smuggle in extra entries. */
#include <openssl/err.h>
#include <openssl/rand.h>

#include "pki-internal.h"

/* Clock skew allowance between us and whoever checks the certificate. */
#define PKI_BACKDATE_SEC 60

static int set_serial(X509 *x)
{
        _cleanup_(BN_freep) BIGNUM *bn = NULL;
        unsigned char b[16];

        if (RAND_bytes(b, sizeof b) != 1)
                return pki_openssl_error(-EIO, "RAND_bytes");
        b[0] &= 0x7f; /* positive, and DER never needs a leading zero byte */
        b[0] |= 0x40; /* never a short (or zero) serial */
        bn = BN_bin2bn(b, sizeof b, NULL);
        if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
                return pki_openssl_error(-ENOMEM, "serial");
        return 0;
}

static int set_validity(X509 *x, usec_t validity, usec_t now)
{
        int64_t start = pki_usec_to_sec(now), secs = pki_usec_to_sec(validity);

        /* Beyond year 9999 there is no ASN1_TIME for it. */
        if (secs <= 0 || secs > INT64_C(253402300799) - start)
                return -ERANGE;
        if (!ASN1_TIME_set(X509_getm_notBefore(x), (time_t) MAX(start - PKI_BACKDATE_SEC, 0)) ||
            !ASN1_TIME_set(X509_getm_notAfter(x), (time_t) (start + secs)))
                return pki_openssl_error(-ERANGE, "ASN1_TIME_set");
        return 0;
}

/* `same_rdn`: into the RDN added last (one multi-valued RDN, as Go's crypto/x509 encodes two
 * values of one attribute), else an RDN of its own. */
static int add_name_entry_to(X509_NAME *n, int nid, const char *value, bool same_rdn)
{
        if (!value)
                return 0;
        if (!*value)
                return -EINVAL;
        /* Length limits (CN at most 64) are enforced here. */
        if (X509_NAME_add_entry_by_NID(n, nid, MBSTRING_UTF8, (const unsigned char *) value, -1, -1,
                                       same_rdn ? -1 : 0) != 1)
                return pki_openssl_error(-EINVAL, "X509_NAME_add_entry_by_NID");
        return 0;
}

static int add_name_entry(X509_NAME *n, int nid, const char *value)
{
        return add_name_entry_to(n, nid, value, false);
}

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
        _cleanup_(X509_EXTENSION_freep) X509_EXTENSION *e = NULL;

        e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
        if (!e || X509_add_ext(x, e, -1) != 1)
                return pki_openssl_error(-EIO, "X509V3_EXT_conf_nid");
        return 0;
}

bool pki_san_dns_name_is_valid(const char *s)
{
        if (!s || !*s || strlen(s) > 253)
                return false;
        for (const char *p = s; *p; p++)
                if (*p <= ' ' || *p > '~' || *p == ',')
                        return false;
        return true;
}

static int push_name(GENERAL_NAMES *names, int type, const void *data, size_t len)
{
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_STRING *s = NULL;

        if (!g)
                return -ENOMEM;
        s = type == GEN_DNS ? ASN1_IA5STRING_new() : ASN1_OCTET_STRING_new();
        if (!s || ASN1_STRING_set(s, data, (int) len) != 1) {
                ASN1_STRING_free(s);
                GENERAL_NAME_free(g);
                return -ENOMEM;
        }
        GENERAL_NAME_set0_value(g, type, s);
        if (sk_GENERAL_NAME_push(names, g) <= 0) {
                GENERAL_NAME_free(g);
                return -ENOMEM;
        }
        return 0;
}

static int add_sans(X509 *x, const char *const *dns, const char *const *ips)
{
        _cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *names = NULL;
        int r;

        if ((!dns || !*dns) && (!ips || !*ips))
                return 0;
        names = sk_GENERAL_NAME_new_null();
        if (!names)
                return -ENOMEM;
        for (const char *const *d = dns; d && *d; d++) {
                if (!pki_san_dns_name_is_valid(*d))
                        return -EINVAL;
                r = push_name(names, GEN_DNS, *d, strlen(*d));
                if (r < 0)
                        return r;
        }
        for (const char *const *i = ips; i && *i; i++) {
                unsigned char a[16];
                size_t n;

                r = pki_ip_parse(*i, a, &n);
                if (r < 0)
                        return r;
                r = push_name(names, GEN_IPADD, a, n);
                if (r < 0)
                        return r;
        }
        if (X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) != 1)
                return pki_openssl_error(-ENOMEM, "subjectAltName");
        return 0;
}

/* The parts every certificate shares: version, serial, validity, subject, key. */
static int cert_skeleton(const char *cn, const char *org, const char *org2, EVP_PKEY *key, usec_t validity,
                         usec_t now, X509 **ret)
{
        _cleanup_(X509_freep) X509 *x = NULL;
        int r;

        x = X509_new();
        if (!x)
                return -ENOMEM;
        if (X509_set_version(x, X509_VERSION_3) != 1)
                return pki_openssl_error(-ENOMEM, "X509_set_version");
        r = set_serial(x);
        if (r < 0)
                return r;
        r = set_validity(x, validity, now);
        if (r < 0)
                return r;
        r = add_name_entry(X509_get_subject_name(x), NID_organizationName, org);
        if (r < 0)
                return r;
        r = add_name_entry_to(X509_get_subject_name(x), NID_organizationName, org2, org != NULL);
        if (r < 0)
                return r;
        r = add_name_entry(X509_get_subject_name(x), NID_commonName, cn);
        if (r < 0)
                return r;
        if (X509_set_pubkey(x, key) != 1)
                return pki_openssl_error(-EINVAL, "X509_set_pubkey");
        *ret = TAKE_PTR(x);
        return 0;
}

static int sign(X509 *x, EVP_PKEY *key)
{
        const EVP_MD *md = NULL;
        int r;

        r = pki_key_digest(key, &md);
        if (r < 0)
                return r;
        if (X509_sign(x, key, md) <= 0)
                return pki_openssl_error(-EIO, "X509_sign");
        return 0;
}

static int pair_new(X509 **cert, EVP_PKEY *key, PkiPair **ret)
{
        PkiPair *p = calloc(1, sizeof *p);

        if (!p)
                return -ENOMEM;
        if (EVP_PKEY_up_ref(key) != 1) {
                free(p);
                return pki_openssl_error(-ENOMEM, "EVP_PKEY_up_ref");
        }
        p->key = key;
        p->cert = TAKE_PTR(*cert);
        *ret = p;
        return 0;
}

int pki_ca_new_with_key(const char *cn, usec_t validity, EVP_PKEY *key, usec_t now, PkiPair **ret)
{
        PKI_ERR_GUARD;
        _cleanup_(X509_freep) X509 *x = NULL;
        X509V3_CTX ctx;
        int r;

        assert_return(cn && key && ret, -EINVAL);
        r = cert_skeleton(cn, NULL, NULL, key, validity, now, &x);
        if (r < 0)
                return r;
        if (X509_set_issuer_name(x, X509_get_subject_name(x)) != 1)
                return pki_openssl_error(-ENOMEM, "X509_set_issuer_name");

        X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
        r = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE");
        if (r < 0)
                return r;
        r = add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign");
        if (r < 0)
                return r;
        r = add_ext(x, &ctx, NID_subject_key_identifier, "hash");
        if (r < 0)
                return r;
        /* With issuer == subject this copies the identifier added just above. */
        r = add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always");
        if (r < 0)
                return r;
        r = sign(x, key);
        if (r < 0)
                return r;
        return pair_new(&x, key, ret);
}

int pki_ca_new(const char *cn, usec_t validity, PkiKeyType type, usec_t now, PkiPair **ret)
{
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        int r;

        assert_return(cn && ret, -EINVAL);
        r = pki_key_new(type, &key);
        if (r < 0)
                return r;
        return pki_ca_new_with_key(cn, validity, key, now, ret);
}

static const char *profile_eku(PkiProfile p)
{
        switch (p) {
        case PKI_PROFILE_SERVER:
                return "serverAuth";
        case PKI_PROFILE_CLIENT:
                return "clientAuth";
        case PKI_PROFILE_SERVER_CLIENT:
                return "serverAuth,clientAuth";
        default:
                return NULL;
        }
}

int pki_cert_issue(const PkiPair *ca, const PkiCertRequest *req, usec_t now, PkiPair **ret)
{
        PKI_ERR_GUARD;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_(X509_freep) X509 *x = NULL;
        X509V3_CTX ctx;
        int r;

        assert_return(ca && ca->cert && ca->key, -EINVAL);
        assert_return(req && req->cn && ret, -EINVAL);
        assert_return(profile_eku(req->profile), -EINVAL);

        /* A leaf passed as signer would issue certificates nobody accepts. */
        if (!(X509_get_extension_flags(ca->cert) & EXFLAG_CA))
                return -EINVAL;
        if (X509_check_private_key(ca->cert, ca->key) != 1)
                return pki_openssl_error(-EKEYREJECTED, "CA key does not match");
        if (req->key) {
                if (EVP_PKEY_up_ref(req->key) != 1)
                        return pki_openssl_error(-ENOMEM, "EVP_PKEY_up_ref");
                key = req->key;
        } else {
                r = pki_key_new(req->key_type, &key);
                if (r < 0)
                        return r;
        }

        r = cert_skeleton(req->cn, req->org, req->org2, key, req->validity, now, &x);
        if (r < 0)
                return r;
        if (X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1)
                return pki_openssl_error(-ENOMEM, "X509_set_issuer_name");

        X509V3_set_ctx(&ctx, ca->cert, x, NULL, NULL, 0);
        r = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE");
        if (r < 0)
                return r;
        /* keyEncipherment only means something for RSA key transport. */
        r = add_ext(x, &ctx, NID_key_usage,
                    EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA ? "critical,digitalSignature,keyEncipherment"
                                                              : "critical,digitalSignature");
        if (r < 0)
                return r;
        r = add_ext(x, &ctx, NID_ext_key_usage, profile_eku(req->profile));
        if (r < 0)
                return r;
        r = add_ext(x, &ctx, NID_subject_key_identifier, "hash");
        if (r < 0)
                return r;
        r = add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always");
        if (r < 0)
                return r;
        r = add_sans(x, req->dns, req->ips);
        if (r < 0)
                return r;
        r = sign(x, ca->key);
        if (r < 0)
                return r;
        return pair_new(&x, key, ret);
}
