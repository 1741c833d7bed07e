/* TargetConfigController: renders the etcd static pod every master runs,
 * ConfigMap openshift-etcd/etcd-pod (key pod.yaml), and the restore pod,
 * ConfigMap restore-etcd-pod, from the embedded templates in
 * manifests/etcd-pod/ (the shape itself: render/staticpod.c). One spec serves every node: each container
 * with an `env` list gets NODE_<n>_IP / _ETCD_URL_HOST / _ETCD_NAME for every master with an InternalIP plus
 * the cluster-wide settings (endpoints, etcdctl TLS files, tuning from etcds/cluster and the
 * platform, cipher suites and minimum TLS version from the APIServer's TLS security profile), sorted so
 * equal inputs give equal bytes; the installer picks the node's set on the node. Changes here become a new
 * revision (RevisionController), so nothing is written unless the bytes
 * differ. Masters without an InternalIP are left out and reported in
 * TargetConfigNodeAddressDegraded. */
#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/names.h"
#include "controllers.h"
#include "facts.h"
#include "render/etcdenv.h"
#include "render/etcdscripts.h"
#include "render/netutil.h"
#include "render/staticpod.h"

#define CERTS "/etc/kubernetes/static-pod-certs"

static int str_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The service network decides the preferred family, as for the bootstrap member. */
static bool prefer_ipv6(const SyncContext *ctx)
{
        const KubeObject *net = op_get(ctx, W_NETWORKS, NULL, "cluster");
        cJSON *first = net ? cJSON_GetArrayItem(json_get_array(net->json, "spec.serviceNetwork"), 0) : NULL;
        return json_string(first) && strchr(json_string(first), ':');
}

/* The node's InternalIP of the preferred family, else its first InternalIP. */
static int node_ip(const KubeObject *node, bool v6, IpAddr *ret)
{
        bool found = false;
        cJSON *a;
        JSON_ARRAY_FOREACH (a, json_get_array(node->json, "status.addresses")) {
                IpAddr ip;
                if (!streq_ptr(json_get_string(a, "type"), "InternalIP") ||
                    ip_parse(json_get_string(a, "address"), &ip) < 0)
                        continue;
                if (!found || (ip.family == AF_INET6) == v6) {
                        bool preferred = (ip.family == AF_INET6) == v6;
                        *ret = ip;
                        found = true;
                        if (preferred)
                                break;
                }
        }
        return found ? 0 : -ENOENT;
}

