/* The operator's X.509 toolkit on OpenSSL 3: keys, self-signed signers and
 * the leaf certificates they issue (upstream's profiles and validities;
 * test/data/contract.json lists them), reading existing material back and deciding
 * whether it is still right, CA bundles, chain verification and writing
 * pairs to disk. Everything takes the current time as an argument so tests
 * and rotation logic never depend on the wall clock. PEM strings are
 * NUL-terminated and bounded by PKI_PEM_MAX. Results are negative errno:
 * -EBADMSG unparseable input, -E2BIG over a bound, -ENOMEM, -EINVAL. */
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdint.h>

#include "base/macro.h"
#include "base/timeutil.h"

#define PKI_PEM_MAX          ((size_t) 4 * 1024 * 1024)
#define PKI_BUNDLE_MAX_CERTS 1024U

#define PKI_USEC_PER_DAY ((usec_t) 86400ULL * USEC_PER_SEC)
/* Signers live 5 years and are replaced after ~4.2 years, i.e. when less
 * than ~0.8 years (292 days) remain; leaf certificates live 3 years and are
 * replaced after ~2.2 years (the same 292 days left), as upstream's. */
#define PKI_SIGNER_VALIDITY       ((usec_t) 5 * 365 * PKI_USEC_PER_DAY)
#define PKI_SIGNER_REFRESH_WINDOW ((usec_t) 292 * PKI_USEC_PER_DAY)
#define PKI_LEAF_VALIDITY         ((usec_t) 3 * 365 * PKI_USEC_PER_DAY)
#define PKI_LEAF_REFRESH_WINDOW   ((usec_t) 292 * PKI_USEC_PER_DAY)

typedef enum PkiKeyType {
        PKI_KEY_RSA_2048,
        PKI_KEY_ECDSA_P256,
        _PKI_KEY_TYPE_MAX,
        _PKI_KEY_TYPE_INVALID = -EINVAL,
} PkiKeyType;

typedef enum PkiProfile {
        PKI_PROFILE_SERVER,        /* extendedKeyUsage serverAuth */
        PKI_PROFILE_CLIENT,        /* clientAuth */
        PKI_PROFILE_SERVER_CLIENT, /* both: etcd peer and serving certificates */
        _PKI_PROFILE_MAX,
        _PKI_PROFILE_INVALID = -EINVAL,
} PkiProfile;

typedef enum PkiPurpose {
        PKI_PURPOSE_ANY,
        PKI_PURPOSE_SERVER,
        PKI_PURPOSE_CLIENT,
        _PKI_PURPOSE_MAX,
        _PKI_PURPOSE_INVALID = -EINVAL,
} PkiPurpose;

/* Verdicts on existing material. */
typedef enum PkiStatus {
        PKI_VALID,
        PKI_EXPIRING,      /* valid, but less than the refresh window remains */
        PKI_EXPIRED,       /* or not yet valid, for pki_verify_chain() */
        PKI_WRONG_SANS,    /* DNS/IP SANs differ from the expected set */
        PKI_WRONG_SIGNER,  /* not signed by any CA in the bundle */
        PKI_WRONG_PURPOSE, /* extended key usage does not allow the purpose */
        PKI_KEY_MISMATCH,  /* private key does not belong to the certificate */
        PKI_UNPARSEABLE,
        _PKI_STATUS_MAX,
        _PKI_STATUS_INVALID = -EINVAL,
} PkiStatus;

const char *pki_status_to_string(PkiStatus s);
const char *pki_key_type_to_string(PkiKeyType t);
PkiKeyType pki_key_type_from_string(const char *s);

/* OpenSSL's STACK_OF(X509), named so it reads (and formats) as a type. */
typedef STACK_OF(X509) PkiCerts;

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(X509 *, X509_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free_all);
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_STORE *, X509_STORE_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_STORE_CTX *, X509_STORE_CTX_free);
static inline void sk_X509_pop_freep(PkiCerts **p)
{
        if (*p)
                sk_X509_pop_free(*p, X509_free);
}

/* key.c: generation and PKCS#8 PEM. Reading also accepts the traditional
 * "RSA PRIVATE KEY"/"EC PRIVATE KEY" forms; encrypted keys are refused.
 * pki_key_new() is thread-safe and silent: the offload helper runs it. */
int pki_key_new(PkiKeyType type, EVP_PKEY **ret);
int pki_key_to_pem(EVP_PKEY *key, char **ret);
int pki_key_from_pem(const char *pem, EVP_PKEY **ret);
/* PKI_KEY_* for the two supported kinds, _PKI_KEY_TYPE_INVALID otherwise. */
PkiKeyType pki_key_get_type(const EVP_PKEY *key);

/* A certificate with its private key; both owned. */
typedef struct PkiPair {
        X509 *cert;
        EVP_PKEY *key;
} PkiPair;

