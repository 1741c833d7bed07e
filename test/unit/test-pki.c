/* Unit tests for operator/pki: keys, issuing, inspection, verdicts, chain
 * verification, bundles, files, the offload helper, and a cross-check of
 * what we issue with the independent `openssl` command line tool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/fileio.h"
#include "pki/check-memo.h"
#include "pki/keypool.h"
#include "pki/offload.h"
#include "pki/pki.h"

#define NOW ((usec_t) 1735689600ULL * USEC_PER_SEC) /* 2025-01-01T00:00:00Z */
#define DAY PKI_USEC_PER_DAY

static const char *const NODE_DNS[] = {
        "localhost",
        "etcd.kube-system.svc",
        "etcd.kube-system.svc.cluster.local",
        "etcd.openshift-etcd.svc",
        "etcd.openshift-etcd.svc.cluster.local",
        NULL,
};
static const char *const NODE_IPS[] = {"127.0.0.1", "::1", "10.0.0.5", "fd00:1::5", NULL};

typedef struct Fixture {
        PkiPair *ca_rsa, *ca_ec, *foreign;
        char *ca_rsa_pem, *ca_ec_pem, *foreign_pem;
} Fixture;

static int setup(void **state)
{
        Fixture *f = calloc(1, sizeof *f);

        assert_non_null(f);
        assert_int_equal(pki_ca_new("openshift-etcd_etcd-signer@1735689600", PKI_SIGNER_VALIDITY,
                                    PKI_KEY_RSA_2048, NOW, &f->ca_rsa),
                         0);
        assert_int_equal(pki_ca_new("openshift-etcd_etcd-metric-signer@1735689600", PKI_SIGNER_VALIDITY,
                                    PKI_KEY_ECDSA_P256, NOW, &f->ca_ec),
                         0);
        assert_int_equal(
                pki_ca_new("foreign-signer", PKI_SIGNER_VALIDITY, PKI_KEY_ECDSA_P256, NOW, &f->foreign), 0);
        assert_int_equal(pki_cert_to_pem(f->ca_rsa->cert, &f->ca_rsa_pem), 0);
        assert_int_equal(pki_cert_to_pem(f->ca_ec->cert, &f->ca_ec_pem), 0);
        assert_int_equal(pki_cert_to_pem(f->foreign->cert, &f->foreign_pem), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        Fixture *f = *state;

        pki_pair_free(f->ca_rsa);
        pki_pair_free(f->ca_ec);
        pki_pair_free(f->foreign);
        free(f->ca_rsa_pem);
        free(f->ca_ec_pem);
        free(f->foreign_pem);
        free(f);
        /* Nothing may be left on this thread's OpenSSL error queue. */
        assert_int_equal(ERR_peek_error(), 0);
        return 0;
}

static PkiPair *issue(const PkiPair *ca, PkiProfile profile, PkiKeyType type, usec_t validity, usec_t now)
{
        PkiCertRequest req = {
                .profile = profile,
                .cn = profile == PKI_PROFILE_CLIENT ? "etcd-client" : "system:etcd-peer:master-0",
                .org = "system:etcd",
                .dns = profile == PKI_PROFILE_CLIENT ? NULL : NODE_DNS,
                .ips = profile == PKI_PROFILE_CLIENT ? NULL : NODE_IPS,
                .validity = validity,
                .key_type = type,
        };
        PkiPair *p = NULL;

        assert_int_equal(pki_cert_issue(ca, &req, now, &p), 0);
        assert_non_null(p);
        return p;
}

static size_t strv_len(char *const *v)
{
        size_t n = 0;

        while (v && v[n])
                n++;
        return n;
}

static bool ext_critical(X509 *x, int nid)
{
        int i = X509_get_ext_by_NID(x, nid, -1);

        assert_true(i >= 0);
        return X509_EXTENSION_get_critical(X509_get_ext(x, i)) == 1;
}

static void test_enums(void **state)
{
        assert_string_equal(pki_status_to_string(PKI_WRONG_SANS), "wrong-sans");
        assert_string_equal(pki_status_to_string(PKI_UNPARSEABLE), "unparseable");
        assert_null(pki_status_to_string(_PKI_STATUS_MAX));
        assert_null(pki_status_to_string(_PKI_STATUS_INVALID));
        assert_int_equal(pki_key_type_from_string("ecdsa-p256"), PKI_KEY_ECDSA_P256);
        assert_int_equal(pki_key_type_from_string("rsa2048"), PKI_KEY_RSA_2048);
        assert_int_equal(pki_key_type_from_string("dsa"), -EINVAL);
        assert_string_equal(pki_key_type_to_string(PKI_KEY_RSA_2048), "rsa2048");
}

static void test_keys(void **state)
{
        for (PkiKeyType t = 0; t < _PKI_KEY_TYPE_MAX; t++) {
                _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL, *back = NULL, *trad_back = NULL;
                _cleanup_free_ char *pem = NULL, *trad = NULL;
                _cleanup_(BIO_free_allp) BIO *b = BIO_new(BIO_s_mem());

                assert_int_equal(pki_key_new(t, &k), 0);
                assert_int_equal(pki_key_get_type(k), t);
                assert_int_equal(pki_key_to_pem(k, &pem), 0);
                assert_true(startswith(pem, "-----BEGIN PRIVATE KEY-----\n"));
                assert_int_equal(pki_key_from_pem(pem, &back), 0);
                assert_int_equal(EVP_PKEY_eq(k, back), 1);

                /* The traditional forms older installers wrote. */
                assert_int_equal(PEM_write_bio_PrivateKey_traditional(b, k, NULL, NULL, 0, NULL, NULL), 1);
                char *data = NULL;
                long n = BIO_get_mem_data(b, &data);
                trad = strndup(data, (size_t) n);
                assert_true(startswith(trad, t == PKI_KEY_RSA_2048 ? "-----BEGIN RSA PRIVATE KEY-----"
                                                                   : "-----BEGIN EC PRIVATE KEY-----"));
                assert_int_equal(pki_key_from_pem(trad, &trad_back), 0);
                assert_int_equal(EVP_PKEY_eq(k, trad_back), 1);
        }

        /* Encrypted keys fail instead of prompting for a passphrase. */
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL, *out = NULL;
        _cleanup_(BIO_free_allp) BIO *b = BIO_new(BIO_s_mem());
        _cleanup_free_ char *enc = NULL;
        char *data = NULL;
        assert_int_equal(pki_key_new(PKI_KEY_ECDSA_P256, &k), 0);
        assert_int_equal(PEM_write_bio_PKCS8PrivateKey(b, k, EVP_aes_256_cbc(), "secret", 6, NULL, NULL), 1);
        long len = BIO_get_mem_data(b, &data);
        enc = strndup(data, (size_t) len);
        assert_true(startswith(enc, "-----BEGIN ENCRYPTED PRIVATE KEY-----"));
        assert_int_equal(pki_key_from_pem(enc, &out), -EBADMSG);
        assert_int_equal(pki_key_from_pem("garbage", &out), -EBADMSG);
        assert_int_equal(pki_key_from_pem("", &out), -EBADMSG);
        assert_int_equal(
                pki_key_from_pem("-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n", &out),
                -EBADMSG);
        assert_null(out);
        assert_int_equal(pki_key_new(_PKI_KEY_TYPE_MAX, &out), -EINVAL);
        assert_int_equal(pki_key_get_type(NULL), -EINVAL);

        /* Over the bound is -E2BIG, not an allocation. */
        _cleanup_free_ char *big = malloc(PKI_PEM_MAX + 2);
        memset(big, 'A', PKI_PEM_MAX + 1);
        big[PKI_PEM_MAX + 1] = 0;
        assert_int_equal(pki_key_from_pem(big, &out), -E2BIG);
        X509 *x = NULL;
        assert_int_equal(pki_cert_from_pem(big, &x), -E2BIG);
        assert_int_equal(ERR_peek_error(), 0);
}

static void test_ca(void **state)
{
        Fixture *f = *state;
        const struct {
                PkiPair *ca;
                PkiKeyType type;
                int bits, sig;
        } cases[] = {
                {f->ca_rsa, PKI_KEY_RSA_2048, 2048, NID_sha256WithRSAEncryption},
                {f->ca_ec, PKI_KEY_ECDSA_P256, 256, NID_ecdsa_with_SHA256},
        };

        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                _cleanup_(pki_cert_info_freep) PkiCertInfo *i = NULL;
                X509 *x = cases[c].ca->cert;

                assert_int_equal(pki_cert_get_info(x, &i), 0);
                assert_true(startswith(i->subject_cn, "openshift-etcd_etcd-"));
                assert_string_equal(i->subject_cn, i->issuer_cn);
                assert_string_equal(i->subject, i->issuer);
                assert_null(i->subject_o);
                assert_true(i->is_ca);
                assert_true(i->self_signed);
                assert_int_equal(i->key_usage, KU_DIGITAL_SIGNATURE | KU_KEY_CERT_SIGN | KU_CRL_SIGN);
                assert_int_equal(i->ext_key_usage, UINT32_MAX);
                assert_int_equal(i->key_type, cases[c].type);
                assert_int_equal(i->key_bits, cases[c].bits);
                assert_int_equal(i->not_before, NOW - 60 * USEC_PER_SEC);
                assert_int_equal(i->not_after, NOW + PKI_SIGNER_VALIDITY);
                assert_int_equal(strv_len(i->dns) + strv_len(i->ips), 0);
                /* 128 random bits with the top bits fixed: 127 significant bits. */
                assert_int_equal(strlen(i->serial), 32);
                assert_int_equal(X509_get_signature_nid(x), cases[c].sig);
                assert_int_equal(X509_get_version(x), X509_VERSION_3);
                assert_true(ext_critical(x, NID_basic_constraints));
                assert_true(ext_critical(x, NID_key_usage));
                assert_false(ext_critical(x, NID_subject_key_identifier));
                assert_non_null(X509_get0_subject_key_id(x));
                assert_int_equal(
                        ASN1_OCTET_STRING_cmp(X509_get0_subject_key_id(x), X509_get0_authority_key_id(x)),
                        0);
        }
        _cleanup_(pki_cert_info_freep) PkiCertInfo *a = NULL, *b = NULL;
        assert_int_equal(pki_cert_get_info(f->ca_rsa->cert, &a), 0);
        assert_int_equal(pki_cert_get_info(f->ca_ec->cert, &b), 0);
        assert_string_not_equal(a->serial, b->serial);

        PkiPair *p = NULL;
        assert_int_equal(pki_ca_new("x", 0, PKI_KEY_ECDSA_P256, NOW, &p), -ERANGE);
        assert_int_equal(pki_ca_new("x", 9000ULL * 365 * DAY, PKI_KEY_ECDSA_P256, NOW, &p), -ERANGE);
        assert_int_equal(pki_ca_new(NULL, DAY, PKI_KEY_ECDSA_P256, NOW, &p), -EINVAL);
        assert_int_equal(pki_ca_new("x", DAY, _PKI_KEY_TYPE_MAX, NOW, &p), -EINVAL);
        assert_null(p);
        assert_int_equal(ERR_peek_error(), 0);
}

