/* The bootstrap asset tree. */
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "assets.h"
#include "base/base64.h"
#include "base/contract.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/names.h"
#include "base/yaml-emit.h"
#include "base/yaml.h"
#include "bootstrap.h"
#include "certs.h"
#include "etcdenv.h"
#include "etcdversion.h"
#include "kube/object.h"
#include "payload.h"
#include "template.h"
#include "tlsprofile.h"

#define CERTS_SUBDIR "etc-kubernetes/static-pod-resources/etcd-member"

typedef struct CertSet {
        PkiPair *signer, *metric_signer;
        PkiPair *client, *metric_client;
        PkiPair *peer, *serving, *serving_metrics;
        bool reused;
} CertSet;

static void cert_set_done(CertSet *s)
{
        pki_pair_free(s->signer);
        pki_pair_free(s->metric_signer);
        pki_pair_free(s->client);
        pki_pair_free(s->metric_client);
        pki_pair_free(s->peer);
        pki_pair_free(s->serving);
        pki_pair_free(s->serving_metrics);
}

/* An existing signer is reused when it parses and is not about to expire;
 * one that exists but is unusable stops render rather than being replaced. */
static int load_signer(const RenderOptions *o, const char *name, PkiPair **ret, char **ret_error)
{
        _cleanup_free_ char *crt_path =
                strdup_printf("%s/%s/etcd-all-certs/%s.crt", o->output_dir, CERTS_SUBDIR, name);
        _cleanup_free_ char *key_path =
                strdup_printf("%s/%s/etcd-all-certs/%s.key", o->output_dir, CERTS_SUBDIR, name);
        _cleanup_free_ char *crt = NULL, *key = NULL, *reason = NULL;
        int r;

        if (!crt_path || !key_path)
                return -ENOMEM;
        r = read_full_file(crt_path, PKI_PEM_MAX, &crt, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0 || (r = read_full_file(key_path, PKI_PEM_MAX, &key, NULL)) < 0)
                return set_error(ret_error, -EINVAL,
                                 "%s: existing signer cannot be read (%s); move %s aside to start over",
                                 crt_path, strerror(-r), o->output_dir);
        PkiCheck check = {.refresh = PKI_SIGNER_REFRESH_WINDOW};
        r = pki_cert_check(crt, key, &check, o->now, &reason);
        if (r < 0)
                return r;
        if (r != PKI_VALID)
                return set_error(ret_error, -EINVAL,
                                 "%s: existing signer is %s (%s); move %s aside to start over", crt_path,
                                 pki_status_to_string(r), strempty(reason), o->output_dir);
        r = pki_pair_from_pem(crt, key, ret);
        if (r < 0)
                return set_error(ret_error, -EINVAL,
                                 "%s: existing signer does not match its key; move %s aside", crt_path,
                                 o->output_dir);
        return 1;
}

/* The i-th leaf of CertSet, in the order of certs.h: the client certificates,
 * then the bootstrap host's node certificates. */
static const CertProfile *leaf_profile(size_t i)
{
        return i < ELEMENTSOF(cert_client_profiles)
                       ? &cert_client_profiles[i]
                       : &cert_node_profiles[i - ELEMENTSOF(cert_client_profiles)];
}

static int issue(const RenderOptions *o, const CertSet *s, const CertProfile *p, PkiPair **ret)
{
        char ip[INET6_ADDRSTRLEN];
        const char *node_ips[] = {ip_to_string(&o->bootstrap_ip, ip, sizeof ip)};
        const char *dns[CERT_NODE_DNS_NAMES + 1], *ips[ELEMENTSOF(node_ips) + 3];

        cert_node_sans(node_ips, ELEMENTSOF(node_ips), dns, ips);
        PkiCertRequest req = {.profile = p->usage,
                              .cn = cert_profile_cn(p, dns, ips),
                              .org = p->org,
                              .org2 = p->org2,
                              .dns = p->per_node ? dns : NULL,
                              .ips = p->per_node ? ips : NULL,
                              .validity = PKI_LEAF_VALIDITY,
                              .key_type = o->key_type};
        return pki_cert_issue(p->signer == CERT_SIGNER_METRIC ? s->metric_signer : s->signer, &req, o->now,
                              ret);
}

