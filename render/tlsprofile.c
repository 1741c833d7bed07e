/* The TLS security profile as etcd's settings (tlsprofile.h). The profile
 * lists are openshift/api's (config/v1 TLSProfiles), the name table is
 * library-go's OpenSSL-to-IANA one; both are facts of the platform, kept here
 * in one place. */
#include "tlsprofile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/macro.h"

#define TLS13_SUITES "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"
#define INTERMEDIATE_TLS12                                                                               \
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", \
                "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305",                          \
                "ECDHE-RSA-CHACHA20-POLY1305"

static const char *const old_ciphers[] = {
        TLS13_SUITES,
        INTERMEDIATE_TLS12,
        "DHE-RSA-AES128-GCM-SHA256",
        "DHE-RSA-AES256-GCM-SHA384",
        "DHE-RSA-CHACHA20-POLY1305",
        "ECDHE-ECDSA-AES128-SHA256",
        "ECDHE-RSA-AES128-SHA256",
        "ECDHE-ECDSA-AES128-SHA",
        "ECDHE-RSA-AES128-SHA",
        "ECDHE-ECDSA-AES256-SHA384",
        "ECDHE-RSA-AES256-SHA384",
        "ECDHE-ECDSA-AES256-SHA",
        "ECDHE-RSA-AES256-SHA",
        "DHE-RSA-AES128-SHA256",
        "DHE-RSA-AES256-SHA256",
        "AES128-GCM-SHA256",
        "AES256-GCM-SHA384",
        "AES128-SHA256",
        "AES256-SHA256",
        "AES128-SHA",
        "AES256-SHA",
        "DES-CBC3-SHA",
};
static const char *const intermediate_ciphers[] = {TLS13_SUITES, INTERMEDIATE_TLS12};
static const char *const modern_ciphers[] = {TLS13_SUITES};

static const struct {
        const char *type;
        const char *const *ciphers;
        size_t n;
        const char *min_version;
} profiles[] = {
        {"Old", old_ciphers, ELEMENTSOF(old_ciphers), "VersionTLS10"},
        {"Intermediate", intermediate_ciphers, ELEMENTSOF(intermediate_ciphers), "VersionTLS12"},
        {"Modern", modern_ciphers, ELEMENTSOF(modern_ciphers), "VersionTLS13"},
};

/* OpenSSL name -> IANA name. The TLS 1.3 suites are named alike in both, and listed first in
 * the Old and Intermediate profiles, as library-go's table and upstream's ETCD_CIPHER_SUITES have them:
 * etcd (3.5 and 3.6) and its grpc-proxy take the names (Go does not let TLS 1.3 suites be
 * chosen, so they change nothing on the wire), and a list that names them is upstream's
 * byte for byte. With TLS 1.3 as the minimum, etcd takes no list at all (below). */