PkiPair *pki_pair_free(PkiPair *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(PkiPair *, pki_pair_free);
/* -EBADMSG when either does not parse, -EKEYREJECTED when they do not match. */
int pki_pair_from_pem(const char *cert_pem, const char *key_pem, PkiPair **ret);
int pki_pair_to_pem(const PkiPair *p, char **ret_cert_pem, char **ret_key_pem);

/* cert.c: issuing. notBefore is `now` minus one minute (clock skew),
 * notAfter `now` plus the validity; serials are random 128-bit; SHA-256. */
int pki_ca_new(const char *cn, usec_t validity, PkiKeyType type, usec_t now, PkiPair **ret);
/* Same with a key generated earlier (pki_offload_keygen); takes a reference. */
int pki_ca_new_with_key(const char *cn, usec_t validity, EVP_PKEY *key, usec_t now, PkiPair **ret);

typedef struct PkiCertRequest {
        PkiProfile profile;
        const char *cn;
        const char *org;        /* optional subject O */
        const char *org2;       /* optional second subject O, after `org` (upstream's client certificates) */
        const char *const *dns; /* NULL-terminated, optional; pki_san_dns_name_is_valid() */
        const char *const *ips; /* NULL-terminated IPv4/IPv6 text, optional */
        usec_t validity;
        PkiKeyType key_type; /* used when `key` is NULL */
        EVP_PKEY *key;       /* optional pre-generated key; a reference is taken */
} PkiCertRequest;

/* What may go in a certificate's DNS SAN: 1 to 253 printable ASCII characters,
 * none of them a space or ',', so no name passes for two where SANs are written
 * as a list ("DNS:a,IP:b"). Not a host name check (base/names.h): wildcards
 * ("*.example") are the caller's choice. NULL: false. */
bool pki_san_dns_name_is_valid(const char *s);
/* -EINVAL when `ca` is not a CA (basicConstraints), when a DNS SAN is not
 * pki_san_dns_name_is_valid() or an IP SAN no address; -EKEYREJECTED when its
 * key does not match, -ERANGE for a validity beyond year 9999. */
int pki_cert_issue(const PkiPair *ca, const PkiCertRequest *req, usec_t now, PkiPair **ret);

/* inspect.c: reading. pki_cert_from_pem() takes the first certificate;
 * pki_certs_from_pem() all of them (-ENODATA when there is none). */
int pki_cert_from_pem(const char *pem, X509 **ret);
int pki_certs_from_pem(const char *pem, PkiCerts **ret);
int pki_cert_to_pem(X509 *x, char **ret);

typedef struct PkiCertInfo {
        char *subject;      /* RFC 2253, e.g. "O=system:etcd,CN=etcd-client" */
        char *subject_cn;   /* NULL when absent, as are the others */
        char *subject_o;    /* the last O */
        char *subject_orgs; /* every O in order, joined by ","; NULL when there is none */
        char *issuer;
        char *issuer_cn;
        char *serial; /* lowercase hex */
        char **dns;   /* NULL-terminated, never NULL itself */
        char **ips;   /* canonical text (inet_ntop), NULL-terminated */
        usec_t not_before;
        usec_t not_after;
        bool is_ca;             /* basicConstraints CA:TRUE */
        bool self_signed;       /* issuer == subject and the signature verifies with its own key */
        uint32_t key_usage;     /* OpenSSL KU_* bits, UINT32_MAX when the extension is absent */
        uint32_t ext_key_usage; /* OpenSSL XKU_* bits, UINT32_MAX when absent */
        PkiKeyType key_type;
        int key_bits;
} PkiCertInfo;

PkiCertInfo *pki_cert_info_free(PkiCertInfo *i);
DEFINE_TRIVIAL_CLEANUP_FUNC(PkiCertInfo *, pki_cert_info_free);
int pki_cert_get_info(X509 *x, PkiCertInfo **ret);

int pki_cert_get_not_after(const X509 *x, usec_t *ret);
/* Days until the first certificate in `pem` expires, fractional, negative
 * once expired (openshift_etcd_operator_signer_expiration_days). */
int pki_cert_expiration_days(const char *pem, usec_t now, double *ret);

typedef struct PkiCheck {
        const char *ca_pem;     /* acceptable signers; NULL skips the signer check */
        const char *const *dns; /* expected DNS SANs; NULL (with ips NULL) skips the SAN check */
        const char *const *ips; /* expected IP SANs, compared as addresses */
        usec_t refresh;         /* PKI_EXPIRING when less than this remains */
} PkiCheck;

/* Judges a certificate (the first in cert_pem) with its key (NULL skips the
 * key check). Returns a PkiStatus and, in *ret_reason, what differs
 * ("missing IP SAN 10.0.0.5"); negative errno only for -EINVAL and -ENOMEM.
 * The first failing check wins: unparseable, key mismatch, wrong signer,
 * wrong SANs, expired, expiring. notBefore in the future is not judged
 * (another writer's clock skew). */
int pki_cert_check(const char *cert_pem, const char *key_pem, const PkiCheck *check, usec_t now,
                   char **ret_reason);

/* Verifies the first certificate of leaf_pem (further certificates there
 * are untrusted intermediates) against the trust anchors in bundle_pem
 * at time `now`. Returns PKI_VALID, PKI_EXPIRED, PKI_WRONG_PURPOSE or
 * PKI_WRONG_SIGNER (any other verification failure, reason from OpenSSL);
 * -EBADMSG when either input does not parse. */
int pki_verify_chain(const char *leaf_pem, const char *bundle_pem, PkiPurpose purpose, usec_t now,
                     char **ret_reason);

/* bundle.c: merges a NULL-terminated list of PEM bundles (blank entries
 * are empty bundles), dropping duplicates (same DER) and
 * certificates expired at `now`, ordered by notBefore then DER so the
 * rendering is deterministic. An empty result is "". */
int pki_bundle_merge(const char *const *bundles, usec_t now, char **ret_pem, size_t *ret_n);
/* 1 when every certificate of cert_pem is in bundle_pem, 0 otherwise. */
int pki_bundle_contains(const char *bundle_pem, const char *cert_pem);
/* The earliest notAfter of the bundle's certificates (0: none): when the bundle changes next
 * by itself, as a certificate in it expires and leaves it. */
int pki_bundle_first_expiry(const char *bundle_pem, usec_t *ret);

/* files.c: <dir>/<name>.key (0600, written first) and <dir>/<name>.crt
 * (0644), each replaced atomically; the key is never readable by others,
 * not even while it is being written. */
int pki_write_pair(const char *dir, const char *name, const char *cert_pem, const char *key_pem);