static void check_leaf(const PkiPair *ca, const PkiPair *leaf, PkiProfile profile, PkiKeyType type)
{
        _cleanup_(pki_cert_info_freep) PkiCertInfo *i = NULL, *cai = NULL;
        X509 *x = leaf->cert;
        uint32_t ku =
                type == PKI_KEY_RSA_2048 ? KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT : KU_DIGITAL_SIGNATURE;
        uint32_t eku = profile == PKI_PROFILE_SERVER   ? XKU_SSL_SERVER
                       : profile == PKI_PROFILE_CLIENT ? XKU_SSL_CLIENT
                                                       : XKU_SSL_SERVER | XKU_SSL_CLIENT;

        assert_int_equal(pki_cert_get_info(x, &i), 0);
        assert_int_equal(pki_cert_get_info(ca->cert, &cai), 0);
        assert_string_equal(i->subject_o, "system:etcd");
        assert_string_equal(i->issuer, cai->subject);
        assert_string_equal(i->issuer_cn, cai->subject_cn);
        assert_false(i->is_ca);
        assert_false(i->self_signed);
        assert_int_equal(i->key_usage, ku);
        assert_int_equal(i->ext_key_usage, eku);
        assert_int_equal(i->key_type, type);
        assert_int_equal(i->not_before, NOW - 60 * USEC_PER_SEC);
        assert_int_equal(i->not_after, NOW + PKI_LEAF_VALIDITY);
        assert_true(ext_critical(x, NID_basic_constraints));
        assert_true(ext_critical(x, NID_key_usage));
        assert_false(ext_critical(x, NID_ext_key_usage));
        assert_int_equal(
                ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(x), X509_get0_subject_key_id(ca->cert)), 0);
        assert_int_equal(X509_check_private_key(x, leaf->key), 1);
        assert_int_equal(X509_verify(x, X509_get0_pubkey(ca->cert)), 1);
        if (profile == PKI_PROFILE_CLIENT) {
                assert_string_equal(i->subject_cn, "etcd-client");
                assert_int_equal(strv_len(i->dns) + strv_len(i->ips), 0);
                assert_int_equal(X509_get_ext_by_NID(x, NID_subject_alt_name, -1), -1);
                return;
        }
        assert_string_equal(i->subject_cn, "system:etcd-peer:master-0");
        assert_int_equal(strv_len(i->dns), ELEMENTSOF(NODE_DNS) - 1);
        for (size_t k = 0; NODE_DNS[k]; k++)
                assert_string_equal(i->dns[k], NODE_DNS[k]);
        assert_int_equal(strv_len(i->ips), 4);
        assert_string_equal(i->ips[0], "127.0.0.1");
        assert_string_equal(i->ips[1], "::1");
        assert_string_equal(i->ips[2], "10.0.0.5");
        assert_string_equal(i->ips[3], "fd00:1::5");
        assert_false(ext_critical(x, NID_subject_alt_name));
        /* OpenSSL's own host and address matching agrees. */
        assert_int_equal(X509_check_host(x, "etcd.openshift-etcd.svc", 0, 0, NULL), 1);
        assert_int_equal(X509_check_host(x, "etcd.example.com", 0, 0, NULL), 0);
        assert_int_equal(X509_check_ip_asc(x, "10.0.0.5", 0), 1);
        assert_int_equal(X509_check_ip_asc(x, "0:0::1", 0), 1);
        assert_int_equal(X509_check_ip_asc(x, "10.0.0.6", 0), 0);
}

