/* InstallerController: brings every master to status.latestAvailableRevision,
 * one node at a time, by running an installer pod on it (library-go's
 * installer controller, with our stricter quorum rule). The node holding
 * the target is the one whose nodeStatuses entry has a targetRevision above
 * its currentRevision; NodeStatusController moves currentRevision once the
 * node's etcd pod runs that revision ready, and clears the target.
 *
 * Order: nodes whose etcd is no voting member, then unready nodes, then the
 * rest, each only if restarting its etcd keeps quorum: the other healthy
 * voters (etcd says healthy and the pod is ready) must reach quorum, where
 * a started learner counts as a voter (the view may predate its promotion)
 * and the bootstrap member, once bootstrap is complete, counts as gone.
 * Each step is its own sync: record the target, then create the pod (after
 * checking the rule again), so an installer pod never exists without its
 * target on record; a target whose installer has not started gives way to
 * a better choice. Never two installer pods at once; a finished installer
 * holds the rollout until the node runs the revision, even when a newer
 * revision appeared meanwhile (the node's etcd is restarting: another node
 * chosen then would be a second member down). A failed installer, or
 * one that succeeded while the Ready node's etcd pod still runs an older
 * revision 3 minutes later (OperandNotAtRevision: the kubelet did not take
 * the manifest, or an older one was written over it), is recorded
 * (lastFailed*) and retried with backoff, up to
 * spec.failedRevisionLimit attempts (then NodeInstallerDegraded, until a
 * new revision, e.g. from forceRedeploymentReason). */
#include <limits.h>

#include "base/backoff.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"
#include "render/installerpod.h"

#define BACKOFF_BASE (10 * USEC_PER_SEC)
#define BACKOFF_MAX  (5 * 60 * USEC_PER_SEC)
/* How long an older target whose installer ran holds back a newer revision at most. */
#define STALE_TARGET_HOLD (2 * 60 * USEC_PER_SEC)
/* How long after its installer succeeded a Ready node's etcd pod may still run an older
 * revision before that attempt counts as failed (the kubelet notices a new manifest within
 * 20 s and stops the old pod within its 30 s grace; a large database's start does not
 * count: the pod's revision label changes when it is created). */
#define OPERAND_WAIT (3 * 60 * USEC_PER_SEC)

typedef struct NodeInfo {
        const KubeObject *node;
        const cJSON *entry; /* its nodeStatuses entry in the cached etcds/cluster, NULL if none yet */
        int64_t current, target, failed_rev, failed_count;
        bool ready;                    /* the Node and its etcd pod are Ready */
        bool pod_ready;                /* etcd-<node> is Ready */
        const EtcdMemberState *member; /* its member in the etcd snapshot, NULL when none */
        bool moved_voter;              /* voter_on_old_certificate() names this node */
} NodeInfo;

typedef struct State {
        const SyncContext *ctx;
        const KubeObject *cr;
        const EtcdViewSnapshot *s; /* NULL when membership is unknown */
        uint64_t leaving;          /* the bootstrap member once bootstrap is reported complete and no
                                    * node is rolling out: it may go any moment, so it is neither a
                                    * voter nor a spare here (0: none) */
        NodeInfo *nodes;
        size_t n;
        int64_t latest, limit; /* limit < 0: unlimited */
} State;

static int64_t entry_int(const cJSON *entry, const char *key)
{
        int64_t v = 0;
        return entry && json_get_int64(entry, key, &v) >= 0 ? v : 0;
}

