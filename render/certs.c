/* Certificate profiles (certs.h). */
#include "certs.h"

#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/json.h"
#include "base/timeutil.h"
#include "netutil.h"

const char *const cert_signer_secrets[_CERT_SIGNER_MAX] = {
        [CERT_SIGNER_ETCD] = SECRET_ETCD_SIGNER,
        [CERT_SIGNER_METRIC] = SECRET_ETCD_METRIC_SIGNER,
};

const CertProfile cert_client_profiles[2] = {
        {.secret = SECRET_ETCD_CLIENT,
         .cn = "etcd-client",
         .org = "system:etcd",
         .org2 = "etcd-client",
         .legacy_cn = "etcd-client",
         .legacy_org = "system:etcd",
         .signer = CERT_SIGNER_ETCD,
         .usage = PKI_PROFILE_CLIENT},
        {.secret = SECRET_ETCD_METRIC_CLIENT,
         .cn = "etcd-metric",
         .org = "system:etcd",
         .org2 = "etcd-metric",
         .legacy_cn = "etcd-metric",
         .legacy_org = "system:etcd",
         .signer = CERT_SIGNER_METRIC,
         .usage = PKI_PROFILE_CLIENT},
};

const CertProfile cert_node_profiles[3] = {
        {.secret = "etcd-peer-",
         .legacy_cn = "system:etcd-peer:",
         .legacy_org = "system:etcd-peers",
         .signer = CERT_SIGNER_ETCD,
         .usage = PKI_PROFILE_SERVER_CLIENT,
         .per_node = true},
        {.secret = "etcd-serving-",
         .legacy_cn = "system:etcd-server:",
         .legacy_org = "system:etcd-servers",
         .signer = CERT_SIGNER_ETCD,
         .usage = PKI_PROFILE_SERVER_CLIENT,
         .per_node = true},
        {.secret = "etcd-serving-metrics-",
         .legacy_cn = "system:etcd-metric:",
         .legacy_org = "system:etcd-metrics",
         .signer = CERT_SIGNER_METRIC,
         .usage = PKI_PROFILE_SERVER_CLIENT,
         .per_node = true},
};

int cert_profile_secret(const CertProfile *p, const char *node, char *ret_secret, size_t secret_size)
{
        assert_return(p && ret_secret, -EINVAL);
        assert_return(p->per_node == !!node, -EINVAL);
        if (snprintf(ret_secret, secret_size, "%s%s", p->secret, strempty(node)) >= (int) secret_size)
                return -ENAMETOOLONG;
        return 0;
}

const char *cert_profile_cn(const CertProfile *p, const char *const *dns, const char *const *ips)
{
        const char *first = NULL;
        if (!p->per_node)
                return p->cn;
        for (size_t i = 0; dns && dns[i]; i++)
                if (!first || strcmp(dns[i], first) < 0)
                        first = dns[i];
        for (size_t i = 0; ips && ips[i]; i++)
                if (!first || strcmp(ips[i], first) < 0)
                        first = ips[i];
        return first;
}

/* `orgs` ("a,b", or NULL) holds exactly the O values `a` and `b` (either may be NULL), in any
 * order: two values of one RDN come back in DER order, not in the order they were given. */
static bool orgs_are(const char *orgs, const char *a, const char *b)
{
        char x[128], y[128];
        if (!a && !b)
                return !orgs || !*orgs;
        if (!a || !b)
                return streq_ptr(orgs, a ? a : b);
        (void) snprintf(x, sizeof x, "%s,%s", a, b);
        (void) snprintf(y, sizeof y, "%s,%s", b, a);
        return streq_ptr(orgs, x) || streq_ptr(orgs, y);
}

bool cert_subject_ok(const CertProfile *p, const char *node, const char *const *dns, const char *const *ips,
                     const char *cn, const char *orgs)
{
        char legacy_cn[256];
        if (streq_ptr(cn, cert_profile_cn(p, dns, ips)) && orgs_are(orgs, p->org, p->org2))
                return true;
        (void) snprintf(legacy_cn, sizeof legacy_cn, "%s%s", p->legacy_cn, strempty(node));
        return streq_ptr(cn, legacy_cn) && orgs_are(orgs, p->legacy_org, NULL);
}