static void test_issue_profiles(void **state)
{
        Fixture *f = *state;
        const PkiPair *cas[] = {f->ca_rsa, f->ca_ec};
        const char *ca_pems[] = {f->ca_rsa_pem, f->ca_ec_pem};

        for (size_t c = 0; c < ELEMENTSOF(cas); c++)
                for (PkiProfile p = 0; p < _PKI_PROFILE_MAX; p++) {
                        /* RSA leaf keys only once: they are slow under sanitizers. */
                        PkiKeyType t = (c == 0 && p == PKI_PROFILE_SERVER_CLIENT) ? PKI_KEY_RSA_2048
                                                                                  : PKI_KEY_ECDSA_P256;
                        _cleanup_(pki_pair_freep) PkiPair *leaf =
                                issue(cas[c], p, t, PKI_LEAF_VALIDITY, NOW);
                        _cleanup_free_ char *pem = NULL, *reason = NULL;

                        check_leaf(cas[c], leaf, p, t);
                        assert_int_equal(pki_cert_to_pem(leaf->cert, &pem), 0);
                        PkiPurpose purpose =
                                p == PKI_PROFILE_CLIENT ? PKI_PURPOSE_CLIENT : PKI_PURPOSE_SERVER;
                        assert_int_equal(pki_verify_chain(pem, ca_pems[c], purpose, NOW, &reason),
                                         PKI_VALID);
                }
}

/* What a DNS SAN may hold: printable text, not a host name rule (base/names.h). */
static void test_san_dns_names(void **state)
{
        static const char *const good[] = {
                "a",
                "localhost",
                "etcd.openshift-etcd.svc.cluster.local",
                "*.apps.example.com", /* wildcards are the caller's choice */
                "Master-0.Example.COM",
                "under_score",
                "a.",
                "-a-",
                "a..b",
        };
        static const char *const bad[] = {
                "",     "a.example.com,IP:1.2.3.4", /* one name passing for two */
                "a b",  " a",
                "a\n",  "a\t",
                "\x7f", "\xc3\xa9.example",
        };
        char name[300];

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!pki_san_dns_name_is_valid(good[i]))
                        fail_msg("rejected \"%s\"", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (pki_san_dns_name_is_valid(bad[i]))
                        fail_msg("accepted \"%s\"", bad[i]);
        assert_false(pki_san_dns_name_is_valid(NULL));

        /* 253 characters in all, not 254; a label's length is not its business. */
        memset(name, 'a', sizeof name);
        name[253] = 0;
        assert_true(pki_san_dns_name_is_valid(name));
        name[253] = 'a';
        name[254] = 0;
        assert_false(pki_san_dns_name_is_valid(name));
}

static void test_issue_errors(void **state)
{
        Fixture *f = *state;
        PkiCertRequest req = {
                .profile = PKI_PROFILE_SERVER,
                .cn = "x",
                .validity = DAY,
                .key_type = PKI_KEY_ECDSA_P256,
        };
        const char *const bad_ip[] = {"10.0.0.300", NULL};
        const char *const bad_dns[] = {"a.example.com,IP:1.2.3.4", NULL};
        const char *const empty_dns[] = {"", NULL};
        PkiPair *p = NULL;

        req.ips = bad_ip;
        assert_int_equal(pki_cert_issue(f->ca_ec, &req, NOW, &p), -EINVAL);
        req.ips = NULL;
        req.dns = bad_dns;
        assert_int_equal(pki_cert_issue(f->ca_ec, &req, NOW, &p), -EINVAL);
        req.dns = empty_dns;
        assert_int_equal(pki_cert_issue(f->ca_ec, &req, NOW, &p), -EINVAL);
        req.dns = NULL;
        req.cn = "a-common-name-that-is-longer-than-the-sixty-four-characters-x509-allows";
        assert_int_equal(pki_cert_issue(f->ca_ec, &req, NOW, &p), -EINVAL);
        req.cn = "x";
        req.org = "";
        assert_int_equal(pki_cert_issue(f->ca_ec, &req, NOW, &p), -EINVAL);
        req.org = NULL;
        req.profile = _PKI_PROFILE_MAX;
        assert_int_equal(pki_cert_issue(f->ca_ec, &req, NOW, &p), -EINVAL);
        req.profile = PKI_PROFILE_SERVER;
        req.validity = 0;
        assert_int_equal(pki_cert_issue(f->ca_ec, &req, NOW, &p), -ERANGE);
        req.validity = DAY;
        /* A signer whose key does not belong to its certificate. */
        PkiPair mixed = {.cert = f->ca_ec->cert, .key = f->foreign->key};
        assert_int_equal(pki_cert_issue(&mixed, &req, NOW, &p), -EKEYREJECTED);
        /* A leaf is no signer. */
        _cleanup_(pki_pair_freep) PkiPair *not_ca =
                issue(f->ca_ec, PKI_PROFILE_CLIENT, PKI_KEY_ECDSA_P256, DAY, NOW);
        assert_int_equal(pki_cert_issue(not_ca, &req, NOW, &p), -EINVAL);
        assert_null(p);

        /* A pre-generated key is used (and not consumed). */
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        _cleanup_(pki_pair_freep) PkiPair *leaf = NULL, *ca = NULL;
        assert_int_equal(pki_key_new(PKI_KEY_ECDSA_P256, &k), 0);
        req.key = k;
        assert_int_equal(pki_cert_issue(f->ca_ec, &req, NOW, &leaf), 0);
        assert_int_equal(EVP_PKEY_eq(leaf->key, k), 1);
        assert_int_equal(pki_ca_new_with_key("with-key", DAY, k, NOW, &ca), 0);
        assert_int_equal(EVP_PKEY_eq(ca->key, k), 1);
        assert_int_equal(ERR_peek_error(), 0);
}

static void test_pem_roundtrip(void **state)
{
        Fixture *f = *state;
        _cleanup_(pki_pair_freep) PkiPair *leaf =
                issue(f->ca_ec, PKI_PROFILE_SERVER, PKI_KEY_ECDSA_P256, PKI_LEAF_VALIDITY, NOW);
        _cleanup_(pki_pair_freep) PkiPair *back = NULL, *bad = NULL;
        _cleanup_free_ char *crt = NULL, *key = NULL, *crt2 = NULL, *two = NULL, *foreign_key = NULL;
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *sk = NULL;
        STACK_OF(X509) *none = NULL;
        X509 *x = NULL;

        assert_int_equal(pki_pair_to_pem(leaf, &crt, &key), 0);
        assert_true(startswith(crt, "-----BEGIN CERTIFICATE-----\n"));
        assert_int_equal(pki_pair_from_pem(crt, key, &back), 0);
        assert_int_equal(X509_cmp(back->cert, leaf->cert), 0);
        assert_int_equal(EVP_PKEY_eq(back->key, leaf->key), 1);
        assert_int_equal(pki_cert_to_pem(back->cert, &crt2), 0);
        assert_string_equal(crt, crt2);

        assert_int_equal(pki_key_to_pem(f->foreign->key, &foreign_key), 0);
        assert_int_equal(pki_pair_from_pem(crt, foreign_key, &bad), -EKEYREJECTED);
        assert_int_equal(pki_pair_from_pem("junk", key, &bad), -EBADMSG);
        assert_int_equal(pki_pair_from_pem(crt, "junk", &bad), -EBADMSG);
        assert_null(bad);

        /* Several certificates, with text around them as in real bundles. */
        two = strdup_printf("# signer\n%s\nsome comment\n%s", f->ca_rsa_pem, crt);
        assert_int_equal(pki_certs_from_pem(two, &sk), 0);
        assert_int_equal(sk_X509_num(sk), 2);
        assert_int_equal(X509_cmp(sk_X509_value(sk, 0), f->ca_rsa->cert), 0);
        assert_int_equal(X509_cmp(sk_X509_value(sk, 1), leaf->cert), 0);
        assert_int_equal(pki_certs_from_pem("", &none), -ENODATA);
        assert_int_equal(pki_certs_from_pem("no pem here\n", &none), -ENODATA);
        assert_int_equal(pki_certs_from_pem(key, &none), -ENODATA);
        /* A damaged block is an error, not the end of the bundle. */
        _cleanup_free_ char *damaged = strdup_printf("%s-----BEGIN CERTIFICATE-----\nAAAA\n"
                                                     "-----END CERTIFICATE-----\n",
                                                     crt);
        assert_int_equal(pki_certs_from_pem(damaged, &none), -EBADMSG);
        assert_null(none);
        assert_int_equal(pki_cert_from_pem("-----BEGIN CERTIFICATE-----\n", &x), -EBADMSG);
        /* An "encrypted" certificate fails instead of prompting on /dev/tty. */
        _cleanup_free_ char *enc =
                strdup_printf("-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n"
                              "DEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF\n\n%s",
                              crt + strlen("-----BEGIN CERTIFICATE-----\n"));
        assert_int_equal(pki_cert_from_pem(enc, &x), -EBADMSG);
        assert_int_equal(pki_certs_from_pem(enc, &none), -EBADMSG);
        assert_null(x);
        assert_int_equal(ERR_peek_error(), 0);
}