static int state_load(const SyncContext *ctx, State *st)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n = 0;
        int r = op_list_etcd_nodes(ctx, &nodes, &n);
        if (r < 0)
                return r;
        const EtcdViewSnapshot *s = op_etcd(ctx);
        st->s = s && s->error >= 0 && s->members ? s : NULL;
        /* The BootstrapTeardownController removes the bootstrap member only while no node has a
         * target revision it has not reached (its etcd restarts any moment). While one has, the
         * bootstrap member stays and still votes: counting it out then would hold that rollout
         * for ever on two masters (delayed HA), and the teardown with it. */
        if (st->s && bootstrap_reported_complete(ctx) && !etcd_node_rolling_out(st->cr, NULL)) {
                const EtcdMemberState *b = bootstrap_member(ctx, st->s);
                st->leaving = b ? b->id : 0;
        }
        st->nodes = calloc(MAX(n, (size_t) 1), sizeof *st->nodes);
        if (!st->nodes)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                NodeInfo *ni = &st->nodes[st->n++];
                cJSON *e;
                ni->node = nodes[i];
                JSON_ARRAY_FOREACH (e, json_get_array(st->cr->json, "status.nodeStatuses"))
                        if (streq_ptr(json_get_string(e, "nodeName"), nodes[i]->name))
                                ni->entry = e;
                ni->current = entry_int(ni->entry, "currentRevision");
                ni->target = entry_int(ni->entry, "targetRevision");
                ni->failed_rev = entry_int(ni->entry, "lastFailedRevision");
                ni->failed_count = entry_int(ni->entry, "lastFailedCount");
                ni->pod_ready = pod_is_ready(etcd_pod_of_node(ctx, nodes[i]->name));
                ni->ready = ni->pod_ready && node_is_ready(nodes[i]);
                ni->member = st->s ? member_of_node(st->s, nodes[i]) : NULL;
        }
        const KubeObject *moved = voter_on_old_certificate(ctx, st->s);
        for (size_t i = 0; moved && i < st->n; i++)
                st->nodes[i].moved_voter = st->nodes[i].node == moved;
        return 0;
}

/* A member is up for quorum when etcd says healthy and, for a master, its
 * pod is ready too (the view may lag behind a restart the kubelet already
 * reports). */
static bool member_up(const EtcdMemberState *m, void *userdata)
{
        const State *st = userdata;
        for (size_t k = 0; k < st->n; k++)
                if (st->nodes[k].member == m)
                        return st->nodes[k].pod_ready;
        return m->healthy;
}

/* The node runs the only voting member of a cluster of one node by design (SingleReplica or
 * installed in place): there is no other member to keep quorum with, and each revision costs
 * the outage of one restart, as upstream's installer does on a single node. */
static bool sole_voter_by_design(const State *st, const NodeInfo *ni)
{
        return ni->member && !ni->member->is_learner && st->s && etcd_view_count_voters(st->s) == 1 &&
               single_node_by_design(st->ctx);
}

/* The installer may restart the node's member alone (its own guard told so by
 * --etcd-sole-voter-may-restart): a single node by design, or, after a quorum restore on a
 * master that moved, the one voter left under the runbook's unsafe non-HA override. */
static bool sole_voter_may_restart(const State *st, const NodeInfo *ni)
{
        if (sole_voter_by_design(st, ni))
                return true;
        return ni->moved_voter && etcd_unsafe_non_ha(st->ctx) && st->s && etcd_view_count_voters(st->s) == 1;
}

/* Restarting the node's etcd keeps quorum (etcd_view_restart_keeps_quorum). */
static bool restart_is_safe(const State *st, const NodeInfo *ni, char *why, size_t n)
{
        size_t up = 0, voters = 0, q = 0;
        if (!st->s) {
                (void) snprintf(why, n, "the etcd membership is unknown");
                return false;
        }
        if (!ni->member)
                return true;
        /* A single node's only member; or the one voter left after a quorum restore on a master
         * that moved: nothing can join before it restarts with certificates for its address.
         * The runbook's unsafe non-HA override accepts that outage; without it, this waits. */
        if (sole_voter_may_restart(st, ni))
                return true;
        EtcdQuorumHints h = {.leaving = st->leaving, .up = member_up, .userdata = (void *) st};
        if (etcd_view_restart_keeps_quorum(st->s, ni->member->id, &h, &up, &voters, &q))
                return true;
        (void) snprintf(why, n, "restarting %s would leave %zu of %zu voting members up, quorum is %zu",
                        ni->node->name, up, voters, q);
        return false;
}

/* The order in which nodes get a new revision: restarting a node that is no
 * voting member costs quorum nothing, an unready one little. */