static int make_certs(const RenderOptions *o, CertSet *s, char **ret_error)
{
        char cn[128];
        int r, a, b;

        if ((a = load_signer(o, cert_signer_secrets[CERT_SIGNER_ETCD], &s->signer, ret_error)) < 0 ||
            (b = load_signer(o, cert_signer_secrets[CERT_SIGNER_METRIC], &s->metric_signer, ret_error)) < 0)
                return a < 0 ? a : b;
        s->reused = a > 0 || b > 0;
        /* Signer names carry the creation time, as upstream's do. */
        if (!s->signer) {
                (void) snprintf(cn, sizeof cn, "openshift-etcd_etcd-signer@%llu",
                                (unsigned long long) (o->now / USEC_PER_SEC));
                if ((r = pki_ca_new(cn, PKI_SIGNER_VALIDITY, o->key_type, o->now, &s->signer)) < 0)
                        return r;
        }
        if (!s->metric_signer) {
                (void) snprintf(cn, sizeof cn, "openshift-etcd_etcd-metric-signer@%llu",
                                (unsigned long long) (o->now / USEC_PER_SEC));
                if ((r = pki_ca_new(cn, PKI_SIGNER_VALIDITY, o->key_type, o->now, &s->metric_signer)) < 0)
                        return r;
        }
        PkiPair **leaves[] = {&s->client, &s->metric_client, &s->peer, &s->serving, &s->serving_metrics};
        for (size_t i = 0; i < ELEMENTSOF(leaves); i++)
                if ((r = issue(o, s, leaf_profile(i), leaves[i])) < 0)
                        return r;
        return 0;
}

/* ---- writing the tree ---- */