static char *check(const char *crt, const char *key, const PkiCheck *c, usec_t now, int expect)
{
        char *reason = NULL;

        assert_int_equal(pki_cert_check(crt, key, c, now, &reason), expect);
        assert_non_null(reason);
        return reason;
}

static void test_check_outcomes(void **state)
{
        Fixture *f = *state;
        _cleanup_(pki_pair_freep) PkiPair *leaf =
                issue(f->ca_ec, PKI_PROFILE_SERVER_CLIENT, PKI_KEY_ECDSA_P256, PKI_LEAF_VALIDITY, NOW);
        _cleanup_free_ char *crt = NULL, *key = NULL, *other_key = NULL, *both = NULL;
        PkiCheck c = {.ca_pem = f->ca_ec_pem,
                      .dns = NODE_DNS,
                      .ips = NODE_IPS,
                      .refresh = PKI_LEAF_REFRESH_WINDOW};
        usec_t expiry = NOW + PKI_LEAF_VALIDITY;
        char *r = NULL;

        assert_int_equal(pki_pair_to_pem(leaf, &crt, &key), 0);
        assert_int_equal(pki_key_to_pem(f->foreign->key, &other_key), 0);

        r = check(crt, key, &c, NOW, PKI_VALID);
        assert_string_equal(r, "valid until 2028-01-01T00:00:00Z");
        free(r);
        r = check(crt, key, &c, expiry - 100 * DAY, PKI_EXPIRING);
        assert_string_equal(r,
                            "expires at 2028-01-01T00:00:00Z, 100 day(s) left, inside the 292-day refresh "
                            "window");
        free(r);
        free(check(crt, key, &c, expiry - 293 * DAY, PKI_VALID));
        free(check(crt, key, &c, expiry, PKI_EXPIRED));
        r = check(crt, key, &c, expiry + DAY, PKI_EXPIRED);
        assert_string_equal(r, "expired at 2028-01-01T00:00:00Z");
        free(r);

        /* A node whose InternalIP changed, and one DNS name gone. */
        const char *const ips2[] = {"127.0.0.1", "::1", "10.0.0.6", "fd00:1::5", NULL};
        const char *const dns2[] = {"localhost", "etcd.kube-system.svc",
                                    "etcd.kube-system.svc.cluster.local", "etcd.openshift-etcd.svc", NULL};
        PkiCheck c2 = c;
        c2.ips = ips2;
        r = check(crt, key, &c2, NOW, PKI_WRONG_SANS);
        assert_string_equal(r, "missing IP SAN 10.0.0.6, unexpected IP SAN 10.0.0.5");
        free(r);
        c2.dns = dns2;
        c2.ips = NODE_IPS;
        r = check(crt, key, &c2, NOW, PKI_WRONG_SANS);
        assert_string_equal(r, "unexpected DNS SAN etcd.openshift-etcd.svc.cluster.local");
        free(r);
        /* Names compare case-insensitively, addresses by value, order does not matter. */
        const char *const dns3[] = {"etcd.openshift-etcd.svc.cluster.local",
                                    "LOCALHOST",
                                    "etcd.kube-system.svc",
                                    "etcd.kube-system.svc.cluster.local",
                                    "etcd.openshift-etcd.svc",
                                    NULL};
        const char *const ips3[] = {"fd00:1:0::5", "0:0:0:0:0:0:0:1", "10.0.0.5", "127.0.0.1", NULL};
        c2.dns = dns3;
        c2.ips = ips3;
        free(check(crt, key, &c2, NOW, PKI_VALID));
        /* A client certificate checked against node SANs lacks all of them. */
        _cleanup_(pki_pair_freep) PkiPair *client =
                issue(f->ca_ec, PKI_PROFILE_CLIENT, PKI_KEY_ECDSA_P256, PKI_LEAF_VALIDITY, NOW);
        _cleanup_free_ char *client_crt = NULL;
        assert_int_equal(pki_cert_to_pem(client->cert, &client_crt), 0);
        r = check(client_crt, NULL, &c, NOW, PKI_WRONG_SANS);
        assert_true(startswith(r, "missing DNS SAN localhost, missing DNS SAN etcd.kube-system.svc,"));
        assert_non_null(strstr(r, "missing IP SAN ::1"));
        free(r);

        PkiCheck c3 = c;
        c3.ca_pem = f->foreign_pem;
        r = check(crt, key, &c3, NOW, PKI_WRONG_SIGNER);
        assert_string_equal(r, "not signed by any of the 1 CA(s) in the bundle (issuer "
                               "/CN=openshift-etcd_etcd-metric-signer@1735689600)");
        free(r);
        /* During rotation the bundle holds old and new signers: either is fine. */
        both = strdup_printf("%s%s", f->foreign_pem, f->ca_ec_pem);
        c3.ca_pem = both;
        free(check(crt, key, &c3, NOW, PKI_VALID));
        /* Same subject name, different key: still the wrong signer. */
        _cleanup_(pki_pair_freep) PkiPair *impostor = NULL;
        _cleanup_free_ char *impostor_pem = NULL;
        assert_int_equal(pki_ca_new("openshift-etcd_etcd-metric-signer@1735689600", PKI_SIGNER_VALIDITY,
                                    PKI_KEY_ECDSA_P256, NOW, &impostor),
                         0);
        assert_int_equal(pki_cert_to_pem(impostor->cert, &impostor_pem), 0);
        c3.ca_pem = impostor_pem;
        free(check(crt, key, &c3, NOW, PKI_WRONG_SIGNER));

        r = check(crt, other_key, &c, NOW, PKI_KEY_MISMATCH);
        assert_string_equal(r, "the private key does not match the certificate");
        free(r);
        r = check("\x01garbage", key, &c, NOW, PKI_UNPARSEABLE);
        assert_string_equal(r, "cannot parse the certificate");
        free(r);
        r = check(crt, "garbage", &c, NOW, PKI_UNPARSEABLE);
        assert_string_equal(r, "cannot parse the private key");
        free(r);
        c3.ca_pem = "garbage";
        r = check(crt, key, &c3, NOW, PKI_UNPARSEABLE);
        assert_string_equal(r, "cannot parse the CA bundle");
        free(r);
        /* No expectations: only expiry is judged; the reason is optional. */
        assert_int_equal(pki_cert_check(crt, NULL, NULL, NOW, NULL), PKI_VALID);
        assert_int_equal(pki_cert_check(crt, NULL, NULL, expiry + 1, NULL), PKI_EXPIRED);

        const char *const bad_ips[] = {"not-an-ip", NULL};
        c2.ips = bad_ips;
        assert_int_equal(pki_cert_check(crt, key, &c2, NOW, &r), -EINVAL);
        assert_int_equal(pki_cert_check(NULL, key, &c, NOW, &r), -EINVAL);
        assert_int_equal(ERR_peek_error(), 0);
}