typedef enum NodeGroup {
        NODE_MOVED_VOTER, /* voter_on_old_certificate: no member can join before it has new certificates */
        NODE_NOT_VOTING,
        NODE_UNREADY,
        NODE_READY_VOTER,
        _NODE_GROUP_MAX,
} NodeGroup;

static NodeGroup node_group(const NodeInfo *ni)
{
        if (ni->moved_voter)
                return NODE_MOVED_VOTER;
        if (!ni->member || ni->member->is_learner)
                return NODE_NOT_VOTING;
        return ni->ready ? NODE_READY_VOTER : NODE_UNREADY;
}

static bool exhausted(const State *st, const NodeInfo *ni, int64_t rev)
{
        return st->limit >= 0 && ni->failed_rev == rev && ni->failed_count >= st->limit;
}

/* `note`: why the rollout waits, or NULL. */
static void plan_progress(const State *st, Plan *p, const char *note)
{
        char msg[512] = "";
        size_t off = 0, behind = 0;
        int64_t prev = -1;

        /* "1 node is at revision 2; 2 nodes are at revision 3", oldest first. */
        for (;;) {
                int64_t rev = INT64_MAX;
                size_t count = 0;
                for (size_t i = 0; i < st->n; i++)
                        if (st->nodes[i].current > prev && st->nodes[i].current < rev)
                                rev = st->nodes[i].current;
                if (rev == INT64_MAX)
                        break;
                for (size_t i = 0; i < st->n; i++)
                        count += st->nodes[i].current == rev;
                if (rev != st->latest)
                        behind += count;
                int k = snprintf(msg + off, sizeof msg - off, "%s%zu node%s %s at revision %lld",
                                 off ? "; " : "", count, count == 1 ? "" : "s", count == 1 ? "is" : "are",
                                 (long long) rev);
                off = MIN(off + (size_t) MAX(k, 0), sizeof msg - 1);
                prev = rev;
        }
        if (behind > 0)
                plan_condition(p, "NodeInstallerProgressing", "True", "NodeInstaller",
                               "%s; latest revision is %lld%s%s", msg, (long long) st->latest,
                               note ? "; waiting: " : "", strempty(note));
        else
                plan_condition(p, "NodeInstallerProgressing", "False", "AllNodesAtLatestRevision", "%s",
                               msg);
}

/* A copy of etcds/cluster for a status PUT, and the entry of `node` in it. */
static cJSON *cr_copy(const State *st, const char *node, cJSON **ret_entry)
{
        cJSON *obj = cJSON_Duplicate(st->cr->json, true), *e;
        *ret_entry = NULL;
        JSON_ARRAY_FOREACH (e, obj ? json_get_array(obj, "status.nodeStatuses") : NULL)
                if (streq_ptr(json_get_string(e, "nodeName"), node))
                        *ret_entry = e;
        return obj;
}

static int set_int(cJSON *entry, const char *key, int64_t v)
{
        cJSON_DeleteItemFromObjectCaseSensitive(entry, key);
        return cJSON_AddNumberToObject(entry, key, (double) v) ? 0 : -ENOMEM;
}

static int plan_target(const State *st, Plan *p, const NodeInfo *ni)
{
        cJSON *entry, *e;
        _cleanup_(cJSON_Deletep) cJSON *obj = cr_copy(st, ni->node->name, &entry);
        if (!obj || !entry)
                return -ENOMEM;
        /* At most one target: a reached one (NodeStatusController clears those too) or one
         * whose installer never started goes. */
        JSON_ARRAY_FOREACH (e, json_get_array(obj, "status.nodeStatuses"))
                if (e != entry)
                        cJSON_DeleteItemFromObjectCaseSensitive(e, "targetRevision");
        if (set_int(entry, "targetRevision", st->latest) < 0)
                return -ENOMEM;
        log_info("node %s goes to revision %lld (now at %lld)", ni->node->name, (long long) st->latest,
                 (long long) ni->current);
        plan_update_status(p, &KUBE_ETCDS, obj);
        return 0;
}