static int add_endpoint(char ***urls, size_t *n, const char *ip_text)
{
        char host[INET6_ADDRSTRLEN + 2];
        IpAddr ip;
        if (!ip_text || ip_parse(ip_text, &ip) < 0)
                return 0; /* not an address: the endpoints controller's business */
        char **u = reallocarray(*urls, *n + 1, sizeof *u);
        if (!u)
                return -ENOMEM;
        *urls = u;
        u[*n] = strdup_printf("https://%s:2379", ip_url_host(&ip, host, sizeof host));
        if (!u[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* Sorted, de-duplicated "https://ip:2379,..." from etcd-endpoints. */
static int endpoints_join(const KubeObject *cm, bool with_bootstrap, char **ret)
{
        char **urls = NULL;
        size_t n = 0;
        Buf b = BUF_INIT(0);
        cJSON *d;
        int r = 0;

        if (with_bootstrap)
                r = add_endpoint(&urls, &n, bootstrap_ip_of(cm));
        JSON_ARRAY_FOREACH (d, json_get_object(cm->json, "data"))
                if (r >= 0 && cJSON_IsString(d))
                        r = add_endpoint(&urls, &n, d->valuestring);
        if (n > 0)
                qsort(urls, n, sizeof *urls, str_cmp);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (i > 0 && streq(urls[i], urls[i - 1]))
                        continue;
                if (b.len > 0)
                        r = buf_append(&b, ",", 1);
                if (r >= 0)
                        r = buf_append(&b, urls[i], strlen(urls[i]));
        }
        for (size_t i = 0; i < n; i++)
                free(urls[i]);
        free(urls);
        if (r < 0) {
                buf_free(&b);
                return r;
        }
        *ret = b.len ? buf_steal(&b) : strdup("");
        return *ret ? 0 : -ENOMEM;
}

/* etcd's --log-level from spec.logLevel, as upstream maps it: Debug, Trace and
 * TraceAll are "debug", everything else (Normal, unset) "info". */
static const char *etcd_log_level(const KubeObject *cr)
{
        const char *l = cr ? json_get_string(cr->json, "spec.logLevel") : NULL;
        return streq_ptr(l, "Debug") || streq_ptr(l, "Trace") || streq_ptr(l, "TraceAll") ? "debug" : "info";
}

/* Per-node variables for every master with an address; the names of those
 * without one go to *missing (comma-separated). */
static int node_env(const SyncContext *ctx, bool v6, EnvList *env, size_t *ret_masters, Buf *missing)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n = 0;
        int r = op_list_etcd_nodes(ctx, &nodes, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                const char *name = nodes[i]->name;
                char host[INET6_ADDRSTRLEN + 2], var[320];
                IpAddr ip;
                if (!dns1123_subdomain_is_valid(name) || node_ip(nodes[i], v6, &ip) < 0) {
                        if ((missing->len && buf_append(missing, ", ", 2) < 0) ||
                            buf_append(missing, name, strlen(name)) < 0)
                                return -ENOMEM;
                        continue;
                }
                _cleanup_free_ char *n_env = node_envvar_name(name);
                if (!n_env)
                        return -ENOMEM;
                /* Upstream escapes both alike: IPv6 in brackets. */
                (void) ip_url_host(&ip, host, sizeof host);
                (void) snprintf(var, sizeof var, "NODE_%s_IP", n_env);
                r = env_list_add(env, var, "%s", host);
                (void) snprintf(var, sizeof var, "NODE_%s_ETCD_URL_HOST", n_env);
                if (r >= 0)
                        r = env_list_add(env, var, "%s", host);
                (void) snprintf(var, sizeof var, "NODE_%s_ETCD_NAME", n_env);
                if (r >= 0)
                        r = env_list_add(env, var, "%s", name);
        }
        *ret_masters = n;
        return r;
}

static int cluster_env(const SyncContext *ctx, const KubeObject *endpoints, size_t masters,
                       const EtcdTls *tls, EnvList *env)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        bool slower = etcd_hardware_slower(ctx);
        _cleanup_free_ char *all = NULL, *members = NULL;
        int r;

        if ((r = endpoints_join(endpoints, true, &all)) < 0 ||
            (r = endpoints_join(endpoints, false, &members)) < 0)
                return r;
        if (!*all)
                return -ENODATA;
        /* Before the first master is published only the bootstrap member is there to talk to. */
        const char *etcdctl = *members ? members : all;
        unsigned learners = (unsigned) MAX(masters, (size_t) 1);
        EtcdMinor minor = op_etcd_minor(ctx);
        const struct {
                const char *name, *value;
        } fixed[] = {
                {"ETCDCTL_CACERT", CERTS "/configmaps/etcd-all-bundles/server-ca-bundle.crt"},
                {"ETCDCTL_CERT", CERTS "/secrets/etcd-all-certs/etcd-peer-NODE_NAME.crt"},
                {"ETCDCTL_KEY", CERTS "/secrets/etcd-all-certs/etcd-peer-NODE_NAME.key"},
                {"ETCD_DATA_DIR", "/var/lib/etcd"},
                {"ETCD_INITIAL_CLUSTER_STATE", "existing"},
                {"ETCD_TLS_MIN_VERSION", tls->min_version},
                /* Upstream's fixed set; etcd 3.4 warns about SOCKET_REUSE_ADDRESS (3.5+). */
                {"ETCD_ENABLE_PPROF", "true"},
                {"ETCD_SOCKET_REUSE_ADDRESS", "true"},
                /* Named as the image's etcd minor names them (3.6 dropped EXPERIMENTAL_). */
                {etcd_env_name(minor, "WARNING_APPLY_DURATION"), "200ms"},
                {etcd_env_name(minor, "WATCH_PROGRESS_NOTIFY_INTERVAL"), "5s"},
                {"ETCD_HEARTBEAT_INTERVAL", etcd_heartbeat_ms(slower)},
                {"ETCD_ELECTION_TIMEOUT", etcd_election_timeout_ms(slower)},
                {"ETCD_IMAGE", op_state(ctx)->etcd_image},
                {"ALL_ETCD_ENDPOINTS", all},
                {"ETCDCTL_ENDPOINTS", etcdctl},
        };
        for (size_t i = 0; i < ELEMENTSOF(fixed) && r >= 0; i++)
                r = env_list_add(env, fixed[i].name, "%s", fixed[i].value);
        /* None with a TLS 1.3 minimum: etcd refuses a list there. */
        if (r >= 0 && tls->cipher_suites)
                r = env_list_add(env, "ETCD_CIPHER_SUITES", "%s", tls->cipher_suites);
        if (r >= 0)
                r = env_list_add(env, "ETCD_QUOTA_BACKEND_BYTES", "%llu",
                                 (unsigned long long) etcd_backend_quota_bytes(cr));
        if (r >= 0)
                r = env_list_add(env, etcd_env_name(minor, "MAX_LEARNERS"), "%u", learners);
        /* On arm64 and s390x only, as upstream. */
        const char *arch = etcd_unsupported_arch(op_state(ctx)->machine);
        if (r >= 0 && arch)
                r = env_list_add(env, "ETCD_UNSUPPORTED_ARCH", "%s", arch);
        return r;
}