static void test_expiration(void **state)
{
        Fixture *f = *state;
        double days = 0;
        usec_t na = 0;

        assert_int_equal(pki_cert_get_not_after(f->ca_ec->cert, &na), 0);
        assert_int_equal(na, NOW + PKI_SIGNER_VALIDITY);
        assert_int_equal(pki_cert_expiration_days(f->ca_ec_pem, NOW, &days), 0);
        assert_true(days == 1825.0);
        assert_int_equal(pki_cert_expiration_days(f->ca_ec_pem, NOW + 1825 * DAY + DAY / 2, &days), 0);
        assert_true(days == -0.5);
        assert_int_equal(pki_cert_expiration_days("junk", NOW, &days), -EBADMSG);
        assert_int_equal(ERR_peek_error(), 0);
}

static void test_verify_chain(void **state)
{
        Fixture *f = *state;
        _cleanup_(pki_pair_freep) PkiPair *server =
                issue(f->ca_rsa, PKI_PROFILE_SERVER, PKI_KEY_ECDSA_P256, PKI_LEAF_VALIDITY, NOW);
        _cleanup_(pki_pair_freep) PkiPair *client =
                issue(f->ca_rsa, PKI_PROFILE_CLIENT, PKI_KEY_ECDSA_P256, PKI_LEAF_VALIDITY, NOW);
        _cleanup_(pki_pair_freep) PkiPair *short_ca = NULL;
        _cleanup_free_ char *srv = NULL, *cli = NULL, *both = NULL, *short_ca_pem = NULL,
                            *short_leaf_pem = NULL;
        char *r = NULL;

        assert_int_equal(pki_cert_to_pem(server->cert, &srv), 0);
        assert_int_equal(pki_cert_to_pem(client->cert, &cli), 0);
        both = strdup_printf("%s%s", f->foreign_pem, f->ca_rsa_pem);

        assert_int_equal(pki_verify_chain(srv, f->ca_rsa_pem, PKI_PURPOSE_SERVER, NOW, NULL), PKI_VALID);
        assert_int_equal(pki_verify_chain(srv, both, PKI_PURPOSE_ANY, NOW, NULL), PKI_VALID);
        assert_int_equal(pki_verify_chain(cli, f->ca_rsa_pem, PKI_PURPOSE_CLIENT, NOW, NULL), PKI_VALID);
        /* A signer verifies as its own root. */
        assert_int_equal(pki_verify_chain(f->ca_rsa_pem, f->ca_rsa_pem, PKI_PURPOSE_ANY, NOW, NULL),
                         PKI_VALID);

        assert_int_equal(pki_verify_chain(srv, f->foreign_pem, PKI_PURPOSE_SERVER, NOW, &r),
                         PKI_WRONG_SIGNER);
        assert_string_equal(r, "unable to get local issuer certificate at depth 0 "
                               "(/O=system:etcd/CN=system:etcd-peer:master-0)");
        free(r);
        assert_int_equal(pki_verify_chain(cli, f->ca_rsa_pem, PKI_PURPOSE_SERVER, NOW, &r),
                         PKI_WRONG_PURPOSE);
        assert_string_equal(r, "unsuitable certificate purpose at depth 0 (/O=system:etcd/CN=etcd-client)");
        free(r);
        assert_int_equal(pki_verify_chain(srv, f->ca_rsa_pem, PKI_PURPOSE_CLIENT, NOW, NULL),
                         PKI_WRONG_PURPOSE);
        assert_int_equal(
                pki_verify_chain(srv, f->ca_rsa_pem, PKI_PURPOSE_SERVER, NOW + PKI_LEAF_VALIDITY + 1, &r),
                PKI_EXPIRED);
        assert_true(startswith(r, "certificate has expired at depth"));
        free(r);
        assert_int_equal(
                pki_verify_chain(srv, f->ca_rsa_pem, PKI_PURPOSE_SERVER, NOW - 3600 * USEC_PER_SEC, &r),
                PKI_EXPIRED);
        assert_true(startswith(r, "certificate is not yet valid"));
        free(r);

        /* A leaf that outlives its signer fails once the signer expired. */
        assert_int_equal(pki_ca_new("short-lived", 10 * DAY, PKI_KEY_ECDSA_P256, NOW, &short_ca), 0);
        _cleanup_(pki_pair_freep) PkiPair *long_leaf =
                issue(short_ca, PKI_PROFILE_SERVER, PKI_KEY_ECDSA_P256, 100 * DAY, NOW);
        assert_int_equal(pki_cert_to_pem(short_ca->cert, &short_ca_pem), 0);
        assert_int_equal(pki_cert_to_pem(long_leaf->cert, &short_leaf_pem), 0);
        assert_int_equal(pki_verify_chain(short_leaf_pem, short_ca_pem, PKI_PURPOSE_SERVER, NOW, NULL),
                         PKI_VALID);
        assert_int_equal(
                pki_verify_chain(short_leaf_pem, short_ca_pem, PKI_PURPOSE_SERVER, NOW + 20 * DAY, &r),
                PKI_EXPIRED);
        assert_string_equal(r, "certificate has expired at depth 1 (/CN=short-lived)");
        free(r);

        assert_int_equal(pki_verify_chain("junk", f->ca_rsa_pem, PKI_PURPOSE_ANY, NOW, NULL), -EBADMSG);
        assert_int_equal(pki_verify_chain(srv, "", PKI_PURPOSE_ANY, NOW, NULL), -EBADMSG);
        assert_int_equal(pki_verify_chain(srv, f->ca_rsa_pem, _PKI_PURPOSE_MAX, NOW, NULL), -EINVAL);
        assert_int_equal(ERR_peek_error(), 0);
}

