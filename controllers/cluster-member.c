/* ClusterMemberController: grows etcd one member at a time. It adds a
 * master's etcd as a learner only when every member is healthy, no other
 * learner or unstarted member exists, and the master's etcd container is
 * running but not ready (it waits in discover-etcd-initial-cluster for
 * exactly this); it promotes a learner once it has started, every member is
 * healthy and no rollout is restarting the learner's node, letting etcd say
 * whether it is in sync. The record is etcd's member list itself: after
 * a restart an existing learner is promoted, never added again. At most one
 * membership change per sync. A master whose Machine is being deleted is
 * leaving: it is not added, and its learner is not promoted (the
 * ClusterMemberRemovalController removes it). */
#include "base/json.h"
#include "controllers.h"
#include "etcd/quorum.h"
#include "facts.h"

/* Why a master's etcd container is not the one waiting to be added, or
 * NULL when it is: running and not ready (discover-etcd-initial-cluster
 * waits in it for exactly this). */
static const char *etcd_container_not_waiting(const KubeObject *pod)
{
        cJSON *cs;
        if (!pod)
                return "its etcd pod does not exist yet";
        JSON_ARRAY_FOREACH (cs, json_get_array(pod->json, "status.containerStatuses")) {
                if (!streq_ptr(json_get_string(cs, "name"), "etcd"))
                        continue;
                if (!json_get_object(cs, "state.running"))
                        return "its etcd container is not running";
                if (json_get_bool(cs, "ready", false))
                        return "its etcd container is ready without being a member";
                return NULL;
        }
        return "its etcd pod has no etcd container status yet";
}

/* The first member other than `except` that keeps a change from being made, described. */
static void describe_unsettled(const EtcdViewSnapshot *s, const EtcdMemberState *except, char *buf, size_t n)
{
        char hex[17];
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (m == except)
                        continue;
                const char *name = etcd_member_label(m, hex);
                if (!m->started)
                        (void) snprintf(buf, n, "member %s has not started", name);
                else if (m->is_learner)
                        (void) snprintf(buf, n, "member %s is a learner", name);
                else if (!m->healthy)
                        (void) snprintf(buf, n, "member %s is unhealthy (%s)", name,
                                        etcd_strerror(m->error));
                else
                        continue;
                return;
        }
        (void) snprintf(buf, n, "%s",
                        s->split_brain ? "the members disagree on the cluster ID"
                                       : "not every member is healthy");
}