static const char *const openssl_to_iana[][2] = {
        {"TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"},
        {"TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"},
        {"TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256"},
        {"ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
        {"ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
        {"ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
        {"ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
        {"ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
        {"ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
        {"ECDHE-ECDSA-AES128-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"},
        {"ECDHE-RSA-AES128-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"},
        {"AES128-GCM-SHA256", "TLS_RSA_WITH_AES_128_GCM_SHA256"},
        {"AES256-GCM-SHA384", "TLS_RSA_WITH_AES_256_GCM_SHA384"},
        {"AES128-SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA256"},
        {"ECDHE-ECDSA-AES128-SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"},
        {"ECDHE-RSA-AES128-SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"},
        {"ECDHE-ECDSA-AES256-SHA", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"},
        {"ECDHE-RSA-AES256-SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"},
        {"AES128-SHA", "TLS_RSA_WITH_AES_128_CBC_SHA"},
        {"AES256-SHA", "TLS_RSA_WITH_AES_256_CBC_SHA"},
        {"DES-CBC3-SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA"},
};

/* The table row of an OpenSSL name, or -1 when etcd has no such suite. */
static int iana_index(const char *openssl)
{
        for (size_t i = 0; openssl && i < ELEMENTSOF(openssl_to_iana); i++)
                if (streq(openssl_to_iana[i][0], openssl))
                        return (int) i;
        return -1;
}

/* VersionTLS10..13 as etcd's --tls-min-version; NULL for anything else. */
static const char *etcd_min_version(const char *v)
{
        if (!v || streq(v, "VersionTLS10") || streq(v, "VersionTLS11") || streq(v, "VersionTLS12"))
                return "TLS1.2";
        if (streq(v, "VersionTLS13"))
                return "TLS1.3";
        return NULL;
}

/* The IANA names of `ciphers` etcd can use, in their order, each once; NULL
 * when there is none. */
static int join_suites(const char *const *ciphers, size_t n, char **ret)
{
        bool listed[ELEMENTSOF(openssl_to_iana)] = {};
        Buf b = BUF_INIT(0);
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                int k = iana_index(ciphers[i]);
                if (k < 0 || listed[k])
                        continue;
                listed[k] = true;
                if (b.len)
                        r = buf_append(&b, ",", 1);
                if (r >= 0)
                        r = buf_append(&b, openssl_to_iana[k][1], strlen(openssl_to_iana[k][1]));
        }
        if (r < 0) {
                buf_free(&b);
                return r;
        }
        *ret = buf_steal(&b);
        return 0;
}

int etcd_tls_from_profile(const cJSON *profile, EtcdTls *ret, char *why, size_t why_size)
{
        const char *type = json_get_string(profile, "type");
        const char *const *ciphers = intermediate_ciphers;
        size_t n = ELEMENTSOF(intermediate_ciphers);
        const char *min = "VersionTLS12", *name = "Intermediate";
        _cleanup_free_ char *custom_list = NULL;

        assert_return(ret && why && why_size > 0, -EINVAL);
        why[0] = '\0';
        if (type && streq(type, "Custom")) {
                const cJSON *custom = json_get_object(profile, "custom");
                const cJSON *list = json_get_array(custom, "ciphers");
                if (!custom) {
                        (void) snprintf(why, why_size,
                                        "spec.tlsSecurityProfile: type Custom without custom; add "
                                        "custom.ciphers and custom.minTLSVersion, or choose Old, "
                                        "Intermediate or Modern");
                        return -EINVAL;
                }
                size_t count = (size_t) cJSON_GetArraySize(list), k = 0;
                _cleanup_free_ const char **names = calloc(count + 1, sizeof *names);
                if (!names)
                        return -ENOMEM;
                const cJSON *c;
                JSON_ARRAY_FOREACH (c, list)
                        if (k < count && cJSON_IsString(c))
                                names[k++] = c->valuestring;
                int r = join_suites(names, k, &custom_list);
                if (r < 0)
                        return r;
                min = json_get_string(custom, "minTLSVersion");
                name = "Custom";
                ciphers = NULL;
        } else if (type && *type) {
                size_t i = 0;
                while (i < ELEMENTSOF(profiles) && !streq(profiles[i].type, type))
                        i++;
                if (i == ELEMENTSOF(profiles)) {
                        (void) snprintf(why, why_size,
                                        "spec.tlsSecurityProfile.type: %s is not a profile; use Old, "
                                        "Intermediate, Modern or Custom",
                                        type);
                        return -EINVAL;
                }
                ciphers = profiles[i].ciphers;
                n = profiles[i].n;
                min = profiles[i].min_version;
                name = profiles[i].type;
        }
        const char *etcd_min = etcd_min_version(min);
        if (!etcd_min) {
                (void) snprintf(why, why_size,
                                "spec.tlsSecurityProfile.custom.minTLSVersion: %s is not a TLS version; "
                                "use VersionTLS12 or VersionTLS13",
                                min);
                return -EINVAL;
        }
        char *suites = TAKE_PTR(custom_list);
        if (ciphers) {
                int r = join_suites(ciphers, n, &suites);
                if (r < 0)
                        return r;
        }
        if (streq(etcd_min, "TLS1.3")) {
                free(suites);
                suites = NULL;
        } else if (!suites || !strstr(suites, "_WITH_")) {
                free(suites);
                (void) snprintf(why, why_size,
                                "spec.tlsSecurityProfile.custom.ciphers: none is a TLS 1.2 cipher etcd "
                                "can use; add ECDHE-ECDSA-AES128-GCM-SHA256 or "
                                "ECDHE-RSA-AES128-GCM-SHA256, or set minTLSVersion VersionTLS13");
                return -EINVAL;
        } else if (!strstr(suites, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256") &&
                   !strstr(suites, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")) {
                /* etcd serves clients over HTTP/2, and Go's HTTP/2 server refuses a suite
                 * list without one of these: etcd would exit at start ("http2:
                 * TLSConfig.CipherSuites is missing an HTTP/2-required AES_128_GCM_SHA256
                 * cipher"), one master after the other. */
                (void) snprintf(why, why_size,
                                "spec.tlsSecurityProfile.custom.ciphers: etcd cannot start without "
                                "ECDHE-ECDSA-AES128-GCM-SHA256 or ECDHE-RSA-AES128-GCM-SHA256 (HTTP/2, "
                                "which etcd serves its clients with, requires one); add one, or set "
                                "minTLSVersion VersionTLS13");
                free(suites);
                return -EINVAL;
        }
        *ret = (EtcdTls){.cipher_suites = suites, .min_version = etcd_min, .profile = name};
        return 0;
}

void etcd_tls_done(EtcdTls *t)
{
        if (!t)
                return;
        free(t->cipher_suites);
        t->cipher_suites = NULL;
}
