/* HostEndpointsController: keeps Endpoints openshift-etcd/host-etcd-2, the
 * seed contract older kube-apiserver operators read: one address per master
 * node (its first InternalIP, hostname and nodeName the node's name), port
 * 2379 named "etcd", sorted by node name. The installer's bootstrap
 * annotation is mirrored from the etcd-endpoints ConfigMap, which owns it:
 * present there, present here with the same IP; removed there, removed here.
 * Without the ConfigMap we cannot tell, so the annotation stays as it is.
 * With no master InternalIP at all the object is left untouched and the
 * sync fails (HostEndpointsDegraded): an empty address list would cut every
 * reader off etcd. An address the API refuses in Endpoints (loopback,
 * link-local, unspecified: kube-apiserver's ValidateNonSpecialIP) is left
 * out, since writing it would fail every sync; no real master has one, but
 * the loopback test clusters' masters all do, and there the object holds no
 * address at all. */
#include "base/json.h"
#include "base/log.h"
#include "base/names.h"
#include "controllers.h"
#include "facts.h"
#include "render/netutil.h"

#define HOST_ENDPOINTS_NAME "host-etcd-2"

/* {"addresses":[...],"ports":[...]} for the masters that have an InternalIP;
 * ret_refused counts the InternalIPs the API would refuse. */
static cJSON *build_subset(const SyncContext *ctx, size_t *ret_n, size_t *ret_refused)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n_nodes = 0, n = 0, refused = 0;
        char ip[INET6_ADDRSTRLEN];

        if (op_list_etcd_nodes(ctx, &nodes, &n_nodes) < 0)
                return NULL;
        _cleanup_(cJSON_Deletep) cJSON *subset = cJSON_CreateObject();
        cJSON *addrs = cJSON_AddArrayToObject(subset, "addresses");
        cJSON *ports = cJSON_AddArrayToObject(subset, "ports");
        cJSON *port = cJSON_CreateObject();
        if (!addrs || !ports || !port || !cJSON_AddItemToArray(ports, port) ||
            !cJSON_AddStringToObject(port, "name", "etcd") || !cJSON_AddNumberToObject(port, "port", 2379) ||
            !cJSON_AddStringToObject(port, "protocol", "TCP"))
                return NULL;

        /* op_list sorts by key, and a Node's key is its name. */
        for (size_t i = 0; i < n_nodes; i++) {
                const char *raw = node_internal_ip(nodes[i]);
                IpAddr a;
                if (!raw || ip_parse(raw, &a) < 0) {
                        log_debug("master %s has no usable InternalIP, left out", nodes[i]->name);
                        continue;
                }
                if (ip_is_special(&a)) {
                        log_debug("master %s: InternalIP %s cannot be an Endpoints address, left out",
                                  nodes[i]->name, raw);
                        refused++;
                        continue;
                }
                /* Endpoints hostnames must be DNS-1123 labels; an FQDN node name is not one. */
                cJSON *e = cJSON_CreateObject();
                if (!e || !cJSON_AddItemToArray(addrs, e) ||
                    !cJSON_AddStringToObject(e, "ip", ip_to_string(&a, ip, sizeof ip)) ||
                    (dns1123_label_is_valid(nodes[i]->name) &&
                     !cJSON_AddStringToObject(e, "hostname", nodes[i]->name)) ||
                    !cJSON_AddStringToObject(e, "nodeName", nodes[i]->name))
                        return NULL;
                n++;
        }
        *ret_n = n;
        *ret_refused = refused;
        return TAKE_PTR(subset);
}