static int sync_cluster_member(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        _cleanup_free_ const KubeObject **nodes = NULL;
        char why[256];
        size_t n = 0;
        int r;

        if (topology_holds_back(ctx, p))
                return 0;

        if (!s || s->error < 0 || !s->members) {
                plan_waiting(p, "MemberAddWaiting", "no member is added or promoted: %s",
                             op_etcd_unknown_why(s));
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0; /* nothing is decided without a view of etcd */
        }

        /* Promote first: a learner that started is the one change in flight. */
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (!m->is_learner)
                        continue;
                if (machine_pending_deletion(machine_of_member(ctx, m))) {
                        plan_waiting(p, "MemberAddWaiting",
                                     "learner %s not promoted: its Machine is being deleted",
                                     strempty(m->name));
                        return 0;
                }
                if (m->started && m->healthy) {
                        /* A promotion changes the quorum: like any change, only while every
                         * member is healthy (a stopped or frozen voter would be one fewer). */
                        if (!etcd_view_all_healthy(s)) {
                                describe_unsettled(s, m, why, sizeof why);
                                plan_waiting(p, "MemberAddWaiting", "learner %s not promoted while %s",
                                             strempty(m->name), why);
                                plan_requeue_after(p, 5 * USEC_PER_SEC);
                                return 0;
                        }
                        /* A node being rolled out restarts its etcd any moment. Promoted, it is a
                         * voter down then: harmless while the other voters (all healthy here) still
                         * make the quorum of the grown cluster, fatal for the first master (one of
                         * two voters). Then the rollout goes first. */
                        size_t voters = 0;
                        for (size_t k = 0; k < s->n_members; k++)
                                voters += !s->states[k].is_learner;
                        const KubeObject *node_obj = node_of_member(ctx, s, m);
                        const char *node = node_obj ? node_obj->name : NULL;
                        int64_t target = node && !etcd_quorum_holds(voters + 1, voters)
                                                 ? node_rollout_target(op_etcd_cr(ctx), node)
                                                 : 0;
                        if (target > 0) {
                                plan_waiting(
                                        p, "MemberAddWaiting",
                                        "learner %s not promoted while node %s rolls out revision %" PRId64
                                        " (it restarts its etcd)",
                                        strempty(m->name), node, target);
                                plan_requeue_after(p, 5 * USEC_PER_SEC);
                                return 0;
                        }
                        plan_etcd_promote(p, m->name, m->id);
                        return 0;
                }
                /* A learner that has not started yet: wait for its pod. */
                plan_waiting(p, "MemberAddWaiting", "learner %s not promoted: it has %s",
                             m->name                               ? m->name
                             : m->member && m->member->n_peer_urls ? m->member->peer_urls[0]
                                                                   : "?",
                             m->started ? "not answered /health yet" : "not started yet");
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        r = op_list_etcd_nodes(ctx, &nodes, &n);
        if (r < 0)
                return r;
        if (!master_joining(ctx, s))
                return 0; /* nothing to add: no need to say why */

        if (etcd_view_count_pending(s) > 0 || !etcd_view_all_healthy(s)) {
                describe_unsettled(s, NULL, why, sizeof why);
                plan_waiting(p, "MemberAddWaiting", "no member is added while %s", why);
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        const KubeObject *moved = voter_on_old_certificate(ctx, s);
        if (moved) {
                /* Its etcd would not let the new member in, nor the new member trust it. */
                plan_waiting(
                        p, "MemberAddWaiting",
                        "no member is added while the member of %s serves a certificate for the address "
                        "it had (its new revision, with one for %s, comes first)",
                        moved->name, strempty(node_internal_ip(moved)));
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        for (size_t k = 0; k < n; k++) {
                const char *ip = node_internal_ip(nodes[k]), *not_waiting;
                char peer_url[128];
                if (member_of_node(s, nodes[k]))
                        continue;
                if (machine_pending_deletion(machine_of_node(ctx, nodes[k]->name))) {
                        plan_waiting(p, "MemberAddWaiting", "%s not added: its Machine is being deleted",
                                     nodes[k]->name);
                        continue;
                }
                if (etcd_peer_url_for_ip(ip, peer_url, sizeof peer_url) < 0) {
                        plan_waiting(p, "MemberAddWaiting", "%s not added: %s", nodes[k]->name,
                                     ip ? "its InternalIP is no IP address" : "it has no InternalIP");
                        continue;
                }
                const KubeObject *pod = etcd_pod_of_node(ctx, nodes[k]->name);
                not_waiting = etcd_container_not_waiting(pod);
                if (not_waiting) {
                        plan_waiting(p, "MemberAddWaiting", "%s not added: %s", nodes[k]->name, not_waiting);
                        continue;
                }
                /* Its installer is about to replace the pod: the etcd joining now would be
                 * restarted mid-join, and the next one would find a data dir from an earlier
                 * membership to move aside. Once a pod of the new revision runs, it joins. */
                int64_t target = node_rollout_target(op_etcd_cr(ctx), nodes[k]->name);
                uint64_t rev = 0;
                const char *label = kube_object_label(pod, "revision");
                if (target > 0 && (!label || parse_uint64(label, &rev) < 0 || (int64_t) rev < target)) {
                        plan_waiting(p, "MemberAddWaiting",
                                     "%s not added while its etcd pod (revision %s) is replaced by revision "
                                     "%" PRId64,
                                     nodes[k]->name, label ? label : "unknown", target);
                        plan_requeue_after(p, 5 * USEC_PER_SEC);
                        continue;
                }
                plan_etcd_add_learner(p, nodes[k]->name, peer_url);
                return 0;
        }
        return 0;
}

static const WatchSpec *const watches[] = {
        OP_WATCH(W_INFRASTRUCTURES), OP_WATCH_ETCD_NODES,     OP_WATCH(W_ETCD_PODS), OP_WATCH(W_ETCD_CR),
        OP_WATCH_ETCD_MACHINES,      OP_WATCH(W_ETCD_SECRETS) /* voter_on_old_certificate */};

const ControllerSpec controller_cluster_member = {
        .name = "ClusterMemberController",
        .degraded_condition = "ClusterMemberControllerDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 10 * USEC_PER_SEC,
        .sync = sync_cluster_member,
};