static int mkdir_parents(const char *path)
{
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = 0;
                if (mkdir(copy, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        return 0;
}

static int write_out(const char *root, const char *rel, const char *data, mode_t mode)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s", root, rel);
        int r;
        if (!p)
                return -ENOMEM;
        if ((r = mkdir_parents(p)) < 0)
                return r;
        return write_file_atomic(p, data, strlen(data), mode);
}

/* Every 0000_20_ manifest of the payload, with image-references' literal pull specs replaced by
 * --etcd-image and --operator-image (render/payload.h). The monitoring manifests (0000_90_)
 * need CRDs the bootstrap control plane does not serve; the cluster-version operator applies
 * them later. */
static int write_payload(const RenderOptions *o, const char *root, char **ret_error)
{
        static const char prefix[] = "operator/0000_20_";
        const Asset *refs_asset = asset_find("operator/image-references");
        const PayloadImage images[] = {{"etcd", o->etcd_image},
                                       {"cluster-etcd-operator", o->operator_image}};
        _cleanup_(payload_refs_freep) PayloadRefs *refs = NULL;
        size_t n_files = 0;
        int r;

        if (!refs_asset)
                return set_error(ret_error, -ENOENT, "the binary carries no operator/image-references");
        r = payload_refs_parse(refs_asset->data, images, ELEMENTSOF(images), &refs, ret_error);
        if (r < 0)
                return r;
        for (const Asset *a = assets; a->path; a++) {
                /* A file of deletions (release.openshift.io/delete) is the CVO's alone: the
                 * installer's cluster-bootstrap would create what it names. */
                if (strncmp(a->path, prefix, strlen(prefix)) != 0 ||
                    strstr(a->data, "release.openshift.io/delete:"))
                        continue;
                _cleanup_free_ char *text = NULL, *rel = NULL;
                r = payload_substitute(refs, a->data, &text, NULL);
                if (r >= 0)
                        r = (rel = strdup_printf("manifests/%s", a->path + strlen("operator/"))) ? 0
                                                                                                 : -ENOMEM;
                if (r >= 0)
                        r = write_out(root, rel, text, 0644);
                if (r < 0)
                        return r;
                n_files++;
        }
        return n_files ? 0
                       : set_error(ret_error, -ENOENT, "the binary carries no operator/0000_20_ manifests");
}

/* mode: 0600 for anything that holds a private key (every Secret we write). */
static int write_yaml(const char *root, const char *rel, const cJSON *obj, mode_t mode)
{
        _cleanup_free_ char *y = yaml_emit_string(obj);
        return y ? write_out(root, rel, y, mode) : -ENOMEM;
}

static int add_b64(cJSON *data, const char *key, const char *value)
{
        _cleanup_free_ char *b = base64_encode(value, strlen(value));
        return b && cJSON_AddStringToObject(data, key, b) ? 0 : -ENOMEM;
}

typedef struct Pems {
        const char *name;
        char *crt, *key;
} Pems;

static int write_secret(const char *root, const Pems *p)
{
        _cleanup_(cJSON_Deletep) cJSON *s = kube_object_skeleton(&KUBE_SECRETS, NS_ETCD, p->name);
        _cleanup_free_ char *rel = strdup_printf("manifests/openshift-etcd-%s.yaml", p->name);
        cJSON *data;
        if (!s || !rel || !cJSON_AddStringToObject(s, "type", "kubernetes.io/tls") ||
            !(data = cJSON_AddObjectToObject(s, "data")) || add_b64(data, "tls.crt", p->crt) < 0 ||
            add_b64(data, "tls.key", p->key) < 0 || cert_annotations_set(s, p->name, p->crt) < 0)
                return -ENOMEM;
        return write_yaml(root, rel, s, 0600);
}

/* A ConfigMap of openshift-etcd with the metadata the operator's cert signer gives it (a CA
 * bundle's, or the aggregate's for etcd-all-bundles), so that it finds nothing to rewrite. */
static int write_configmap(const char *root, const char *name, const char *const *kv)
{
        _cleanup_(cJSON_Deletep) cJSON *c = kube_object_skeleton(&KUBE_CONFIGMAPS, NS_ETCD, name);
        _cleanup_free_ char *rel = strdup_printf("manifests/openshift-etcd-%s.yaml", name);
        cJSON *data;
        int r;
        if (!c || !rel)
                return -ENOMEM;
        r = streq(name, CM_ETCD_ALL_BUNDLES) ? cert_aggregate_metadata_set(c)
                                             : cert_bundle_metadata_set(c, name);
        if (r < 0)
                return r;
        if (!(data = cJSON_AddObjectToObject(c, "data")))
                return -ENOMEM;
        for (; kv[0]; kv += 2)
                if (!cJSON_AddStringToObject(data, kv[0], kv[1]))
                        return -ENOMEM;
        return write_yaml(root, rel, c, 0644);
}

/* etcd-endpoints: with a bootstrap host, empty but for the annotation naming the bootstrap
 * member's address (kube-apiserver adds it; the operator removes it with the member). Installed
 * in place, the member is the master's own from the start: its address is published as data, as
 * the EtcdEndpointsController would (the key is the address in unpadded base64, as upstream's
 * render writes it; the controller rewrites it under the member's ID once it runs). */
static int write_endpoints_cm(const char *root, const char *bootstrap_ip, bool in_place)
{
        _cleanup_(cJSON_Deletep) cJSON *c =
                kube_object_skeleton(&KUBE_CONFIGMAPS, NS_ETCD, CM_ETCD_ENDPOINTS);
        cJSON *data = c ? cJSON_AddObjectToObject(c, "data") : NULL;
        if (!data)
                return -ENOMEM;
        if (in_place) {
                _cleanup_free_ char *key = base64_encode(bootstrap_ip, strlen(bootstrap_ip));
                if (!key)
                        return -ENOMEM;
                key[strcspn(key, "=")] = '\0';
                if (!cJSON_AddStringToObject(data, key, bootstrap_ip))
                        return -ENOMEM;
        } else {
                cJSON *ann = cJSON_AddObjectToObject(json_get_object(c, "metadata"), "annotations");
                if (!ann || !cJSON_AddStringToObject(ann, BOOTSTRAP_IP_ANNOTATION, bootstrap_ip))
                        return -ENOMEM;
        }
        return write_yaml(root, "manifests/00_etcd-endpoints-cm.yaml", c, 0644);
}

/* The openshift-etcd namespace, with the assisted installer's delayed-bootstrap annotation
 * when its marker was found (the operator reads either of the two names; this is the newer). */
static int write_namespace(const char *root, bool delayed_ha)
{
        const Asset *a = asset_find("bootstrap/00_openshift-etcd-ns.yaml");
        _cleanup_(cJSON_Deletep) cJSON *ns = NULL;
        if (!a)
                return -ENOENT;
        if (!delayed_ha)
                return write_out(root, "manifests/00_openshift-etcd-ns.yaml", a->data, 0644);
        if (yaml_parse(a->data, strlen(a->data), &ns, NULL) < 0)
                return -EINVAL;
        cJSON *ann = json_get_object(ns, "metadata.annotations");
        if (!ann || !cJSON_AddStringToObject(ann, DELAYED_BOOTSTRAP_ANNOTATION, ""))
                return -ENOMEM;
        return write_yaml(root, "manifests/00_openshift-etcd-ns.yaml", ns, 0644);
}

static int write_pod(const RenderOptions *o, const char *root, char **ret_error)
{
        const Asset *a = asset_find("bootstrap/etcd-member-pod.yaml");
        char ip[INET6_ADDRSTRLEN], url_host[INET6_ADDRSTRLEN + 2], max_learners[16], token[64];
        _cleanup_free_ char *pod = NULL, *missing = NULL;
        _cleanup_(etcd_tls_done) EtcdTls tls = {};
        char why[320];
        int r;

        if (!a)
                return set_error(ret_error, -ENOENT, "internal: bootstrap pod template is not embedded");
        /* No cluster API yet, so no TLS security profile: the default, Intermediate. */
        r = etcd_tls_from_profile(NULL, &tls, why, sizeof why);
        if (r < 0)
                return set_error(ret_error, r, "internal: the Intermediate TLS profile: %s", why);
        (void) ip_to_string(&o->bootstrap_ip, ip, sizeof ip);
        (void) ip_url_host(&o->bootstrap_ip, url_host, sizeof url_host);
        bool v6 = o->bootstrap_ip.family == AF_INET6;
        (void) snprintf(max_learners, sizeof max_learners, "%u", MAX(o->inputs->control_plane_replicas, 1u));
        /* A cluster token unique to this cluster: member and cluster IDs derive from it. */
        (void) snprintf(token, sizeof token, "etcd-bootstrap-%llx", (unsigned long long) o->now);
        /* Installed in place, the node boots into this pod as its master's etcd (the installer
         * copies it to the node's etcd-pod.yaml): it is the node's member from the start, named
         * as the node, its static pod named as the revisions' ("etcd", mirrored as
         * etcd-<node>). With a bootstrap host: member etcd-bootstrap, removed after install. */
        bool in_place = o->inputs->bootstrap_in_place;
        /* Only on arm64 and s390x, as upstream: an entry of the etcd container's env, or nothing. */
        const char *arch = etcd_unsupported_arch(o->machine);
        _cleanup_free_ char *arch_env =
                arch ? strdup_printf("    - name: ETCD_UNSUPPORTED_ARCH\n      value: %s\n", arch)
                     : strdup("");
        if (!arch_env)
                return -ENOMEM;
        EtcdMinor minor = o->etcd_minor ? o->etcd_minor : ETCD_MINOR_DEFAULT;
        const TemplateVar vars[] = {
                {"POD_NAME", in_place ? "etcd" : "etcd-bootstrap-member"},
                {"MEMBER_NAME", in_place ? o->hostname : "etcd-bootstrap"},
                {"ETCD_IMAGE", o->etcd_image},
                {"HOSTNAME", o->hostname},
                {"URL_HOST", url_host},
                {"LISTEN_URL_HOST", o->listen_on_node_ip ? url_host
                                    : v6                 ? "[::]"
                                                         : "0.0.0.0"},
                {"LOCALHOST_URL_HOST", o->listen_on_node_ip ? url_host
                                       : v6                 ? "[::1]"
                                                            : "127.0.0.1"},
                {"CLUSTER_TOKEN", token},
                {"HEARTBEAT_INTERVAL", etcd_heartbeat_ms(o->slower_hardware)},
                {"ELECTION_TIMEOUT", etcd_election_timeout_ms(o->slower_hardware)},
                {"CIPHER_SUITES", tls.cipher_suites},
                {"TLS_MIN_VERSION", tls.min_version},
                {"QUOTA_BACKEND_BYTES", ETCD_DEFAULT_QUOTA_BYTES},
                {"MAX_LEARNERS", max_learners},
                {"MAX_LEARNERS_NAME", etcd_env_name(minor, "MAX_LEARNERS")},
                {"WATCH_PROGRESS_NAME", etcd_env_name(minor, "WATCH_PROGRESS_NOTIFY_INTERVAL")},
                {"WARNING_APPLY_NAME", etcd_env_name(minor, "WARNING_APPLY_DURATION")},
                {"UNSUPPORTED_ARCH_ENV", arch_env},
        };
        r = template_render(a->data, vars, ELEMENTSOF(vars), &pod, &missing);
        if (r == -ENOENT)
                return set_error(ret_error, -EINVAL, "internal: template placeholder ${%s} has no value",
                                 missing);
        if (r < 0)
                return r;
        /* It must still be a Pod after substitution. */
        _cleanup_(cJSON_Deletep) cJSON *j = NULL;
        _cleanup_free_ char *err = NULL;
        if (yaml_parse(pod, strlen(pod), &j, &err) < 0 || !streq_ptr(json_get_string(j, "kind"), "Pod"))
                return set_error(ret_error, -EINVAL,
                                 "internal: rendered bootstrap pod is not a valid Pod: %s", strempty(err));
        return write_out(root, "etc-kubernetes/manifests/etcd-member-pod.yaml", pod, 0644);
}

static int write_tree(const RenderOptions *o, const CertSet *s, const char *root, char **ret_error)
{
        char names[5][256], ip[INET6_ADDRSTRLEN];
        int r = 0;

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(names); i++)
                r = cert_profile_secret(leaf_profile(i), leaf_profile(i)->per_node ? o->hostname : NULL,
                                        names[i], sizeof names[i]);
        if (r < 0)
                return r;
        Pems p[] = {
                {.name = cert_signer_secrets[CERT_SIGNER_ETCD]},
                {.name = cert_signer_secrets[CERT_SIGNER_METRIC]},
                {.name = names[0]},
                {.name = names[1]},
                {.name = names[2]},
                {.name = names[3]},
                {.name = names[4]},
        };
        const PkiPair *pairs[] = {s->signer, s->metric_signer, s->client,         s->metric_client,
                                  s->peer,   s->serving,       s->serving_metrics};
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(p); i++)
                r = pki_pair_to_pem(pairs[i], &p[i].crt, &p[i].key);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(p); i++) {
                _cleanup_free_ char *dir = strdup_printf("%s/%s/etcd-all-certs", root, CERTS_SUBDIR);
                r = dir ? mkdir_parents(dir) : -ENOMEM;
                if (r >= 0 && mkdir(dir, 0755) < 0 && errno != EEXIST)
                        r = -errno;
                if (r >= 0)
                        r = pki_write_pair(dir, p[i].name, p[i].crt, p[i].key);
                if (r >= 0)
                        r = write_secret(root, &p[i]);
        }
        const char *ca = p[0].crt, *metrics_ca = p[1].crt;
        if (r >= 0)
                r = write_out(root, CERTS_SUBDIR "/ca.crt", ca, 0644);
        if (r >= 0)
                r = write_out(root, "tls/etcd-ca-bundle.crt", ca, 0644);
        if (r >= 0)
                r = write_out(root, "tls/etcd-client.crt", p[2].crt, 0644);
        if (r >= 0)
                r = write_out(root, "tls/etcd-client.key", p[2].key, 0600);
        /* The aggregates: one change, one rollout (node certificates only). */
        if (r >= 0) {
                _cleanup_(cJSON_Deletep) cJSON *all =
                        kube_object_skeleton(&KUBE_SECRETS, NS_ETCD, SECRET_ETCD_ALL_CERTS);
                cJSON *data = all ? cJSON_AddObjectToObject(all, "data") : NULL;
                r = data && cJSON_AddStringToObject(all, "type", "Opaque") ? cert_aggregate_metadata_set(all)
                                                                           : -ENOMEM;
                for (size_t i = 4; r >= 0 && i < ELEMENTSOF(p); i++) {
                        _cleanup_free_ char *kc = strdup_printf("%s.crt", p[i].name);
                        _cleanup_free_ char *kk = strdup_printf("%s.key", p[i].name);
                        r = kc && kk ? add_b64(data, kc, p[i].crt) : -ENOMEM;
                        if (r >= 0)
                                r = add_b64(data, kk, p[i].key);
                }
                if (r >= 0)
                        r = write_yaml(root, "manifests/openshift-etcd-etcd-all-certs.yaml", all, 0600);
        }
        if (r >= 0)
                r = write_configmap(root, CM_ETCD_CA_BUNDLE,
                                    (const char *const[]){"ca-bundle.crt", ca, NULL});
        if (r >= 0)
                r = write_configmap(root, CM_ETCD_METRICS_CA_BUNDLE,
                                    (const char *const[]){"ca-bundle.crt", metrics_ca, NULL});
        if (r >= 0)
                r = write_configmap(root, CM_ETCD_ALL_BUNDLES,
                                    (const char *const[]){"server-ca-bundle.crt", ca,
                                                          "metrics-ca-bundle.crt", metrics_ca, NULL});
        if (r >= 0)
                r = write_endpoints_cm(root, ip_to_string(&o->bootstrap_ip, ip, sizeof ip),
                                       o->inputs->bootstrap_in_place);
        if (r >= 0)
                r = write_namespace(root, o->delayed_ha && !o->inputs->bootstrap_in_place);
        /* The manifests that start the operator once the cluster runs: the release payload's
         * (manifests/operator/0000_20_*), images substituted as the release build does. */
        if (r >= 0)
                r = write_payload(o, root, ret_error);
        static const char *const statics[][2] = {
                {"bootstrap/openshift-etcd-svc.yaml", "manifests/openshift-etcd-svc.yaml"},
        };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(statics); i++) {
                const Asset *a = asset_find(statics[i][0]);
                r = a ? write_out(root, statics[i][1], a->data, 0644) : -ENOENT;
        }
        if (r >= 0)
                r = write_pod(o, root, ret_error);
        for (size_t i = 0; i < ELEMENTSOF(p); i++) {
                free(p[i].crt);
                if (p[i].key)
                        explicit_bzero(p[i].key, strlen(p[i].key));
                free(p[i].key);
        }
        return r;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path) < 0 ? -1 : 0;
}