void cert_node_sans(const char *const *node_ips, size_t n_node_ips, const char **dns, const char **ips)
{
        static const char *const names[CERT_NODE_DNS_NAMES] = {
                "localhost", "etcd.kube-system.svc", "etcd.kube-system.svc.cluster.local",
                "etcd.openshift-etcd.svc", "etcd.openshift-etcd.svc.cluster.local"};
        size_t n = 0;

        for (size_t k = 0; k < CERT_NODE_DNS_NAMES; k++)
                dns[k] = names[k];
        dns[CERT_NODE_DNS_NAMES] = NULL;
        ips[n++] = "127.0.0.1";
        ips[n++] = "::1";
        for (size_t i = 0; i < n_node_ips; i++) {
                bool dup = false;
                for (size_t k = 0; k < n; k++)
                        dup |= ip_text_equal(ips[k], node_ips[i]);
                if (!dup)
                        ips[n++] = node_ips[i];
        }
        ips[n] = NULL;
}

/* ---- certificate metadata ---- */

static const struct {
        const char *name; /* a Secret's name, or the prefix of a node certificate's */
        bool prefix;
        const char *description;
} descriptions[] = {
        {SECRET_ETCD_SIGNER, false,
         "Signs etcd's peer, serving and client certificates; trusted through etcd-ca-bundle."},
        {SECRET_ETCD_METRIC_SIGNER, false,
         "Signs etcd's metrics serving and metrics client certificates; trusted through "
         "etcd-metrics-ca-bundle."},
        {SECRET_ETCD_CLIENT, false,
         "Client certificate of the kube-apiserver and the etcd operator for etcd's client port."},
        {SECRET_ETCD_METRIC_CLIENT, false,
         "Client certificate with which monitoring scrapes etcd's metrics port."},
        {CM_ETCD_CA_BUNDLE, false,
         "CA bundle of etcd-signer: what etcd's clients and peers trust for its client and peer "
         "ports."},
        {CM_ETCD_METRICS_CA_BUNDLE, false,
         "CA bundle of etcd-metric-signer: what monitoring trusts for etcd's metrics port."},
        /* longest prefix first: etcd-serving-metrics- before etcd-serving- */
        {"etcd-serving-metrics-", true, "Serving certificate of one master's etcd metrics port (9979)."},
        {"etcd-serving-", true, "Serving certificate of one master's etcd client port (2379)."},
        {"etcd-peer-", true,
         "Peer certificate of one master's etcd member: member-to-member traffic on 2380, server and "
         "client use."},
};

const char *cert_description(const char *name)
{
        for (size_t i = 0; name && i < ELEMENTSOF(descriptions); i++)
                if (descriptions[i].prefix ? startswith(name, descriptions[i].name)
                                           : streq(name, descriptions[i].name))
                        return descriptions[i].description;
        return NULL;
}

static int str_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int set_annotation(cJSON *ann, const char *key, const char *value)
{
        cJSON_DeleteItemFromObjectCaseSensitive(ann, key);
        return value && !cJSON_AddStringToObject(ann, key, value) ? -ENOMEM : 0;
}

int cert_bundle_metadata_set(cJSON *obj, const char *name)
{
        cJSON *ann = json_ensure_object(obj, "metadata.annotations"),
              *labels = json_ensure_object(obj, "metadata.labels");
        int r;

        if (!ann || !labels)
                return -ENOMEM;
        if ((r = set_annotation(ann, CERT_ANN_COMPONENT, CERT_OWNING_COMPONENT)) < 0 ||
            (r = set_annotation(ann, CERT_ANN_DESCRIPTION, cert_description(name))) < 0 ||
            (r = set_annotation(labels, CERT_LABEL_MANAGED_TYPE, CERT_MANAGED_TYPE_CA_BUNDLE)) < 0)
                return r;
        return 0;
}

int cert_aggregate_metadata_set(cJSON *obj)
{
        cJSON *ann = json_ensure_object(obj, "metadata.annotations");
        return ann ? set_annotation(ann, CERT_ANN_COMPONENT, CERT_AGGREGATE_OWNING_COMPONENT) : -ENOMEM;
}

/* The string at metadata.<map>.<key>: keys hold dots, so no dotted path. */
static const char *meta_string(const cJSON *obj, const char *map, const char *key)
{
        return json_string(cJSON_GetObjectItemCaseSensitive(json_get_object(obj, map), key));
}

