/* ClusterMemberController: grows etcd one member at a time. It adds a
 * master's etcd as a learner only when every member is healthy, no other
 * learner or unstarted member exists, and the master's etcd container is
 * running but not ready (it waits in discover-etcd-initial-cluster for
 * exactly this); it promotes a learner once it has started, letting etcd
 * say whether it is in sync. The record is etcd's member list itself: after
 * a restart an existing learner is promoted, never added again. At most one
 * membership change per sync. */
#include "base/json.h"
#include "controllers.h"
#include "facts.h"

/* The etcd container of the node's mirror pod runs and is not ready yet. */
static bool etcd_container_waiting(const KubeObject *pod)
{
        cJSON *cs;
        if (!pod)
                return false;
        JSON_ARRAY_FOREACH (cs, json_get_array(pod->json, "status.containerStatuses")) {
                if (!streq_ptr(json_get_string(cs, "name"), "etcd"))
                        continue;
                return json_get_object(cs, "state.running") && !json_get_bool(cs, "ready", false);
        }
        return false;
}

static int sync_cluster_member(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n = 0;
        int r;

        if (!s || s->error < 0 || !s->members) {
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0; /* nothing is decided without a view of etcd */
        }

        /* Promote first: a learner that started is the one change in flight. */
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (!m->is_learner)
                        continue;
                if (m->started && m->healthy) {
                        plan_etcd_promote(p, m->name, m->id);
                        return 0;
                }
                /* A learner that has not started yet: wait for its pod. */
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        if (etcd_view_count_pending(s) > 0 || !etcd_view_all_healthy(s)) {
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }

        r = op_list(ctx, W_MASTER_NODES, &nodes, &n);
        if (r < 0)
                return r;
        for (size_t k = 0; k < n; k++) {
                char peer_url[128];
                if (member_of_node(s, nodes[k]) ||
                    etcd_peer_url_for_ip(node_internal_ip(nodes[k]), peer_url, sizeof peer_url) < 0)
                        continue;
                if (!etcd_container_waiting(etcd_pod_of_node(ctx, nodes[k]->name)))
                        continue;
                plan_etcd_add_learner(p, nodes[k]->name, peer_url);
                return 0;
        }
        return 0;
}

static const WatchSpec watches[] = {WATCH_MASTER_NODES, WATCH_ETCD_PODS, WATCH_ETCD_CR};

const ControllerSpec controller_cluster_member = {
        .name = "ClusterMemberController",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 10 * USEC_PER_SEC,
        .sync = sync_cluster_member,
};
