/* EtcdEndpointsController: keeps ConfigMap openshift-etcd/etcd-endpoints,
 * the list of etcd servers the kube-apiserver uses: data is
 * hex(memberID) (%x, as upstream) -> IP for every started voting member but the bootstrap
 * one (learners reject the kube-apiserver's requests, unstarted members
 * answer nothing). The bootstrap member is the one named etcd-bootstrap or
 * on the IP of the installer's annotation. That annotation stays until the
 * bootstrap member has left the member list and kube-system/bootstrap says
 * "complete" (the last step of the teardown), and only goes beside a
 * non-empty list, so the kube-apiserver is never left without a server.
 * Writes: APPLY for data, a merge patch to remove the annotation (APPLY
 * merges annotations, so it cannot drop one).
 *
 * A failed or missing member list never shrinks what is published: with a
 * populated map, or an empty one beside the bootstrap annotation (the
 * kube-apiserver has the bootstrap member then), it stays as it is; only
 * with nothing at all to offer do we publish the masters' InternalIPs,
 * keyed by node name, as upstream falls back to node IPs. A member list
 * that yields no server never empties a populated map either. */
#include <inttypes.h>

#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"
#include "render/netutil.h"

/* From a good member list: every started voter but the bootstrap member. */
static int members_data(const SyncContext *ctx, const EtcdViewSnapshot *s, const char *bip, cJSON *data)
{
        char host[INET6_ADDRSTRLEN], hex[17];

        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                IpAddr a;
                if (is_bootstrap_member(ctx, m, bip) || m->is_learner || !m->started ||
                    m->member->n_peer_urls == 0 || url_host_ip(m->member->peer_urls[0], &a) < 0)
                        continue;
                /* Keys as upstream writes them: %x, no zero padding. */
                (void) snprintf(hex, sizeof hex, "%" PRIx64, m->id);
                if (!cJSON_AddStringToObject(data, hex, ip_to_string(&a, host, sizeof host)))
                        return -ENOMEM;
        }
        return 0;
}

static int nodes_data(const SyncContext *ctx, cJSON *data)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        char ip[INET6_ADDRSTRLEN];
        size_t n = 0;
        int r;

        r = op_list_etcd_nodes(ctx, &nodes, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const char *raw = node_internal_ip(nodes[i]);
                IpAddr a;
                if (!raw || ip_parse(raw, &a) < 0)
                        continue;
                if (!cJSON_AddStringToObject(data, nodes[i]->name, ip_to_string(&a, ip, sizeof ip)))
                        return -ENOMEM;
        }
        return 0;
}

static int plan_remove_annotation(Plan *p, const char *ip)
{
        _cleanup_(cJSON_Deletep) cJSON *patch = cJSON_CreateObject();
        cJSON *ann = patch ? json_ensure_object(patch, "metadata.annotations") : NULL;
        if (!ann || !cJSON_AddNullToObject(ann, BOOTSTRAP_IP_ANNOTATION))
                return -ENOMEM;
        log_info("bootstrap member gone and bootstrap complete: removing the bootstrap annotation (%s)", ip);
        /* APPLY merges annotations; only a merge patch with null removes one. */
        plan_patch(p, &KUBE_CONFIGMAPS, NS_ETCD, CM_ETCD_ENDPOINTS, KUBE_PATCH_MERGE, patch);
        plan_event(p, false, "BootstrapAnnotationRemoved",
                   "bootstrap member removed and bootstrap complete: removed the bootstrap IP %s from %s/%s",
                   ip, NS_ETCD, CM_ETCD_ENDPOINTS);
        return 0;
}

static int sync_etcd_endpoints(const SyncContext *ctx, Plan *p)
{
        const KubeObject *existing = op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_ENDPOINTS);
        const char *bip = bootstrap_ip(ctx);
        cJSON *have = existing ? json_get_object(existing->json, "data") : NULL;
        bool have_any = have && have->child;
        const EtcdViewSnapshot *s = op_etcd(ctx);
        bool view_ok = s && s->error >= 0 && s->members;
        bool remove_annotation = false;
        const char *source;
        int r;

        _cleanup_(cJSON_Deletep) cJSON *data = cJSON_CreateObject();
        if (!data)
                return -ENOMEM;
        if (view_ok) {
                r = members_data(ctx, s, bip, data);
                if (r < 0)
                        return r;
                source = "member list";
                /* The annotation goes only beside servers we just read: the kube-apiserver
                 * is never left with nothing. */
                remove_annotation = bip && data->child && bootstrap_phase(ctx, s) == BOOTSTRAP_OVER;
                if (!data->child && have_any) {
                        log_warning("the member list has no started voting member to publish; keeping %s",
                                    CM_ETCD_ENDPOINTS);
                        return 0;
                }
        } else {
                if (have_any || bip)
                        return 0; /* keep: a read failure never shrinks what is published */
                r = nodes_data(ctx, data);
                if (r < 0)
                        return r;
                source = "master node IPs (etcd member list unavailable)";
        }

        bool same = existing && (have ? cJSON_Compare(have, data, true) : !data->child);
        if (!same && (existing || data->child)) {
                _cleanup_(cJSON_Deletep) cJSON *cm =
                        kube_object_skeleton(&KUBE_CONFIGMAPS, NS_ETCD, CM_ETCD_ENDPOINTS);
                if (!cm || !cJSON_AddItemToObject(cm, "data", data))
                        return -ENOMEM;
                data = NULL; /* owned by cm now */
                _cleanup_free_ char *txt = json_print(cJSON_GetObjectItemCaseSensitive(cm, "data"));
                log_info("%s %s from the %s: %s", existing ? "updating" : "creating", CM_ETCD_ENDPOINTS,
                         source, strempty(txt));
                plan_apply(p, &KUBE_CONFIGMAPS, cm);
                plan_event(p, false, "EtcdEndpointsUpdated", "%s/%s now lists %s", NS_ETCD,
                           CM_ETCD_ENDPOINTS, strempty(txt));
        }
        return remove_annotation ? plan_remove_annotation(p, bip) : 0;
}

static const WatchSpec *const watches[] = {
        OP_WATCH(W_ETCD_CONFIGMAPS), OP_WATCH(W_KUBE_SYSTEM_CONFIGMAPS), OP_WATCH(W_KUBE_SYSTEM_EVENTS),
        OP_WATCH_ETCD_NODES,         OP_WATCH(W_INFRASTRUCTURES),        OP_WATCH(W_ETCD_CR)};

const ControllerSpec controller_etcd_endpoints = {
        .name = "EtcdEndpoints",
        .degraded_condition = "EtcdEndpointsDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 30 * USEC_PER_SEC,
        .sync = sync_etcd_endpoints,
};