static cJSON *build_endpoints(cJSON *subset, const char *bootstrap_ip)
{
        _cleanup_(cJSON_Deletep) cJSON *ep =
                kube_object_skeleton(&KUBE_ENDPOINTS, NS_ETCD, HOST_ENDPOINTS_NAME);
        cJSON *md = ep ? json_get_object(ep, "metadata") : NULL;
        cJSON *subsets = ep ? cJSON_AddArrayToObject(ep, "subsets") : NULL;
        if (!md || !subsets)
                return NULL;
        if (bootstrap_ip) {
                cJSON *ann = cJSON_AddObjectToObject(md, "annotations");
                if (!ann || !cJSON_AddStringToObject(ann, BOOTSTRAP_IP_ANNOTATION, bootstrap_ip))
                        return NULL;
        }
        if (!subset) /* no address the API accepts: a subset needs one */
                return TAKE_PTR(ep);
        cJSON *copy = cJSON_Duplicate(subset, true);
        if (!copy || !cJSON_AddItemToArray(subsets, copy)) {
                cJSON_Delete(copy);
                return NULL;
        }
        return TAKE_PTR(ep);
}

static int sync_host_endpoints(const SyncContext *ctx, Plan *p)
{
        const KubeObject *existing = op_get(ctx, W_ETCD_ENDPOINTS, NS_ETCD, HOST_ENDPOINTS_NAME);
        const KubeObject *cm = op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_ENDPOINTS);
        size_t n = 0, refused = 0;

        _cleanup_(cJSON_Deletep) cJSON *subset = build_subset(ctx, &n, &refused);
        if (!subset)
                return -ENOMEM;
        if (n == 0 && refused == 0) {
                log_warning("no master node has an InternalIP; %s left as it is", HOST_ENDPOINTS_NAME);
                plan_event(p, true, "HostEndpointsNoAddresses",
                           "no master node has an InternalIP, %s/%s is left as it is", NS_ETCD,
                           HOST_ENDPOINTS_NAME);
                return -ENODATA;
        }

        /* The ConfigMap owns the annotation; without it, keep what we have. */
        const char *have_ip = bootstrap_ip_of(existing);
        const char *want_ip = cm ? bootstrap_ip_of(cm) : have_ip;

        _cleanup_(cJSON_Deletep) cJSON *desired = build_endpoints(n > 0 ? subset : NULL, want_ip);
        if (!desired)
                return -ENOMEM;
        /* The API leaves an empty subsets list out of what it returns. */
        cJSON *have_subsets = existing ? json_get_array(existing->json, "subsets") : NULL;
        cJSON *want_subsets = json_get_array(desired, "subsets");
        bool same = existing &&
                    (have_subsets ? cJSON_Compare(have_subsets, want_subsets, true)
                                  : cJSON_GetArraySize(want_subsets) == 0) &&
                    (!want_ip || streq_ptr(have_ip, want_ip));
        if (!same) {
                log_info("%s %s: %zu master address(es)%s%s", existing ? "updating" : "creating",
                         HOST_ENDPOINTS_NAME, n, want_ip ? ", bootstrap " : "", strempty(want_ip));
                plan_apply(p, &KUBE_ENDPOINTS, desired);
        }
        if (have_ip && !want_ip) {
                /* APPLY merges annotations; only a merge patch with null removes one. */
                _cleanup_(cJSON_Deletep) cJSON *patch = cJSON_CreateObject();
                cJSON *ann = patch ? json_ensure_object(patch, "metadata.annotations") : NULL;
                if (!ann || !cJSON_AddNullToObject(ann, BOOTSTRAP_IP_ANNOTATION))
                        return -ENOMEM;
                log_info("removing the bootstrap annotation (%s) from %s", have_ip, HOST_ENDPOINTS_NAME);
                plan_patch(p, &KUBE_ENDPOINTS, NS_ETCD, HOST_ENDPOINTS_NAME, KUBE_PATCH_MERGE, patch);
                plan_event(p, false, "BootstrapAnnotationRemoved",
                           "removed the bootstrap annotation (%s) from %s/%s", have_ip, NS_ETCD,
                           HOST_ENDPOINTS_NAME);
        }
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH_ETCD_NODES, OP_WATCH(W_INFRASTRUCTURES),
                                           OP_WATCH(W_ETCD_ENDPOINTS), OP_WATCH(W_ETCD_CONFIGMAPS)};

const ControllerSpec controller_host_endpoints = {
        .name = "HostEndpoints",
        .degraded_condition = "HostEndpointsDegraded",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_host_endpoints,
};