/* Records a failed attempt at the node's target (lastFailed*), which the next
 * syncs retry under a new pod name after a backoff, up to failedRevisionLimit:
 * `code` is lastFailedReason, `reason` its one error. */
static int plan_attempt_failed(const State *st, Plan *p, const NodeInfo *ni, int64_t attempt,
                               const char *code, const char *reason)
{
        char when[64];
        cJSON *entry;
        _cleanup_(cJSON_Deletep) cJSON *obj = cr_copy(st, ni->node->name, &entry);
        cJSON *errors = cJSON_CreateArray();
        if (!obj || !entry || !errors || set_int(entry, "lastFailedRevision", ni->target) < 0 ||
            set_int(entry, "lastFailedCount", attempt + 1) < 0) {
                cJSON_Delete(errors);
                return -ENOMEM;
        }
        cJSON_AddItemToArray(errors, cJSON_CreateString(reason));
        cJSON_DeleteItemFromObjectCaseSensitive(entry, "lastFailedRevisionErrors");
        cJSON_AddItemToObject(entry, "lastFailedRevisionErrors", errors);
        if (json_set_string(entry, "lastFailedTime", format_rfc3339(when, sizeof when, st->ctx->now)) < 0 ||
            json_set_string(entry, "lastFailedReason", code) < 0)
                return -ENOMEM;
        plan_update_status(p, &KUBE_ETCDS, obj);
        return 0;
}

static int plan_failure(const State *st, Plan *p, const NodeInfo *ni, const KubeObject *pod, int64_t attempt)
{
        char reason[1024] = "the installer pod failed";
        cJSON *cs;
        JSON_ARRAY_FOREACH (cs, json_get_array(pod->json, "status.containerStatuses")) {
                const char *m = json_get_string(cs, "state.terminated.message");
                const char *why = json_get_string(cs, "state.terminated.reason");
                if (m || why)
                        (void) snprintf(reason, sizeof reason, "installer: %s", m ? m : why);
        }
        log_warning("%s failed (attempt %lld): %s", pod->name, (long long) attempt + 1, reason);
        plan_event(p, true, "InstallerPodFailed", "installer pod %s failed: %s", pod->name, reason);
        return plan_attempt_failed(st, p, ni, attempt, "InstallerFailed", reason);
}

/* When the installer's container finished (its creation if the kubelet said nothing of it). */
static usec_t installer_finished_at(const KubeObject *pod)
{
        usec_t finished = 0;
        cJSON *cs;
        JSON_ARRAY_FOREACH (cs, json_get_array(pod->json, "status.containerStatuses"))
                (void) parse_rfc3339(json_get_string(cs, "state.terminated.finishedAt"), &finished);
        if (finished == 0)
                (void) parse_rfc3339(json_get_string(pod->json, "metadata.creationTimestamp"), &finished);
        return finished;
}

/* The installer of the latest revision succeeded, the node is Ready, and still, OPERAND_WAIT
 * later, its etcd pod runs an older revision: the kubelet did not take the new
 * manifest, or something wrote an older one over it (upstream waits for ever here). That
 * attempt counts as failed: the installer runs again, with the quorum check and backoff of
 * any retry, and after failedRevisionLimit tries NodeInstallerDegraded says why. A pod at the
 * revision that is not ready is another matter (StaticPodsDegraded): a rewrite would not help. */
