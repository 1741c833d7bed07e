/* ClusterMemberRemovalController: removes the members of masters (and arbiters,
 * op_list_etcd_machines) that are leaving, where the Machine API runs (upstream's controller of the same
 * name, made stricter). Nothing happens before the bootstrap is over. One
 * removal per sync, in this order:
 *
 *  1. a learner (or a member never started) whose Machine is being deleted:
 *     it has no vote, so its removal costs no quorum;
 *  2. a voter whose Machine is being deleted, or that has neither a Machine
 *     nor a Node (a dead master deleted by hand), unhealthy ones first:
 *     - an unhealthy one goes when the voters left would all be healthy and
 *       keep quorum (it serves nothing now, so the cluster loses no margin,
 *       and a replacement can then be added, which needs every member
 *       healthy);
 *     - a healthy one goes only once a replacement has joined (more voters
 *       than the install-config's controlPlane.replicas) and every member is
 *       healthy; a healthy member without Machine or Node is never removed
 *       (upstream raises the same refusal);
 *  and only while the static pod revision is stable (a rollout restarts
 *  members at any moment), no learner is being added, and etcd-endpoints
 *  publishes exactly the started voters (the kube-apiserver follows it).
 * A leader is not removed while it leads: leadership moves to the most
 * caught-up healthy voter first (unless that failed in the last 5 minutes).
 * Each refusal says what it waits for.
 *
 * With or without the Machine API: the member of a master whose address
 * changed (moved_master_of_member: the Node named as the member has other
 * InternalIPs now) is replaced, not updated in place. Its etcd cannot serve
 * on the old address, and on the new one it needs the new certificates and
 * static pod the address change rolls out; that pod's discover finds no
 * member with the new peer URL and moves the old data aside. So the stale
 * member is removed once it is unhealthy and the voters left are all
 * healthy (so never while it still serves), and the ClusterMemberController
 * adds the master back on its new address as a learner: one change at a
 * time. This does not wait for a stable revision: the rollout that carries
 * the new address cannot finish before the member is replaced, and the
 * InstallerController restarts no other member while one is down. The one
 * exception is a moved member that is healthy and already serves on the new
 * address (its client URLs there: after a quorum restore onto the new
 * address, or on a host that kept both): only the peer URL the others dial
 * is stale, and it is updated in place (etcd member update) while every
 * member is healthy and none is pending.
 *
 * Opt-in (etcds/cluster spec.unsupportedConfigOverrides.replaceDamagedMembers),
 * with or without the Machine API: a member whose data etcd itself calls
 * damaged (the CORRUPT alarm, or a crash loop whose output says so) is
 * removed while the voters left are all healthy, and comes back empty: the
 * automatic form of docs/runbooks/restore-single-member.md. */
#include "base/json.h"
#include "controllers.h"
#include "facts.h"

/* After a failed leadership handover, the leader is removed as it is for this long. */
#define MOVE_LEADER_BACKOFF (5 * 60 * USEC_PER_SEC)

/* etcd-endpoints lists exactly the started voters' IPs (values of its data). */
static bool endpoints_match_voters(const SyncContext *ctx, const EtcdViewSnapshot *s, char *why, size_t n)
{
        const KubeObject *cm = op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_ENDPOINTS);
        cJSON *data = cm ? json_get_object(cm->json, "data") : NULL, *e;
        size_t voters = 0;
        char hex[17];

        if (!cm) {
                (void) snprintf(why, n, "openshift-etcd/etcd-endpoints does not exist");
                return false;
        }
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                bool listed = false;
                if (m->is_learner || !m->started)
                        continue;
                voters++;
                cJSON_ArrayForEach(e, data)
                {
                        IpAddr ip;
                        listed |= ip_parse(strempty(json_string(e)), &ip) >= 0 && etcd_member_has_ip(m, &ip);
                }
                if (!listed) {
                        (void) snprintf(why, n, "etcd-endpoints does not list member %s yet",
                                        etcd_member_label(m, hex));
                        return false;
                }
        }
        if ((size_t) cJSON_GetArraySize(data) != voters) {
                (void) snprintf(why, n, "etcd-endpoints lists %d servers for %zu voters",
                                cJSON_GetArraySize(data), voters);
                return false;
        }
        return true;
}

typedef enum Leaving {
        LEAVING_NO,
        LEAVING_MACHINE_DELETED, /* its Machine is being deleted */
        LEAVING_ORPHANED,        /* neither a Machine nor a Node */
} Leaving;

static Leaving member_leaving(const SyncContext *ctx, const EtcdViewSnapshot *s, const EtcdMemberState *m,
                              const KubeObject **ret_machine)
{
        const KubeObject *machine = machine_of_member(ctx, m);
        *ret_machine = machine;
        if (machine)
                return machine_pending_deletion(machine) ? LEAVING_MACHINE_DELETED : LEAVING_NO;
        return node_of_member(ctx, s, m) ? LEAVING_NO : LEAVING_ORPHANED;
}

