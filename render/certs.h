/* What every etcd certificate is, defined once for `render` (the bootstrap
 * host's set) and the cert signer (every master's set, and rotation): the
 * secret's name, subject, signer, usages and SANs. The SANs of a node
 * certificate are upstream's (tlshelpers getServerHostNames): localhost and
 * the etcd service names as DNS, the loopback addresses and the node's
 * InternalIPs as IPs. Pure data and a helper; no I/O. */
#pragma once

#include <cjson/cJSON.h>

#include "base/contract.h"
#include "pki/pki.h"

typedef enum CertSigner {
        CERT_SIGNER_ETCD,   /* secret etcd-signer, bundle etcd-ca-bundle */
        CERT_SIGNER_METRIC, /* secret etcd-metric-signer, bundle etcd-metrics-ca-bundle */
        _CERT_SIGNER_MAX,
        _CERT_SIGNER_INVALID = -EINVAL,
} CertSigner;

/* Subjects are upstream's (tlshelpers, library-go's crypto): a client certificate's CN and two
 * O values; a node certificate's CN is the first of its SANs in sorted order and it has no O.
 * The subject this operator issued before 2026-11-30 (CN system:etcd-<kind>:<node> and one O)
 * is still accepted, so that neither an upstream cluster taken over nor one of ours re-issues
 * every leaf (cert_subject_ok). */
typedef struct CertProfile {
        const char *secret; /* the secret's name; for a node certificate the prefix before the node name */
        const char *cn;     /* a client certificate's CN; NULL for node certificates (cert_profile_cn) */
        const char *org, *org2; /* the subject's O values, NULL when none */
        const char
                *legacy_cn; /* the CN issued before: a prefix before the node name for node certificates */
        const char *legacy_org; /* the one O issued before */
        CertSigner signer;
        PkiProfile usage;
        bool per_node;
} CertProfile;

/* The secrets of the two signers, indexed by CertSigner. */
extern const char *const cert_signer_secrets[_CERT_SIGNER_MAX];

/* The client certificates (one each), then the node certificates (one each per master). */
extern const CertProfile cert_client_profiles[2];
extern const CertProfile cert_node_profiles[3];

/* The secret name of a profile for `node` (NULL for a client certificate). */
int cert_profile_secret(const CertProfile *p, const char *node, char *ret_secret, size_t secret_size);
/* The CN a certificate of the profile is issued with: a client certificate's own, or for a
 * node certificate the first of its SANs (`dns` and `ips`, cert_node_sans) in byte order, as
 * library-go's MakeServerCert names it. NULL when a node certificate has no SAN. */
const char *cert_profile_cn(const CertProfile *p, const char *const *dns, const char *const *ips);
/* Whether a certificate's subject (its CN, and every O joined by "," as PkiCertInfo's
 * subject_orgs) is one the profile issues for `node` with these SANs, or the one this operator
 * issued before. */
bool cert_subject_ok(const CertProfile *p, const char *node, const char *const *dns, const char *const *ips,
                     const char *cn, const char *orgs);

/* What the Secret `name` (a signer's, a client's or a node's) holds, in a sentence. */
const char *cert_description(const char *name);
/* Sets those annotations on `obj` (a Secret) from `cert_pem`: validity
 * (RFC 3339, UTC), the issuer's CN, the SANs sorted and comma-joined (when
 * there are any), the owning component, cert_description(name) and the refresh period
 * (certificates.openshift.io/refresh-period: when, after notBefore, it is replaced). */
int cert_annotations_set(cJSON *obj, const char *name, const char *cert_pem);
/* A CA bundle ConfigMap's metadata, as library-go's certrotation writes it: the owning
 * component, cert_description(name), label auth.openshift.io/managed-certificate-type. */
int cert_bundle_metadata_set(cJSON *obj, const char *name);
/* The aggregates' (etcd-all-certs, etcd-all-bundles): owning component "Etcd", as upstream's. */
int cert_aggregate_metadata_set(cJSON *obj);
/* Whether `obj` carries what one of the two above sets (`bundle`: the bundle's name; NULL: an
 * aggregate). */
bool cert_metadata_current(const cJSON *obj, const char *bundle);
/* Whether `obj` already carries them for this certificate (its not-after, the owner and the
 * refresh period). */
bool cert_annotations_current(const cJSON *obj, const char *cert_pem);

/* How many DNS names a node certificate carries. */
#define CERT_NODE_DNS_NAMES 5
/* The node certificate SANs: fills `dns` (CERT_NODE_DNS_NAMES + 1 entries)
 * and `ips` (n_node_ips + 3 entries), each NULL-terminated, with borrowed
 * strings: the loopback addresses first, then `node_ips` without repeats. */
void cert_node_sans(const char *const *node_ips, size_t n_node_ips, const char **dns, const char **ips);