static int check_operand_updated(const State *st, Plan *p, const NodeInfo *ni, const KubeObject *installer,
                                 int64_t attempt)
{
        const KubeObject *pod = etcd_pod_of_node(st->ctx, ni->node->name);
        const char *label = pod ? kube_object_label(pod, "revision") : NULL;
        uint64_t running = 0;
        char reason[512];

        if (!streq_ptr(json_get_string(installer->json, "status.phase"), "Succeeded") ||
            !node_is_ready(ni->node))
                return 0;
        /* No pod: the kubelet is between pods, or a runbook stopped etcd on purpose (the
         * manifest moved aside during a restore): not ours to rewrite. */
        if (!pod || !label || parse_uint64(label, &running) < 0 || running >= (uint64_t) ni->target)
                return 0;
        usec_t finished = installer_finished_at(installer), due = finished + OPERAND_WAIT;
        if (finished == 0) /* no time to count from */
                return 0;
        if (st->ctx->now < due) {
                plan_requeue_after(p, MIN(due - st->ctx->now, 10 * USEC_PER_SEC));
                return 0;
        }
        (void) snprintf(reason, sizeof reason,
                        "%s succeeded but etcd on node %s still runs revision %" PRIu64 " %llu s later",
                        installer->name, ni->node->name, running,
                        (unsigned long long) (OPERAND_WAIT / USEC_PER_SEC));
        log_warning("%s (attempt %lld): running the installer again", reason, (long long) attempt + 1);
        plan_event(p, true, "OperandNotAtRevision", "%s: running the installer again", reason);
        return plan_attempt_failed(st, p, ni, attempt, "OperandNotAtRevision", reason) < 0 ? -ENOMEM : 1;
}

static void pod_name(char *buf, size_t n, int64_t rev, int64_t attempt, const char *node)
{
        if (attempt > 0)
                (void) snprintf(buf, n, "installer-%lld-retry-%lld-%s", (long long) rev, (long long) attempt,
                                node);
        else
                (void) snprintf(buf, n, "installer-%lld-%s", (long long) rev, node);
}

static int64_t attempt_of(const NodeInfo *ni, int64_t rev)
{
        return ni->failed_rev == rev ? ni->failed_count : 0;
}

/* The installer's quorum guard seeds (--etcd-endpoints): the first client URL
 * of every started member, as the view has them (the installer reads the
 * member list and health anew right before it restarts etcd). */
static size_t guard_seeds(const State *st, char **v, size_t max)
{
        size_t n = 0;
        for (size_t i = 0; st->s && i < st->s->n_members && n < max; i++) {
                const EtcdMember *m = st->s->states[i].member;
                if (!etcd_member_is_started(m))
                        continue;
                if (installer_pod_endpoint_is_valid(m->client_urls[0]))
                        v[n++] = m->client_urls[0];
        }
        return n;
}

/* The target is on record and the node was chosen again: run its installer (with the
 * aliases of moved masters' members, which its quorum guard reaches where they serve). */
static int start_installer(const State *st, Plan *p, const NodeInfo *ni)
{
        const char *node = ni->node->name;
        int64_t attempt = attempt_of(ni, st->latest);
        usec_t failed_at = 0;
        char name[300];

        if (attempt > 0 && parse_rfc3339(json_get_string(ni->entry, "lastFailedTime"), &failed_at) >= 0) {
                usec_t delay = backoff_exponential(BACKOFF_BASE, BACKOFF_MAX,
                                                   (unsigned) MIN(attempt - 1, (int64_t) UINT_MAX));
                if (st->ctx->now < failed_at + delay) {
                        plan_requeue_after(p, failed_at + delay - st->ctx->now);
                        return 0;
                }
        }
        pod_name(name, sizeof name, st->latest, attempt, node);
        _cleanup_(cJSON_Deletep) cJSON *obj = NULL;
        char *seeds[16];
        size_t n_seeds = guard_seeds(st, seeds, ELEMENTSOF(seeds));
        int r = installer_pod_render(name, node, st->latest, op_state(st->ctx)->operator_image, seeds,
                                     n_seeds, &obj);
        EtcdAddressAlias aliases[16];
        size_t n_aliases = 0;
        for (size_t i = 0; i < st->n && n_aliases < ELEMENTSOF(aliases); i++)
                n_aliases += node_address_alias(op_etcd_cr(st->ctx), st->nodes[i].node, op_etcd_secret,
                                                (void *) st->ctx, &aliases[n_aliases]) > 0;
        if (r >= 0)
                r = installer_pod_add_aliases(obj, aliases, n_aliases);
        /* restart_is_safe's exception, passed on to the installer's own quorum guard. */
        bool sole = sole_voter_may_restart(st, ni);
        if (r >= 0 && sole)
                r = installer_pod_allow_sole_voter_restart(obj);
        if (r < 0)
                return log_error_errno(r, "cannot render installer pod %s for node %s", name, node);
        if (sole && sole_voter_by_design(st, ni))
                log_info("node %s runs the only member of a single-node control plane: its installer "
                         "restarts it alone (etcd and the API are down for that restart)",
                         node);
        else if (sole)
                log_warning("node %s runs the only voting member, on a certificate for its old address: its "
                            "installer may restart it alone (the unsafe non-HA override is set)",
                            node);
        log_info("installing revision %lld on node %s (%s)", (long long) st->latest, node, name);
        plan_event(p, false, "InstallerPodCreated", "installing revision %lld on node %s",
                   (long long) st->latest, node);
        plan_create(p, &KUBE_PODS, obj);
        return 0;
}