/* The opt-in remedy for damaged data: an unhealthy member whose data etcd itself calls
 * damaged is removed while the voters left are all healthy; its etcd's discover then
 * moves the damaged data aside (it is not in the member list any more), and the
 * ClusterMemberController adds it back, empty, to sync from the others. True when it
 * acted or waits. */
static bool remove_damaged(const SyncContext *ctx, const EtcdViewSnapshot *s, Plan *p)
{
        char why[160], hex[17];
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (!m->started || m->healthy || !member_data_damaged(ctx, s, m, why, sizeof why))
                        continue;
                if (!m->is_learner && !etcd_view_removal_keeps_quorum(s, m->id)) {
                        plan_waiting(
                                p, "DamagedMemberWaiting",
                                "member %s has damaged data (%s) and is kept: the voters left would not "
                                "all be healthy",
                                etcd_member_label(m, hex), why);
                        plan_requeue_after(p, 5 * USEC_PER_SEC);
                        return true;
                }
                plan_event(p, true, "DamagedMemberRemoved",
                           "removing member %s: its data is damaged (%s); it rejoins empty, its data moved "
                           "aside "
                           "(" REPLACE_DAMAGED_OVERRIDE " is on)",
                           etcd_member_label(m, hex), why);
                plan_etcd_remove(p, etcd_member_label(m, hex), m->id);
                return true;
        }
        return false;
}

/* The member of a master whose address changed (see the top of this file). True when it
 * acted or waits. */
/* The member advertises a client URL on `ip`: its etcd runs on that address now (etcd
 * publishes the client URLs it was started with; the peer URLs stay as the member was added). */
static bool member_serves_on(const EtcdMemberState *m, const char *ip)
{
        IpAddr want, h;
        if (!m->member || !ip || ip_parse(ip, &want) < 0)
                return false;
        for (size_t k = 0; k < m->member->n_client_urls; k++)
                if (url_host_ip(m->member->client_urls[k], &h) >= 0 && ip_equal(&h, &want))
                        return true;
        return false;
}

static bool remove_moved(const SyncContext *ctx, const EtcdViewSnapshot *s, Plan *p)
{
        char why[160], hex[17];
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                const KubeObject *node = moved_master_of_member(ctx, m);
                const char *was = m->member && m->member->n_peer_urls ? m->member->peer_urls[0] : "";
                if (!node)
                        continue;
                const char *now = strempty(node_internal_ip(node));
                char url[128];
                /* Healthy and serving on the new address already (after a quorum restore there,
                 * or with peers it dials out to itself): only the peer URL the others dial is
                 * stale. Updating it moves no vote; with every member healthy and none pending
                 * it is the one change of this sync. */
                if (m->healthy && member_serves_on(m, now) && etcd_view_all_healthy(s) &&
                    etcd_view_count_pending(s) == 0 && etcd_peer_url_for_ip(now, url, sizeof url) >= 0) {
                        plan_event(p, false, "MemberAddressChanged",
                                   "member %s serves on the new address %s of master %s: its peer URL %s "
                                   "becomes %s",
                                   etcd_member_label(m, hex), now, node->name, was, url);
                        plan_etcd_update_peer(p, etcd_member_label(m, hex), m->id, url);
                        return true;
                }
                if (m->healthy) {
                        plan_waiting(p, "MemberAddressChangedWaiting",
                                     "member %s (%s) is kept while it serves: its master %s has address %s "
                                     "now; it is replaced once it stops answering",
                                     etcd_member_label(m, hex), was, node->name, now);
                        plan_requeue_after(p, 5 * USEC_PER_SEC);
                        return true;
                }
                const char *held = NULL;
                if (!m->is_learner && !etcd_view_removal_keeps_quorum(s, m->id))
                        held = "the voters left would not all be healthy";
                else if (etcd_view_count_pending(s) > (m->is_learner ? 1 : 0))
                        held = "a member is being added";
                else if (!m->is_learner && !endpoints_match_voters(ctx, s, why, sizeof why))
                        held = why;
                if (held) {
                        plan_waiting(
                                p, "MemberAddressChangedWaiting",
                                "member %s (%s) of master %s, which has address %s now, not removed while "
                                "%s",
                                etcd_member_label(m, hex), was, node->name, now, held);
                        plan_requeue_after(p, 5 * USEC_PER_SEC);
                        return true;
                }
                plan_event(p, true, "MemberAddressChanged",
                           "removing member %s (%s): master %s has address %s now and its member cannot "
                           "serve on the old one (%s); %s rejoins on its new address as a new member, its "
                           "old data moved aside",
                           etcd_member_label(m, hex), was, node->name, now, etcd_strerror(m->error),
                           node->name);
                plan_etcd_remove(p, etcd_member_label(m, hex), m->id);
                return true;
        }
        return false;
}

