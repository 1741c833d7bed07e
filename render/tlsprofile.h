/* etcd's TLS settings from the cluster's TLS security profile
 * (apiservers.config.openshift.io/cluster spec.tlsSecurityProfile), read as
 * OpenShift's config observer reads it: no profile is Intermediate; Old,
 * Intermediate and Modern are openshift/api's fixed lists; Custom brings its
 * own ciphers and minTLSVersion. The profiles name ciphers the OpenSSL way;
 * etcd takes IANA names, so each is mapped by library-go's table and the ones
 * it does not know (the DHE and SHA-384 CBC suites) are left out, as there.
 * Pure. */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct EtcdTls {
        /* "TLS_ECDHE_...,..." for ETCD_CIPHER_SUITES; NULL with a TLS 1.3
         * minimum, where etcd 3.5+ refuses any list ("cipher suites cannot be
         * configured when only TLS1.3 is enabled") and Go configures none. */
        char *cipher_suites;
        const char *min_version; /* ETCD_TLS_MIN_VERSION: "TLS1.2" or "TLS1.3" */
        const char *profile;     /* "Old", "Intermediate", "Modern" or "Custom" */
} EtcdTls;

/* `profile` is spec.tlsSecurityProfile (NULL when unset). -EINVAL with `why`
 * naming the field and the fix when the profile cannot be used: an unknown
 * type, Custom without its custom section, or a Custom TLS 1.2 profile none
 * of whose ciphers etcd can use (etcd would fall back to Go's defaults, which
 * is not what anyone asked for) or without an ECDHE AES-128-GCM suite (Go's
 * HTTP/2 server requires one: etcd would exit at start). TLS 1.3 suites are never listed: Go does not
 * make them configurable. etcd's lowest minimum is TLS 1.2, so VersionTLS10
 * and VersionTLS11 give TLS1.2. */
int etcd_tls_from_profile(const cJSON *profile, EtcdTls *ret, char *why, size_t why_size);
void etcd_tls_done(EtcdTls *t);