/* The node holding the target: 1 when it decides this sync (its installer
 * failed, or finished and its etcd restarts now, also for a revision older
 * than the latest), 0 when the node is open for a new choice (nothing
 * started for its target yet). */
static int holder(const State *st, Plan *p, const NodeInfo *ni)
{
        int64_t t = ni->target, attempt = attempt_of(ni, t);
        char name[300];

        pod_name(name, sizeof name, t, attempt, ni->node->name);
        const KubeObject *pod = op_get(st->ctx, W_ETCD_PODS, NS_ETCD, name);
        const char *phase = pod ? json_get_string(pod->json, "status.phase") : NULL;
        if (streq_ptr(phase, "Failed"))
                return plan_failure(st, p, ni, pod, attempt) < 0 ? -ENOMEM : 1;
        if (pod && t == st->latest) {
                plan_requeue_after(p, 10 * USEC_PER_SEC); /* installed: the kubelet restarts etcd */
                return check_operand_updated(st, p, ni, pod, attempt) < 0 ? -ENOMEM : 1;
        }
        if (pod && node_group(ni) != NODE_NOT_VOTING) {
                /* An older target whose installer ran on a voter: the kubelet is restarting that
                 * member right now, though it may still look healthy. A newer revision waits for
                 * that node to run it (the NodeStatusController then moves it along): choosing
                 * another node now could take two voters down at once. (A node that is no voter
                 * costs quorum nothing: it gives way at once, as a node whose etcd cannot start
                 * before the newer revision must.) Should that node never come up at the old
                 * revision, the hold ends 2 minutes after its installer finished; and at once
                 * when its etcd runs that revision and is down: the restart is over, and the
                 * choice below takes unready nodes before ready voters, so the newer revision
                 * (the fixed release an admin ships after a broken one) goes to it first. */
                if (st->ctx->now < installer_finished_at(pod) + STALE_TARGET_HOLD &&
                    !etcd_down_at_revision(st->ctx, ni->node, ni->member, t)) {
                        plan_waiting(
                                p, "InstallerWaiting",
                                "not installing revision %lld yet: node %s is restarting etcd at revision "
                                "%lld (its installer ran)",
                                (long long) st->latest, ni->node->name, (long long) t);
                        plan_requeue_after(p, 5 * USEC_PER_SEC);
                        return 1;
                }
        }
        return 0;
}

static bool installer_running(const SyncContext *ctx)
{
        _cleanup_free_ const KubeObject **pods = NULL;
        size_t n = 0;
        if (op_list(ctx, W_ETCD_PODS, &pods, &n) < 0)
                return true; /* cannot tell: do not start another */
        for (size_t i = 0; i < n; i++) {
                const char *phase = json_get_string(pods[i]->json, "status.phase");
                if (startswith(pods[i]->name, "installer-") &&
                    streq_ptr(kube_object_label(pods[i], "app"), "installer") &&
                    !streq_ptr(phase, "Succeeded") && !streq_ptr(phase, "Failed"))
                        return true;
        }
        return false;
}