static void rm_rf(const char *path)
{
        (void) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int render_bootstrap(const RenderOptions *o, char **ret_error)
{
        _cleanup_(cert_set_done) CertSet s = {};
        _cleanup_free_ char *tmp = NULL;
        struct stat st;
        int r;

        assert_return(o && o->output_dir && o->inputs, -EINVAL);
        if (!dns1123_subdomain_is_valid(o->hostname))
                return set_error(
                        ret_error, -EINVAL,
                        "--hostname: \"%s\" is not a DNS-1123 name (lowercase letters, digits, '-' and '.')",
                        strempty(o->hostname));
        if (!template_is_image_ref(o->operator_image))
                return set_error(ret_error, -EINVAL, "--operator-image: \"%s\" is not an image reference",
                                 strempty(o->operator_image));
        if (!template_is_image_ref(o->etcd_image))
                return set_error(ret_error, -EINVAL,
                                 "--etcd-image: \"%s\" is not an image reference such as "
                                 "quay.io/openshift/etcd@sha256:...",
                                 strempty(o->etcd_image));
        if (stat(o->output_dir, &st) == 0 && !S_ISDIR(st.st_mode))
                return set_error(ret_error, -EINVAL, "--asset-output-dir: %s exists and is not a directory",
                                 o->output_dir);

        r = make_certs(o, &s, ret_error);
        if (r < 0)
                return r;
        tmp = strdup_printf("%s.tmp-XXXXXX", o->output_dir);
        if (!tmp)
                return -ENOMEM;
        if ((r = mkdir_parents(tmp)) < 0)
                return set_error(ret_error, r, "--asset-output-dir: cannot create the parent of %s: %s",
                                 o->output_dir, strerror(-r));
        if (!mkdtemp(tmp))
                return set_error(ret_error, -errno, "cannot create %s: %m", tmp);
        /* mkdtemp made it 0700, and so it stays: the tree holds the signers' keys. */
        r = write_tree(o, &s, tmp, ret_error);
        if (r < 0) {
                rm_rf(tmp);
                if (ret_error && !*ret_error)
                        (void) set_error(ret_error, r, "writing the assets failed: %s", strerror(-r));
                return r;
        }
        /* Swap the finished tree into place; the old one (if any) goes only after. */
        if (rename(tmp, o->output_dir) < 0) {
                if (errno != ENOTEMPTY && errno != EEXIST) {
                        r = -errno;
                        rm_rf(tmp);
                        return set_error(ret_error, r, "cannot move the assets to %s: %s", o->output_dir,
                                         strerror(-r));
                }
                if (renameat2(AT_FDCWD, tmp, AT_FDCWD, o->output_dir, RENAME_EXCHANGE) < 0) {
                        r = -errno;
                        rm_rf(tmp);
                        return set_error(ret_error, r, "cannot replace %s: %s", o->output_dir, strerror(-r));
                }
                rm_rf(tmp); /* now the previous tree, whose signers we reused */
        }
        log_info("rendered bootstrap assets into %s (%s signers)", o->output_dir,
                 s.reused ? "reused" : "new");
        return 0;
}