static void test_bundle(void **state)
{
        Fixture *f = *state;
        _cleanup_(pki_pair_freep) PkiPair *later = NULL, *short_ca = NULL;
        _cleanup_free_ char *later_pem = NULL, *short_pem = NULL, *a = NULL, *b = NULL, *c = NULL, *d = NULL,
                            *dup = NULL, *e = NULL;
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *sk = NULL;
        size_t n = 0;

        assert_int_equal(
                pki_ca_new("later-signer", PKI_SIGNER_VALIDITY, PKI_KEY_ECDSA_P256, NOW + DAY, &later), 0);
        assert_int_equal(pki_ca_new("short-signer", 10 * DAY, PKI_KEY_ECDSA_P256, NOW, &short_ca), 0);
        assert_int_equal(pki_cert_to_pem(later->cert, &later_pem), 0);
        assert_int_equal(pki_cert_to_pem(short_ca->cert, &short_pem), 0);

        /* Existing bundle (later + ca_ec) merged with the signer again. */
        dup = strdup_printf("%s%s", later_pem, f->ca_ec_pem);
        const char *in1[] = {dup, f->ca_ec_pem, "\n", NULL};
        assert_int_equal(pki_bundle_merge(in1, NOW, &a, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(pki_certs_from_pem(a, &sk), 0);
        assert_int_equal(sk_X509_num(sk), 2);
        assert_int_equal(X509_cmp(sk_X509_value(sk, 0), f->ca_ec->cert), 0); /* older first */
        assert_int_equal(X509_cmp(sk_X509_value(sk, 1), later->cert), 0);
        /* Same set in any order renders byte for byte the same. */
        const char *in2[] = {f->ca_ec_pem, later_pem, NULL};
        assert_int_equal(pki_bundle_merge(in2, NOW, &b, NULL), 0);
        assert_string_equal(a, b);
        /* Two signers with the same notBefore still order deterministically. */
        const char *in3[] = {f->ca_rsa_pem, f->ca_ec_pem, f->foreign_pem, NULL};
        const char *in4[] = {f->foreign_pem, f->ca_rsa_pem, f->ca_ec_pem, NULL};
        assert_int_equal(pki_bundle_merge(in3, NOW, &c, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(pki_bundle_merge(in4, NOW, &d, NULL), 0);
        assert_string_equal(c, d);
        free(c);
        free(d);
        c = d = NULL;

        /* Expired signers drop out. */
        const char *in5[] = {short_pem, f->ca_ec_pem, NULL};
        assert_int_equal(pki_bundle_merge(in5, NOW + 5 * DAY, &c, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(pki_bundle_merge(in5, NOW + 10 * DAY, &d, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(d, f->ca_ec_pem);
        assert_int_equal(pki_bundle_contains(c, short_pem), 1);
        assert_int_equal(pki_bundle_contains(d, short_pem), 0);
        assert_int_equal(pki_bundle_contains(a, dup), 1);
        assert_int_equal(pki_bundle_contains("", f->ca_ec_pem), 0);
        assert_int_equal(pki_bundle_contains(a, "junk"), -EBADMSG);

        /* Empty in, empty out; garbage is an error, not silently dropped. */
        const char *none[] = {NULL};
        assert_int_equal(pki_bundle_merge(none, NOW, &e, &n), 0);
        assert_string_equal(e, "");
        assert_int_equal(n, 0);
        char *x = NULL;
        const char *bad[] = {f->ca_ec_pem, "this is not a bundle", NULL};
        assert_int_equal(pki_bundle_merge(bad, NOW, &x, NULL), -EBADMSG);
        assert_null(x);
        assert_int_equal(pki_bundle_merge(in1, NOW, NULL, NULL), -EINVAL);
        assert_int_equal(ERR_peek_error(), 0);
}

static int rm_rf(const char *dir)
{
        _cleanup_free_ char *cmd = strdup_printf("rm -rf '%s'", dir);

        return system(cmd);
}

static void test_write_pair(void **state)
{
        Fixture *f = *state;
        _cleanup_(pki_pair_freep) PkiPair *leaf =
                issue(f->ca_ec, PKI_PROFILE_CLIENT, PKI_KEY_ECDSA_P256, PKI_LEAF_VALIDITY, NOW);
        _cleanup_free_ char *crt = NULL, *key = NULL, *kpath = NULL, *cpath = NULL, *back = NULL;
        char dir[] = "/tmp/test-pki-XXXXXX";
        struct stat st;

        assert_int_equal(pki_pair_to_pem(leaf, &crt, &key), 0);
        assert_non_null(mkdtemp(dir));
        kpath = strdup_printf("%s/etcd-client.key", dir);
        cpath = strdup_printf("%s/etcd-client.crt", dir);
        /* A stale key that others could read is replaced, not rewritten in place. */
        assert_int_equal(write_file_atomic(kpath, "old", 3, 0644), 0);

        mode_t old = umask(0);
        assert_int_equal(pki_write_pair(dir, "etcd-client", crt, key), 0);
        (void) umask(old);
        assert_int_equal(stat(kpath, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(stat(cpath, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0644);
        assert_int_equal(read_full_file(kpath, PKI_PEM_MAX, &back, NULL), 0);
        assert_string_equal(back, key);
        free(back);
        assert_int_equal(read_full_file(cpath, PKI_PEM_MAX, &back, NULL), 0);
        assert_string_equal(back, crt);

        assert_int_equal(pki_write_pair(dir, "../escape", crt, key), -EINVAL);
        assert_int_equal(pki_write_pair(dir, "..", crt, key), -EINVAL);
        assert_int_equal(pki_write_pair(dir, "", crt, key), -EINVAL);
        assert_int_equal(pki_write_pair(dir, "x", NULL, key), -EINVAL);
        assert_int_equal(pki_write_pair("/nonexistent-dir-for-pki", "x", crt, key), -ENOENT);
        /* Nothing but the pair (and the stale file replaced) is left behind. */
        _cleanup_free_ char *ls = strdup_printf("test \"$(ls -A '%s' | wc -l)\" -eq 2", dir);
        assert_int_equal(system(ls), 0);
        assert_int_equal(rm_rf(dir), 0);
}

/* Runs `cmd` in a shell, returns its exit status and (optionally) stdout. */
static int run(const char *cmd, char **ret_out)
{
        FILE *p = popen(cmd, "r");
        char buf[65536];
        size_t n;

        assert_non_null(p);
        n = fread(buf, 1, sizeof buf - 1, p);
        buf[n] = 0;
        int st = pclose(p);
        if (ret_out)
                *ret_out = strdup(buf);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void require_openssl_cli(void)
{
        if (system("command -v openssl >/dev/null 2>&1") != 0)
                fail_msg("the openssl command line tool is missing: install the 'openssl' package "
                         "(hack/install-deps.sh) to run the cross-check");
}

static void write_str(const char *dir, const char *name, const char *s)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s", dir, name);

        assert_int_equal(write_file_atomic(p, s, strlen(s), 0600), 0);
}

static void test_openssl_cli(void **state)
{
        Fixture *f = *state;
        char dir[] = "/tmp/test-pki-cli-XXXXXX";
        long long at = (long long) (NOW / USEC_PER_SEC) + 3600;

        require_openssl_cli();
        assert_non_null(mkdtemp(dir));
        write_str(dir, "ca-rsa.pem", f->ca_rsa_pem);
        write_str(dir, "ca-ec.pem", f->ca_ec_pem);
        write_str(dir, "foreign.pem", f->foreign_pem);

        const struct {
                const PkiPair *ca;
                const char *ca_file;
                PkiProfile profile;
                const char *purpose;
        } cases[] = {
                {f->ca_rsa, "ca-rsa.pem", PKI_PROFILE_SERVER_CLIENT, "sslserver"},
                {f->ca_rsa, "ca-rsa.pem", PKI_PROFILE_SERVER_CLIENT, "sslclient"},
                {f->ca_ec, "ca-ec.pem", PKI_PROFILE_SERVER, "sslserver"},
                {f->ca_ec, "ca-ec.pem", PKI_PROFILE_CLIENT, "sslclient"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(pki_pair_freep) PkiPair *leaf =
                        issue(cases[i].ca, cases[i].profile, PKI_KEY_ECDSA_P256, PKI_LEAF_VALIDITY, NOW);
                _cleanup_free_ char *crt = NULL, *key = NULL, *cmd = NULL, *out = NULL;

                assert_int_equal(pki_pair_to_pem(leaf, &crt, &key), 0);
                assert_int_equal(pki_write_pair(dir, "leaf", crt, key), 0);
                /* Strict RFC 5280 checks, at a fixed time, with the TLS purpose. */
                cmd = strdup_printf("cd '%s' && openssl verify -x509_strict -attime %lld -purpose %s "
                                    "-CAfile %s leaf.crt 2>&1",
                                    dir, at, cases[i].purpose, cases[i].ca_file);
                int st = run(cmd, &out);
                if (st != 0)
                        fail_msg("openssl verify rejected case %zu: %s", i, out);
                assert_string_equal(out, "leaf.crt: OK\n");
                free(cmd);
                cmd = strdup_printf("cd '%s' && openssl verify -attime %lld -CAfile foreign.pem leaf.crt "
                                    ">/dev/null 2>&1",
                                    dir, at);
                assert_int_not_equal(run(cmd, NULL), 0);
                free(cmd);
                cmd = strdup_printf("openssl pkey -in '%s/leaf.key' -noout 2>&1", dir);
                assert_int_equal(run(cmd, NULL), 0);
        }

        /* The RSA signer and a server+client leaf as text. */
        _cleanup_(pki_pair_freep) PkiPair *peer =
                issue(f->ca_rsa, PKI_PROFILE_SERVER_CLIENT, PKI_KEY_ECDSA_P256, PKI_LEAF_VALIDITY, NOW);
        _cleanup_free_ char *crt = NULL, *cmd = NULL, *text = NULL, *ca_text = NULL;
        assert_int_equal(pki_cert_to_pem(peer->cert, &crt), 0);
        write_str(dir, "peer.pem", crt);
        cmd = strdup_printf("openssl x509 -noout -text -in '%s/peer.pem'", dir);
        assert_int_equal(run(cmd, &text), 0);
        const char *want[] = {
                "DNS:localhost, DNS:etcd.kube-system.svc, DNS:etcd.kube-system.svc.cluster.local, ",
                "DNS:etcd.openshift-etcd.svc, DNS:etcd.openshift-etcd.svc.cluster.local, IP Address:",
                "IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:10.0.0.5, IP Address:",
                "IP Address:10.0.0.5, IP Address:FD00:1:0:0:0:0:0:5\n",
                "X509v3 Basic Constraints: critical\n                CA:FALSE",
                "X509v3 Key Usage: critical\n                Digital Signature\n",
                "TLS Web Server Authentication, TLS Web Client Authentication",
                "Subject: O = system:etcd, CN = system:etcd-peer:master-0",
                "Issuer: CN = openshift-etcd_etcd-signer@1735689600",
                "Not Before: Dec 31 23:59:00 2024 GMT",
                "Not After : Jan  1 00:00:00 2028 GMT",
                "Signature Algorithm: sha256WithRSAEncryption",
                "X509v3 Authority Key Identifier",
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                if (!strstr(text, want[i]))
                        fail_msg("openssl x509 -text lacks \"%s\":\n%s", want[i], text);
        free(cmd);
        cmd = strdup_printf("openssl x509 -noout -text -in '%s/ca-rsa.pem'", dir);
        assert_int_equal(run(cmd, &ca_text), 0);
        assert_non_null(strstr(ca_text, "X509v3 Basic Constraints: critical\n                CA:TRUE"));
        assert_non_null(strstr(ca_text, "Digital Signature, Certificate Sign, CRL Sign"));
        assert_non_null(strstr(ca_text, "Public-Key: (2048 bit)"));
        assert_int_equal(rm_rf(dir), 0);
}

/* Offload helper. */

typedef struct Done {
        unsigned calls;
        int error;
        PkiKeyType type;
        EVP_PKEY *key;
        Offload **free_me;  /* frees the helper from inside the callback */
        Offload **resubmit; /* submits another job from inside the callback */
        struct Done *next;
} Done;

static unsigned offload_calls;

static void on_key(Offload *o, int error, EVP_PKEY *key, void *userdata)
{
        Done *d = userdata;

        offload_calls++;
        d->calls++;
        d->error = error;
        d->key = key;
        assert_true(error == 0 ? key != NULL : key == NULL);
        if (d->resubmit) {
                assert_int_equal(pki_offload_keygen(*d->resubmit, PKI_KEY_ECDSA_P256, on_key, d->next), 0);
                d->resubmit = NULL;
        }
        if (d->free_me)
                *d->free_me = pki_offload_free(*d->free_me);
}

static void run_until(sd_event *e, const unsigned *calls, unsigned want)
{
        for (unsigned i = 0; *calls < want; i++) {
                assert_true(i < 600); /* 60 s */
                assert_true(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        }
}

static void test_offload(void **state)
{
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Offload *o = NULL;
        Done d[6] = {};

        offload_calls = 0;
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(pki_offload_new(e, 3, &o), 0);

        /* Never called from inside the submitting call, exactly once later. */
        assert_int_equal(pki_offload_keygen(o, PKI_KEY_RSA_2048, on_key, &d[0]), 0);
        assert_int_equal(pki_offload_keygen(o, PKI_KEY_ECDSA_P256, on_key, &d[1]), 0);
        d[2].resubmit = &o;
        d[2].next = &d[3];
        assert_int_equal(pki_offload_keygen(o, PKI_KEY_ECDSA_P256, on_key, &d[2]), 0);
        assert_int_equal(d[0].calls + d[1].calls + d[2].calls, 0);
        assert_int_equal(pki_offload_in_flight(o), 3);
        assert_int_equal(pki_offload_keygen(o, PKI_KEY_ECDSA_P256, on_key, &d[5]), -EBUSY);
        assert_int_equal(pki_offload_keygen(o, _PKI_KEY_TYPE_MAX, on_key, &d[5]), -EINVAL);
        assert_int_equal(pki_offload_keygen(o, PKI_KEY_ECDSA_P256, NULL, &d[5]), -EINVAL);

        run_until(e, &offload_calls, 4);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(d[i].calls, 1);
                assert_int_equal(d[i].error, 0);
                assert_int_equal(pki_key_get_type(d[i].key), i == 0 ? PKI_KEY_RSA_2048 : PKI_KEY_ECDSA_P256);
                EVP_PKEY_free(d[i].key);
        }
        assert_int_equal(d[5].calls, 0);
        assert_int_equal(pki_offload_in_flight(o), 0);

        /* Freeing with work queued cancels it, synchronously, exactly once. */
        Done c[3] = {};
        for (size_t i = 0; i < 3; i++)
                assert_int_equal(pki_offload_keygen(o, PKI_KEY_RSA_2048, on_key, &c[i]), 0);
        o = pki_offload_free(o);
        for (size_t i = 0; i < 3; i++) {
                assert_int_equal(c[i].calls, 1);
                assert_int_equal(c[i].error, -ECANCELED);
        }
        assert_null(pki_offload_free(NULL));
        /* The loop has nothing left of the helper. */
        assert_int_equal(sd_event_run(e, 0), 0);
}

static void test_offload_free_in_callback(void **state)
{
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Offload *o = NULL;
        Done d[3] = {};

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(pki_offload_new(e, 0, &o), 0);
        d[0].free_me = &o;
        for (size_t i = 0; i < 3; i++)
                assert_int_equal(pki_offload_keygen(o, PKI_KEY_ECDSA_P256, on_key, &d[i]), 0);
        offload_calls = 0;
        run_until(e, &offload_calls, 1);
        assert_null(o);
        assert_int_equal(d[0].error, 0);
        EVP_PKEY_free(d[0].key);
        for (size_t i = 1; i < 3; i++) {
                assert_int_equal(d[i].calls, 1);
                assert_int_equal(d[i].error, -ECANCELED);
        }
        assert_int_equal(sd_event_run(e, 0), 0);
}

/* Verdict memo: same answers as pki_cert_check, from the memo only for
 * identical inputs inside the TTL. */
static void test_check_memo(void **state)
{
        Fixture *f = *state;
        _cleanup_(pki_pair_freep) PkiPair *leaf =
                issue(f->ca_ec, PKI_PROFILE_SERVER_CLIENT, PKI_KEY_ECDSA_P256, PKI_LEAF_VALIDITY, NOW);
        _cleanup_(pki_check_memo_freep) PkiCheckMemo *m = pki_check_memo_new(600 * USEC_PER_SEC);
        _cleanup_free_ char *crt = NULL, *key = NULL, *other_key = NULL;
        PkiCheck c = {.ca_pem = f->ca_ec_pem,
                      .dns = NODE_DNS,
                      .ips = NODE_IPS,
                      .refresh = PKI_LEAF_REFRESH_WINDOW};
        const char *const ips2[] = {"127.0.0.1", "::1", "10.0.0.6", "fd00:1::5", NULL};
        uint64_t hits, misses;
        char *r = NULL;

        assert_non_null(m);
        assert_int_equal(pki_pair_to_pem(leaf, &crt, &key), 0);
        assert_int_equal(pki_key_to_pem(f->foreign->key, &other_key), 0);

        assert_int_equal(pki_cert_check_memo(m, crt, key, &c, NOW, &r), PKI_VALID);
        assert_string_equal(r, "valid until 2028-01-01T00:00:00Z");
        free(r);
        assert_int_equal(pki_cert_check_memo(m, crt, key, &c, NOW + 60 * USEC_PER_SEC, &r), PKI_VALID);
        assert_string_equal(r, "valid until 2028-01-01T00:00:00Z");
        free(r);
        pki_check_memo_stats(m, &hits, &misses);
        assert_int_equal(hits, 1);
        assert_int_equal(misses, 1);

        /* Any input that differs is judged afresh: IPs, key, bundle, refresh window. */
        PkiCheck c2 = c;
        c2.ips = ips2;
        assert_int_equal(pki_cert_check_memo(m, crt, key, &c2, NOW, &r), PKI_WRONG_SANS);
        free(r);
        assert_int_equal(pki_cert_check_memo(m, crt, other_key, &c, NOW, &r), PKI_KEY_MISMATCH);
        free(r);
        c2 = c;
        c2.ca_pem = f->ca_rsa_pem;
        assert_int_equal(pki_cert_check_memo(m, crt, key, &c2, NOW, &r), PKI_WRONG_SIGNER);
        free(r);
        c2 = c;
        c2.refresh = PKI_LEAF_VALIDITY + DAY;
        assert_int_equal(pki_cert_check_memo(m, crt, key, &c2, NOW, &r), PKI_EXPIRING);
        free(r);
        pki_check_memo_stats(m, &hits, &misses);
        assert_int_equal(hits, 1);
        assert_int_equal(misses, 5);

        /* Past the TTL, or earlier than the verdict: judged again, at the new time. */
        usec_t expiry = NOW + PKI_LEAF_VALIDITY;
        assert_int_equal(pki_cert_check_memo(m, crt, key, &c, expiry + DAY, &r), PKI_EXPIRED);
        free(r);
        assert_int_equal(pki_cert_check_memo(m, crt, key, &c, NOW, &r), PKI_VALID);
        free(r);
        pki_check_memo_stats(m, &hits, &misses);
        assert_int_equal(misses, 7);

        /* More distinct inputs than entries: the oldest go, answers stay right. */
        for (unsigned i = 0; i < PKI_CHECK_MEMO_SIZE + 8; i++) {
                char ip[32];
                const char *const ips3[] = {"127.0.0.1", "::1", ip, NULL};
                (void) snprintf(ip, sizeof ip, "10.1.%u.%u", i / 256, i % 256);
                c2 = c;
                c2.ips = ips3;
                assert_int_equal(pki_cert_check_memo(m, crt, key, &c2, NOW + i, &r), PKI_WRONG_SANS);
                assert_non_null(strstr(r, ip));
                free(r);
        }
        assert_int_equal(pki_cert_check_memo(NULL, crt, key, &c, NOW, &r), PKI_VALID);
        free(r);
}

/* Key pool. */

static unsigned pool_ready_calls;

static void on_pool_ready(KeyPool *p, void *userdata)
{
        (void) userdata;
        pool_ready_calls++;
        assert_true(key_pool_available(p) > 0);
}

static void test_key_pool(void **state)
{
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        _cleanup_(key_pool_freep) KeyPool *p = NULL;
        EVP_PKEY *k = NULL, *seen[4] = {};

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(key_pool_new(e, PKI_KEY_ECDSA_P256, 0, &p), -EINVAL);
        assert_int_equal(key_pool_new(e, PKI_KEY_ECDSA_P256, 65, &p), -EINVAL);
        assert_int_equal(key_pool_new(e, _PKI_KEY_TYPE_MAX, 2, &p), -EINVAL);
        assert_int_equal(key_pool_new(e, PKI_KEY_ECDSA_P256, 2, &p), 0);
        key_pool_set_ready_callback(p, on_pool_ready, NULL);
        pool_ready_calls = 0;

        /* Filling starts at once, off the loop: nothing is there before the loop runs. */
        assert_int_equal(key_pool_generating(p), 2);
        assert_int_equal(key_pool_take(p, PKI_KEY_ECDSA_P256, &k), -EAGAIN);
        assert_null(k);
        assert_int_equal(key_pool_take(p, PKI_KEY_RSA_2048, &k), -EMEDIUMTYPE);
        assert_int_equal(key_pool_type(p), PKI_KEY_ECDSA_P256);
        run_until(e, &pool_ready_calls, 1);
        for (unsigned i = 0; i < 50 && key_pool_available(p) < 2; i++)
                assert_true(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        assert_int_equal(key_pool_available(p), 2);
        assert_int_equal(key_pool_generating(p), 0);
        /* Ready is called once per starvation, not per key. */
        assert_int_equal(pool_ready_calls, 1);

        /* Each take hands out a distinct key and starts its replacement. */
        for (size_t i = 0; i < 2; i++) {
                assert_int_equal(key_pool_take(p, PKI_KEY_ECDSA_P256, &seen[i]), 0);
                assert_int_equal(pki_key_get_type(seen[i]), PKI_KEY_ECDSA_P256);
                assert_int_equal(key_pool_available(p) + key_pool_generating(p), 2);
        }
        assert_ptr_not_equal(seen[0], seen[1]);
        assert_int_equal(EVP_PKEY_eq(seen[0], seen[1]), 0);
        assert_int_equal(key_pool_take(p, PKI_KEY_ECDSA_P256, &k), -EAGAIN);
        run_until(e, &pool_ready_calls, 2);
        assert_int_equal(key_pool_take(p, PKI_KEY_ECDSA_P256, &seen[2]), 0);
        assert_int_equal(EVP_PKEY_eq(seen[2], seen[0]), 0);
        assert_int_equal(EVP_PKEY_eq(seen[2], seen[1]), 0);
        for (size_t i = 0; i < 3; i++)
                EVP_PKEY_free(seen[i]);

        /* Freed with generations in flight: nothing leaks (ASan, valgrind), no callback. */
        assert_true(key_pool_generating(p) > 0);
        p = key_pool_free(p);
        assert_int_equal(pool_ready_calls, 2);
        assert_int_equal(sd_event_run(e, 0), 0);
        assert_null(key_pool_free(NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_enums),
                cmocka_unit_test(test_keys),
                cmocka_unit_test(test_ca),
                cmocka_unit_test(test_issue_profiles),
                cmocka_unit_test(test_san_dns_names),
                cmocka_unit_test(test_issue_errors),
                cmocka_unit_test(test_pem_roundtrip),
                cmocka_unit_test(test_check_outcomes),
                cmocka_unit_test(test_check_memo),
                cmocka_unit_test(test_expiration),
                cmocka_unit_test(test_verify_chain),
                cmocka_unit_test(test_bundle),
                cmocka_unit_test(test_write_pair),
                cmocka_unit_test(test_openssl_cli),
                cmocka_unit_test(test_offload),
                cmocka_unit_test(test_offload_free_in_callback),
                cmocka_unit_test(test_key_pool),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