/* One step of the rollout; *ret_note says why it waits, if it does. */
static int rollout_step(const State *st, Plan *p, const char **ret_note, char *why, size_t n)
{
        const NodeInfo *held = NULL;
        int r;

        if (installer_running(st->ctx)) {
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        for (size_t i = 0; i < st->n; i++) {
                const NodeInfo *ni = &st->nodes[i];
                if (exhausted(st, ni, st->latest)) {
                        const char *last = cJSON_GetStringValue(cJSON_GetArrayItem(
                                json_get_array(ni->entry, "lastFailedRevisionErrors"), 0));
                        plan_condition(
                                p, "NodeInstallerDegraded", "True", "InstallerPodFailed",
                                "the installer of revision %lld failed %lld times on node %s%s%s; fix "
                                "the cause and set spec.forceRedeploymentReason to try again",
                                (long long) st->latest, (long long) ni->failed_count, ni->node->name,
                                last ? ", the last time: " : "", strempty(last));
                        return 0; /* no other node gets a revision that keeps failing */
                }
                if (ni->entry && ni->target > ni->current)
                        held = ni;
        }
        plan_condition(p, "NodeInstallerDegraded", "False", "AsExpected", "no installer is failing");
        if (held && (r = holder(st, p, held)) != 0)
                return MIN(r, 0);
        if (!st->s) {
                *ret_note = "the etcd membership is unknown";
                plan_requeue_after(p, 10 * USEC_PER_SEC);
                return 0;
        }
        /* Choose: nodes that are no voting member, then unready ones, then the rest. */
        for (NodeGroup g = 0; g < _NODE_GROUP_MAX; g++)
                for (size_t i = 0; i < st->n; i++) {
                        const NodeInfo *ni = &st->nodes[i];
                        if (!ni->entry || ni->current == st->latest || node_group(ni) != g)
                                continue;
                        /* A moved voter restarts only into a revision made for where it is now
                         * (made before the move, its pod could not start: as the only voter
                         * after a quorum restore, the cluster would be lost). */
                        if (ni->moved_voter && !revision_fits_node(st->ctx, st->latest, ni->node, why, n)) {
                                *ret_note = why;
                                continue;
                        }
                        if (!restart_is_safe(st, ni, why, n)) {
                                *ret_note = why;
                                continue;
                        }
                        if (ni == held && ni->target == st->latest)
                                return start_installer(st, p, ni);
                        return plan_target(st, p, ni);
                }
        if (*ret_note) {
                plan_waiting(p, "InstallerWaiting", "not installing revision %lld yet: %s",
                             (long long) st->latest, *ret_note);
                plan_requeue_after(p, 10 * USEC_PER_SEC);
        }
        return 0;
}

static int sync_installer(const SyncContext *ctx, Plan *p)
{
        State st = {.ctx = ctx, .cr = op_etcd_cr(ctx), .limit = 5};
        const char *note = NULL;
        char why[256] = "";
        int64_t limit = 0;
        int r;

        if (topology_holds_back(ctx, p))
                return 0;

        if (!st.cr || json_get_int64(st.cr->json, "status.latestAvailableRevision", &st.latest) < 0 ||
            st.latest <= 0)
                return 0;
        if (json_get_int64(st.cr->json, "spec.failedRevisionLimit", &limit) >= 0 && limit != 0)
                st.limit = limit < 0 ? -1 : limit;
        r = state_load(ctx, &st);
        if (r >= 0)
                r = rollout_step(&st, p, &note, why, sizeof why);
        if (r >= 0)
                plan_progress(&st, p, note);
        free(st.nodes);
        return r;
}

static const WatchSpec
        *const watches[] = {OP_WATCH(W_INFRASTRUCTURES),
                            OP_WATCH(W_ETCD_CR),
                            OP_WATCH_ETCD_NODES,
                            OP_WATCH(W_ETCD_PODS),
                            OP_WATCH(W_ETCD_CONFIGMAPS),
                            OP_WATCH(W_KUBE_SYSTEM_CONFIGMAPS),
                            OP_WATCH(W_KUBE_SYSTEM_EVENTS),
                            OP_WATCH(W_ETCD_SECRETS) /* etcd-all-certs-<N>: moved masters' aliases */};

const ControllerSpec controller_installer = {
        .name = "InstallerController",
        .degraded_condition = "InstallerControllerDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 30 * USEC_PER_SEC,
        .sync = sync_installer,
};