static int sync_member_removal(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        const EtcdMemberState *pick = NULL;
        const KubeObject *pick_machine = NULL;
        char why[256], hex[17];

        if (topology_holds_back(ctx, p))
                return 0;

        if (!s || s->error < 0 || !s->members) {
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        if (bootstrap_phase(ctx, s) != BOOTSTRAP_OVER)
                return 0; /* the bootstrap member is the BootstrapTeardownController's */
        if (remove_moved(ctx, s, p))
                return 0;
        if (replace_damaged_members(ctx) && remove_damaged(ctx, s, p))
                return 0;
        if (!machine_api_functional(ctx))
                return 0; /* without the Machine API members leave by the runbooks only */

        /* 1. A leaving learner: no vote, no quorum cost. */
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                const KubeObject *machine = machine_of_member(ctx, m);
                if ((m->is_learner || !m->started) && machine_pending_deletion(machine)) {
                        plan_event(p, false, "ScaleDown", "removing learner %s: Machine %s is being deleted",
                                   etcd_member_label(m, hex), machine->name);
                        plan_etcd_remove(p, m->name, m->id);
                        return 0;
                }
        }

        /* 2. Which voter is leaving: an unhealthy one first. */
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                const KubeObject *machine;
                if (m->is_learner || !m->started)
                        continue;
                Leaving l = member_leaving(ctx, s, m, &machine);
                if (l == LEAVING_NO)
                        continue;
                if (l == LEAVING_ORPHANED && m->healthy) {
                        plan_waiting(
                                p, "ScaleDownWaiting",
                                "member %s has neither a Machine nor a Node but is healthy: not removed",
                                etcd_member_label(m, hex));
                        continue;
                }
                if (!pick || (pick->healthy && !m->healthy)) {
                        pick = m;
                        pick_machine = machine;
                }
        }
        if (!pick)
                return 0;

        const char *what =
                pick_machine ? "its Machine is being deleted" : "it has neither a Machine nor a Node";
        if (!etcd_revision_stable(op_etcd_cr(ctx), why, sizeof why) ||
            !endpoints_match_voters(ctx, s, why, sizeof why)) {
                plan_waiting(p, "ScaleDownWaiting", "member %s (%s) not removed while %s",
                             etcd_member_label(pick, hex), what, why);
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        if (etcd_view_count_pending(s) > 0) {
                plan_waiting(p, "ScaleDownWaiting",
                             "member %s (%s) not removed while a member is being added",
                             etcd_member_label(pick, hex), what);
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        if (pick->healthy) {
                size_t desired = desired_control_plane_replicas(ctx), voters = etcd_view_count_voters(s);
                if (desired == 0 || voters <= desired) {
                        plan_waiting(p, "ScaleDownWaiting",
                                     "member %s (%s) is healthy and kept until its replacement joins "
                                     "(%zu voters, %zu %s wanted)",
                                     etcd_member_label(pick, hex), what, voters, desired,
                                     topology_has_arbiter(ctx) ? "masters and arbiters" : "masters");
                        return 0;
                }
                if (!etcd_view_all_healthy(s)) {
                        plan_waiting(p, "ScaleDownWaiting",
                                     "member %s (%s) not removed while a member is unhealthy",
                                     etcd_member_label(pick, hex), what);
                        plan_requeue_after(p, 5 * USEC_PER_SEC);
                        return 0;
                }
        }
        if (!etcd_view_removal_keeps_quorum(s, pick->id)) {
                plan_waiting(p, "ScaleDownWaiting",
                             "member %s (%s) not removed: the voters left would not all be healthy",
                             etcd_member_label(pick, hex), what);
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        /* The leader of a healthy cluster hands over first: removed while leading, it steps
         * down only once the removal commits, and the cluster elects (writes wait) meanwhile. */
        const EtcdMaintRecord *moved =
                etcd_maint_log_last(op_state(ctx)->maint, ETCD_MAINT_MOVE_LEADER, 0, false);
        const EtcdMemberState *target =
                pick->healthy && pick->id == s->leader ? leader_handover_target(s, NULL) : NULL;
        if (target && pick->client_url &&
            !(moved && moved->error < 0 && moved->finished + MOVE_LEADER_BACKOFF > ctx->now &&
              moved->from_id == pick->id)) {
                plan_etcd_move_leader(p, etcd_member_label(target, hex), target->id, pick->id,
                                      pick->client_url);
                return 0;
        }
        plan_event(p, false, "ScaleDown", "removing member %s: %s%s%s", etcd_member_label(pick, hex), what,
                   pick->healthy ? "" : ", and it is unhealthy: ",
                   pick->healthy ? "" : etcd_strerror(pick->error));
        plan_etcd_remove(p, etcd_member_label(pick, hex), pick->id);
        return 0;
}

static const WatchSpec *const watches[] = {
        OP_WATCH(W_INFRASTRUCTURES),    OP_WATCH_ETCD_MACHINES, OP_WATCH_ETCD_NODES,
        OP_WATCH(W_ETCD_CONFIGMAPS),    OP_WATCH(W_ETCD_CR),    OP_WATCH(W_KUBE_SYSTEM_CONFIGMAPS),
        OP_WATCH(W_KUBE_SYSTEM_EVENTS), OP_WATCH(W_ETCD_PODS)};

const ControllerSpec controller_member_removal = {
        .name = "ClusterMemberRemovalController",
        .degraded_condition = "ClusterMemberRemovalControllerDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 30 * USEC_PER_SEC,
        .sync = sync_member_removal,
};