/* Writes the ConfigMap (taking `data`) only when its data differs: a write
 * of etcd-pod is a revision. */
static int want_configmap(const SyncContext *ctx, Plan *p, const char *name, cJSON *data)
{
        const KubeObject *have = op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, name);
        _cleanup_(cJSON_Deletep) cJSON *cm = kube_object_skeleton(&KUBE_CONFIGMAPS, NS_ETCD, name);
        if (!cm || !data) {
                cJSON_Delete(data);
                return -ENOMEM;
        }
        cJSON_AddItemToObject(cm, "data", data);
        if (have && cJSON_Compare(json_get_object(have->json, "data"), data, true))
                return 0;
        log_info("%s %s/%s", have ? "updating" : "creating", NS_ETCD, name);
        plan_apply(p, &KUBE_CONFIGMAPS, cm);
        return 1;
}

/* An etcd older than the members run is rolled out only once etcd's downgrade to it is
 * enabled and every member's storage has reached it (EtcdDowngradeController does that):
 * before, each member restarted on it would be refused by etcd and stop. Until then
 * etcd-pod and the rest keep what they have. When no member answered its status, a change
 * of the etcd image waits for one that does. True when held. */
static bool etcd_older_held(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        EtcdMinor image = op_etcd_minor(ctx);
        const char *minor = etcd_minor_name(image);
        char versions[512];

        switch (etcd_downgrade_state(s, image, versions, sizeof versions)) {
        case ETCD_DOWNGRADE_NEEDED:
        case ETCD_DOWNGRADE_MIGRATING:
                plan_waiting(p, "TargetConfigWaitingForDowngrade",
                             "etcd-pod for etcd %s (the release's etcd image) is not rendered until etcd's "
                             "downgrade to %s is enabled and every member's storage reached it (%s)",
                             minor, minor, versions);
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return true;
        case ETCD_DOWNGRADE_UNKNOWN: {
                const char *yaml =
                        object_data_string(op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_POD), "pod.yaml");
                if (!yaml || strstr(yaml, op_state(ctx)->etcd_image))
                        return false;
                plan_waiting(
                        p, "TargetConfigWaitingForEtcd",
                        "etcd-pod for the etcd image %s (etcd %s) waits until the members say which etcd "
                        "they run: %s",
                        op_state(ctx)->etcd_image, minor, op_etcd_unknown_why(s));
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return true;
        }
        case ETCD_DOWNGRADE_NONE:
        case ETCD_DOWNGRADE_READY:
        case ETCD_DOWNGRADE_STALE:
                return false;
        }
        return false;
}