bool cert_metadata_current(const cJSON *obj, const char *bundle)
{
        if (!bundle)
                return streq_ptr(meta_string(obj, "metadata.annotations", CERT_ANN_COMPONENT),
                                 CERT_AGGREGATE_OWNING_COMPONENT);
        return streq_ptr(meta_string(obj, "metadata.annotations", CERT_ANN_COMPONENT),
                         CERT_OWNING_COMPONENT) &&
               streq_ptr(meta_string(obj, "metadata.annotations", CERT_ANN_DESCRIPTION),
                         cert_description(bundle)) &&
               streq_ptr(meta_string(obj, "metadata.labels", CERT_LABEL_MANAGED_TYPE),
                         CERT_MANAGED_TYPE_CA_BUNDLE);
}

/* The refresh period of a signer or a leaf as Go's time.Duration prints it (library-go writes
 * refresh.String()): 4.2 and 2.2 years, "36792h0m0s" and "19272h0m0s", as upstream's. */
static const char *refresh_period(bool is_ca, char *buf, size_t n)
{
        usec_t refresh = is_ca ? PKI_SIGNER_VALIDITY - PKI_SIGNER_REFRESH_WINDOW
                               : PKI_LEAF_VALIDITY - PKI_LEAF_REFRESH_WINDOW;
        (void) snprintf(buf, n, "%lluh0m0s", (unsigned long long) (refresh / (3600 * USEC_PER_SEC)));
        return buf;
}

int cert_annotations_set(cJSON *obj, const char *name, const char *cert_pem)
{
        _cleanup_(X509_freep) X509 *x = NULL;
        _cleanup_(pki_cert_info_freep) PkiCertInfo *info = NULL;
        _cleanup_free_ char *hosts = NULL;
        _cleanup_free_ const char **names = NULL;
        char after[64], before[64], refresh[32];
        size_t n = 0, len = 0;
        int r;

        assert_return(obj && cert_pem, -EINVAL);
        if ((r = pki_cert_from_pem(cert_pem, &x)) < 0 || (r = pki_cert_get_info(x, &info)) < 0)
                return r;
        cJSON *ann = json_ensure_object(obj, "metadata.annotations");
        if (!ann)
                return -ENOMEM;
        for (char **d = info->dns; *d; d++)
                n++;
        for (char **ip = info->ips; *ip; ip++)
                n++;
        if (!(names = calloc(n + 1, sizeof *names)))
                return -ENOMEM;
        n = 0;
        for (char **d = info->dns; *d; d++)
                len += strlen(names[n++] = *d) + 1;
        for (char **ip = info->ips; *ip; ip++)
                len += strlen(names[n++] = *ip) + 1;
        qsort(names, n, sizeof *names, str_cmp);
        if (n && !(hosts = calloc(len, 1)))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (i)
                        (void) strcat(hosts, ",");
                (void) strcat(hosts, names[i]);
        }
        if ((r = set_annotation(ann, CERT_ANN_NOT_AFTER,
                                format_rfc3339(after, sizeof after, info->not_after))) < 0 ||
            (r = set_annotation(ann, CERT_ANN_NOT_BEFORE,
                                format_rfc3339(before, sizeof before, info->not_before))) < 0 ||
            (r = set_annotation(ann, CERT_ANN_ISSUER, info->issuer_cn ? info->issuer_cn : info->issuer)) <
                    0 ||
            (r = set_annotation(ann, CERT_ANN_HOSTNAMES, hosts)) < 0 ||
            (r = set_annotation(ann, CERT_ANN_COMPONENT, CERT_OWNING_COMPONENT)) < 0 ||
            (r = set_annotation(ann, CERT_ANN_DESCRIPTION, cert_description(name))) < 0 ||
            (r = set_annotation(ann, CERT_ANN_REFRESH_PERIOD,
                                refresh_period(info->is_ca, refresh, sizeof refresh))) < 0)
                return r;
        return 0;
}

bool cert_annotations_current(const cJSON *obj, const char *cert_pem)
{
        _cleanup_(X509_freep) X509 *x = NULL;
        usec_t not_after = 0;
        char want[64], refresh[32];

        if (!cert_pem || pki_cert_from_pem(cert_pem, &x) < 0 || pki_cert_get_not_after(x, &not_after) < 0)
                return true; /* nothing to describe */
        bool is_ca = (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
        return streq_ptr(meta_string(obj, "metadata.annotations", CERT_ANN_NOT_AFTER),
                         format_rfc3339(want, sizeof want, not_after)) &&
               streq_ptr(meta_string(obj, "metadata.annotations", CERT_ANN_COMPONENT),
                         CERT_OWNING_COMPONENT) &&
               streq_ptr(meta_string(obj, "metadata.annotations", CERT_ANN_REFRESH_PERIOD),
                         refresh_period(is_ca, refresh, sizeof refresh));
}