static int sync_target_config(const SyncContext *ctx, Plan *p)
{
        const OperatorState *st = op_state(ctx);
        _cleanup_(env_list_done) EnvList env = {};
        _cleanup_(etcd_tls_done) EtcdTls tls = {};
        char why[320];
        Buf missing = BUF_INIT(0);
        size_t masters = 0;
        int r;

        if (!st || !template_is_image_ref(st->etcd_image) || !template_is_image_ref(st->operator_image))
                return log_error_errno(-EINVAL, "the etcd or operator image is not a "
                                                "valid image reference");
        if (etcd_older_held(ctx, p))
                return 0;
        const KubeObject *endpoints = op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_ENDPOINTS);
        if (!endpoints) {
                plan_waiting(p, "TargetConfigWaiting",
                             "etcd-pod not rendered: %s/etcd-endpoints does not exist", NS_ETCD);
                plan_requeue_after(p, 10 * USEC_PER_SEC);
                return 0;
        }
        /* A profile etcd cannot use holds every change to etcd-pod: the members keep
         * running on what they have, rather than on settings nobody chose. */
        r = etcd_tls_settings(ctx, &tls, why, sizeof why);
        if (r == -EINVAL) {
                plan_condition(p, "TargetConfigTLSProfileDegraded", "True", "UnusableTLSSecurityProfile",
                               "apiservers.config.openshift.io/cluster %s; etcd-pod is not rendered again "
                               "until then, the members keep their current settings",
                               why);
                return 0;
        }
        if (r < 0)
                return r;
        plan_condition(p, "TargetConfigTLSProfileDegraded", "False", "AsExpected",
                       "etcd uses the %s TLS security profile: minimum %s", tls.profile, tls.min_version);
        bool v6 = prefer_ipv6(ctx);
        r = node_env(ctx, v6, &env, &masters, &missing);
        if (r >= 0)
                r = cluster_env(ctx, endpoints, masters, &tls, &env);
        if (r == -ENODATA) {
                buf_free(&missing);
                plan_waiting(p, "TargetConfigWaiting",
                             "etcd-pod not rendered: %s/etcd-endpoints lists no endpoint yet", NS_ETCD);
                plan_requeue_after(p, 10 * USEC_PER_SEC);
                return 0;
        }
        if (r < 0) {
                buf_free(&missing);
                return r;
        }
        if (missing.len)
                plan_condition(p, "TargetConfigNodeAddressDegraded", "True", "NodeWithoutInternalIP",
                               "master nodes without an InternalIP get no etcd configuration: %.*s",
                               (int) missing.len, missing.data);
        else
                plan_condition(p, "TargetConfigNodeAddressDegraded", "False", "AsExpected",
                               "every master node has an InternalIP");
        buf_free(&missing);
        env_list_sort(&env);

        /* Listeners and local connections (docs/architecture.md, node-IP mode): one setting for all. */
        bool node_ip_mode = op_listen_on_node_ip(ctx);
        const char *listen_host = v6 ? "[::]" : "0.0.0.0", *local_host = v6 ? "[::1]" : "127.0.0.1";
        const char *listen_ip = v6 ? "::" : "0.0.0.0"; /* readyz takes a bare address */
        if (node_ip_mode) {
                listen_host = local_host = "$NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST";
                listen_ip = "$NODE_NODE_ENVVAR_NAME_IP";
        }
        /* The probes' failure thresholds, scaled as upstream's by the backend quota: 20 and 30
         * for every 8 GiB started (a 16 GiB quota: 40 and 60, liveness 200 s). */
        uint64_t quota = etcd_backend_quota_bytes(op_etcd_cr(ctx)), eighth = 8ULL << 30;
        unsigned long long scale = MAX((quota + eighth - 1) / eighth, 1ULL);
        char liveness[24], startup[24];
        (void) snprintf(liveness, sizeof liveness, "%llu", 20 * scale);
        (void) snprintf(startup, sizeof startup, "%llu", 30 * scale);
        EtcdMinor minor = op_etcd_minor(ctx); /* the minor the etcd image carries */
        const TemplateVar vars[] = {
                {"ETCD_IMAGE", st->etcd_image},
                {"OPERATOR_IMAGE", st->operator_image},
                {"LISTEN_HOST", listen_host},
                {"LOCAL_HOST", local_host},
                {"LISTEN_IP", listen_ip},
                {"ETCD_LOG_LEVEL", etcd_log_level(op_etcd_cr(ctx))},
                {"CORRUPT_CHECK_FLAG", etcd_corrupt_check_flag(minor)},
                {"ETCD_MINOR", etcd_minor_name(minor)},
                {"SNAPSHOT_COUNT_FLAG", etcd_snapshot_count_flag(minor)},
                {"PROXY_TLS_MIN_FLAG", etcd_proxy_tls_min_flag(minor)},
                {"LIVENESS_FAILURES", liveness},
                {"STARTUP_FAILURES", startup},
        };
        /* ConfigMap, key, template. */
        static const char *const pods[][3] = {
                {CM_ETCD_POD, "pod.yaml", "etcd-pod/pod.yaml"},
                {"restore-etcd-pod", "pod.yaml", "etcd-pod/restore-pod.yaml"},
                {"restore-etcd-pod", "quorum-restore-pod.yaml", "etcd-pod/quorum-restore-pod.yaml"},
        };
        const KubeObject *cr = op_etcd_cr(ctx);
        const char *force_reason =
                cr ? strempty(json_get_string(cr->json, "spec.forceRedeploymentReason")) : "";
        const char *version = st->operator_version ? st->operator_version : CEO_VERSION;
        cJSON *data = NULL;
        for (size_t i = 0; i < ELEMENTSOF(pods); i++) {
                _cleanup_free_ char *yaml = NULL;
                if (!data && !(data = cJSON_CreateObject()))
                        return -ENOMEM;
                r = staticpod_render(pods[i][2], vars, ELEMENTSOF(vars), &env, &yaml);
                if (r >= 0 && !cJSON_AddStringToObject(data, pods[i][1], yaml))
                        r = -ENOMEM;
                bool last_key = i + 1 == ELEMENTSOF(pods) || !streq(pods[i + 1][0], pods[i][0]);
                /* Upstream's other two keys: a new operator version or a forced redeployment
                 * changes etcd-pod itself, so the revision it makes carries them. */
                if (r >= 0 && last_key &&
                    (!cJSON_AddStringToObject(data, "forceRedeploymentReason", force_reason) ||
                     !cJSON_AddStringToObject(data, "version", version)))
                        r = -ENOMEM;
                if (r >= 0 && last_key)
                        r = want_configmap(ctx, p, pods[i][0], TAKE_PTR(data));
                if (r < 0) {
                        cJSON_Delete(data);
                        return r;
                }
        }
        /* The node's disaster-recovery scripts and their etcd.env. */
        if ((r = etcd_scripts_data(&env, &data)) < 0)
                return r;
        r = want_configmap(ctx, p, "etcd-scripts", data);
        return r < 0 ? r : 0;
}

static const WatchSpec *const watches[] = {OP_WATCH_ETCD_NODES,         OP_WATCH(W_ETCD_CR),
                                           OP_WATCH(W_ETCD_CONFIGMAPS), OP_WATCH(W_NETWORKS),
                                           OP_WATCH(W_INFRASTRUCTURES), OP_WATCH(W_APISERVERS)};

const ControllerSpec controller_target_config = {
        .name = "TargetConfigController",
        .degraded_condition = "TargetConfigControllerDegraded",
        /* Only for the etcd minor its members run (etcd_older_held). */
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 5 * 60 * USEC_PER_SEC,
        .sync = sync_target_config,
};
