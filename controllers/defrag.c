/* DefragController: keeps the members' database files compact, and brings a
 * cluster out of a NOSPACE alarm without a human.
 *
 * Routine defragmentation follows upstream's rule (etcd/view.h: a started
 * voter of at least 100 MiB, at least 45 % of it free) and switches: the
 * ConfigMap openshift-etcd-operator/etcd-disable-defrag, or a single-member
 * control plane, turns it off (DefragControllerDisabled). One member per sync
 * and only while every member is healthy; the runtime holds the next etcd step
 * until the view is newer than the last one, so health is checked between
 * members. Followers go first. The leader is never defragmented while it
 * leads: leadership moves to a member already done, and the former leader is
 * then a follower like the others (upstream defragments it in place and
 * stalls every write for the duration). A member defragmented in the last
 * DEFRAG_COOLDOWN is not defragmented again, whatever a lagging status says,
 * so a leader change mid-run cannot start a loop. Three failures in a row make
 * DefragControllerDegraded, as upstream.
 *
 * NOSPACE: etcd refuses every write once a member's database reaches its
 * quota. Recovery is etcd's documented procedure, one step per sync: compact
 * to the current revision, defragment every member (followers first, the
 * leader last), then disarm the alarm on each member. It runs whether or not
 * routine defragmentation is disabled (the cluster cannot write otherwise),
 * and it does not disarm while the data itself fills the quota: the alarm
 * would come straight back, so the condition says what to do instead.
 * NoSpaceDegraded and events say where it stands.
 *
 * What the operator did is read from the maintenance log (etcd/maintlog.h). */
#include "base/json.h"
#include "controllers.h"
#include "facts.h"
#include "runtime/conditions.h"

#define DISABLE_CONFIGMAP "etcd-disable-defrag"
#define DEGRADED_COND     "DefragControllerDegraded"
#define DISABLED_COND     "DefragControllerDisabled"
#define NOSPACE_COND      "NoSpaceDegraded"
/* A member defragmented this recently is not defragmented again by the routine. */
#define DEFRAG_COOLDOWN (10 * 60 * USEC_PER_SEC)
/* A member whose defragmentation failed waits this long before the next attempt. */
#define FAILURE_BACKOFF (60 * USEC_PER_SEC)
/* After a failed handover the leader is defragmented in place for this long. */
#define MOVE_LEADER_BACKOFF (5 * 60 * USEC_PER_SEC)
#define DEGRADED_AFTER      3u
#define DISARM_INTERVAL     (60 * USEC_PER_SEC)
/* Disarming while the data fills this share of the quota would only raise NOSPACE again. */
#define QUOTA_FULL_PERCENT 95u
#define MIB                (1024.0 * 1024.0)

static void describe_sizes(const EtcdMemberState *m, char *buf, size_t n)
{
        (void) snprintf(buf, n, "db %.1f MiB, %.1f MiB in use, %u%% free", (double) m->status.db_size / MIB,
                        (double) m->status.db_size_in_use / MIB, etcd_member_fragmented_percent(m));
}

/* Every member started and serving reads (a NOSPACE alarm aside); why not, otherwise. */
static bool members_up(const EtcdViewSnapshot *s, char *why, size_t n)
{
        char hex[17];
        if (s->split_brain) {
                (void) snprintf(why, n, "the members disagree on the cluster ID");
                return false;
        }
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (!m->started || !m->healthy || !m->has_status) {
                        (void) snprintf(why, n, "member %s is %s", etcd_member_label(m, hex),
                                        !m->started ? "not started" : "unhealthy");
                        return false;
                }
        }
        return true;
}

/* The maintenance log says the member was defragmented at or after `since`. */
static bool member_defragmented_since(const SyncContext *ctx, const EtcdMemberState *m, usec_t since)
{
        const EtcdMaintRecord *r = etcd_maint_log_last(op_state(ctx)->maint, ETCD_MAINT_DEFRAG, m->id, true);
        return r && r->finished >= since;
}

static bool member_failed_recently(const SyncContext *ctx, const EtcdMemberState *m)
{
        const EtcdMaintRecord *r =
                etcd_maint_log_last(op_state(ctx)->maint, ETCD_MAINT_DEFRAG, m->id, false);
        return r && r->error < 0 && r->finished + FAILURE_BACKOFF > ctx->now;
}

static void plan_defrag(Plan *p, const EtcdMemberState *m)
{
        char sizes[128], hex[17];
        describe_sizes(m, sizes, sizeof sizes);
        plan_etcd_defragment(p, etcd_member_label(m, hex), m->id, m->client_url, sizes);
}

static int routine(const SyncContext *ctx, const EtcdViewSnapshot *s, Plan *p)
{
        const EtcdMemberState *leader = NULL, *next = NULL;
        char why[256], hex[17];

        /* members_up() below is etcd_view_all_healthy() but for the NOSPACE alarm, handled before. */
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (!etcd_member_needs_defrag(m) || member_failed_recently(ctx, m) ||
                    member_defragmented_since(ctx, m, ctx->now - MIN(ctx->now, DEFRAG_COOLDOWN)))
                        continue;
                if (m->id == s->leader)
                        leader = m;
                else if (!next)
                        next = m;
        }
        if (!next && !leader)
                return 0;
        if (!members_up(s, why, sizeof why)) {
                plan_waiting(p, "DefragWaiting", "no member is defragmented while %s", why);
                plan_requeue_after(p, 10 * USEC_PER_SEC);
                return 0;
        }
        if (next) {
                plan_defrag(p, next);
                return 0;
        }
        const EtcdMaintRecord *moved =
                etcd_maint_log_last(op_state(ctx)->maint, ETCD_MAINT_MOVE_LEADER, 0, false);
        const EtcdMemberState *target = leader_handover_target(s, etcd_member_needs_defrag);
        /* A handover that this leader failed lately licenses defragmenting it in place. A failed
         * handover of another leader does not: when that one died mid-move, leadership went
         * elsewhere, and nothing says the leader now cannot hand over. */
        bool move_failed = moved && moved->error < 0 && moved->finished + MOVE_LEADER_BACKOFF > ctx->now &&
                           moved->from_id == s->leader;
        if (target && !move_failed) {
                plan_etcd_move_leader(p, etcd_member_label(target, hex), target->id, leader->id,
                                      leader->client_url);
                return 0;
        }
        plan_defrag(p, leader); /* no member to take over, or the handover failed just now */
        return 0;
}

/* The NOSPACE alarms as one line: "master-0, master-1". */
static void alarmed_members(const EtcdViewSnapshot *s, char *buf, size_t n)
{
        size_t used = 0;
        char hex[17];
        buf[0] = 0;
        for (size_t i = 0; i < s->n_alarms && used < n; i++) {
                if (!streq(s->alarms[i].alarm, "NOSPACE"))
                        continue;
                const EtcdMemberState *m = etcd_view_find(s, s->alarms[i].member_id);
                int k = snprintf(buf + used, n - used, "%s%s", used ? ", " : "",
                                 m ? etcd_member_label(m, hex)
                                   : etcd_id_to_hex(s->alarms[i].member_id, hex));
                used += k > 0 ? (size_t) k : 0;
        }
}

static int recover_nospace(const SyncContext *ctx, const EtcdViewSnapshot *s, Plan *p)
{
        const EtcdMaintLog *log = op_state(ctx)->maint;
        const KubeObject *cr = op_etcd_cr(ctx);
        uint64_t quota = etcd_backend_quota_bytes(cr), revision = 0, largest = 0;
        const EtcdMemberState *leader = NULL, *next = NULL;
        char who[256], why[256], hex[17];

        alarmed_members(s, who, sizeof who);
        if (!cr || !conditions_is(json_get_array(cr->json, "status.conditions"), NOSPACE_COND, "True"))
                plan_event(p, true, "NoSpaceAlarm",
                           "etcd raised NOSPACE on %s: its database reached the quota (%.0f MiB) and every "
                           "write "
                           "is refused; recovering: compact, defragment each member, disarm",
                           who, (double) quota / MIB);
        if (!members_up(s, why, sizeof why)) {
                plan_condition(p, NOSPACE_COND, "True", "NoSpace",
                               "etcd refuses writes: NOSPACE on %s; recovery waits: %s", who, why);
                plan_waiting(p, "NoSpaceWaiting", "NOSPACE recovery waits: %s", why);
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        for (size_t i = 0; i < s->n_members; i++) {
                revision = MAX(revision, s->states[i].status.revision);
                largest = MAX(largest, s->states[i].status.db_size_in_use);
        }
        /* 1. Compact to the current revision (again if deletes moved it since). */
        const EtcdMaintRecord *compacted = etcd_maint_log_last(log, ETCD_MAINT_COMPACT, 0, true);
        if (!compacted || compacted->revision < revision) {
                plan_condition(p, NOSPACE_COND, "True", "NoSpace",
                               "etcd refuses writes: NOSPACE on %s; recovering: compacting to revision %llu",
                               who, (unsigned long long) revision);
                plan_etcd_compact(p, revision);
                return 0;
        }
        /* 2. Defragment every member once since that compaction, followers first. */
        size_t done = 0;
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (member_defragmented_since(ctx, m, compacted->finished)) {
                        done++;
                        continue;
                }
                if (member_failed_recently(ctx, m))
                        continue;
                if (m->id == s->leader)
                        leader = m;
                else if (!next)
                        next = m;
        }
        if (next || leader) {
                const EtcdMemberState *m = next ? next : leader;
                plan_condition(
                        p, NOSPACE_COND, "True", "NoSpace",
                        "etcd refuses writes: NOSPACE on %s; recovering: defragmenting %s (%zu of %zu done)",
                        who, etcd_member_label(m, hex), done, s->n_members);
                plan_defrag(p, m);
                return 0;
        }
        if (done < s->n_members) {
                plan_condition(p, NOSPACE_COND, "True", "NoSpace",
                               "etcd refuses writes: NOSPACE on %s; recovering: a defragmentation failed, "
                               "retrying shortly (%zu of %zu done)",
                               who, done, s->n_members);
                plan_requeue_after(p, FAILURE_BACKOFF);
                return 0;
        }
        /* 3. Disarm, unless the live data itself fills the quota. */
        if (largest * 100 >= quota * QUOTA_FULL_PERCENT) {
                plan_condition(
                        p, NOSPACE_COND, "True", "NoSpace",
                        "etcd refuses writes: NOSPACE on %s, and after compaction and defragmentation "
                        "%.0f MiB of data are still in use of a %.0f MiB quota: raise "
                        "etcds/cluster spec.backendQuotaGiB or delete objects; the alarm stays until then",
                        who, (double) largest / MIB, (double) quota / MIB);
                plan_requeue_after(p, 60 * USEC_PER_SEC);
                return 0;
        }
        /* An alarm that came straight back on a member disarmed within the minute (members
         * still on a smaller quota than etcds/cluster says, during its rollout) waits: never a
         * tight loop. Every other member's alarm is disarmed now, one per sync. */
        usec_t retry_at = 0;
        for (size_t i = 0; i < s->n_alarms; i++) {
                if (!streq(s->alarms[i].alarm, "NOSPACE"))
                        continue;
                uint64_t id = s->alarms[i].member_id;
                const EtcdMaintRecord *disarmed = etcd_maint_log_last(log, ETCD_MAINT_DISARM, id, true);
                if (disarmed && disarmed->finished + DISARM_INTERVAL > ctx->now) {
                        usec_t at = disarmed->finished + DISARM_INTERVAL;
                        retry_at = retry_at == 0 ? at : MIN(retry_at, at);
                        continue;
                }
                const EtcdMemberState *m = etcd_view_find(s, id);
                plan_condition(p, NOSPACE_COND, "True", "NoSpace",
                               "etcd refuses writes: NOSPACE on %s; recovering: compacted and defragmented, "
                               "disarming",
                               who);
                plan_etcd_disarm(p, m ? etcd_member_label(m, hex) : etcd_id_to_hex(id, hex), id, "NOSPACE");
                return 0;
        }
        if (retry_at > 0) {
                plan_condition(
                        p, NOSPACE_COND, "True", "NoSpace",
                        "etcd refuses writes: NOSPACE on %s again within a minute of the last disarm; "
                        "retrying then (a raised quota takes effect as each member restarts with it)",
                        who);
                plan_requeue_after(p, retry_at - ctx->now);
        }
        return 0;
}

/* Why routine defragmentation is off, or NULL. */
static const char *disabled_reason(const SyncContext *ctx)
{
        if (op_get(ctx, W_OPERATOR_CONFIGMAPS, NS_OPERATOR, DISABLE_CONFIGMAP))
                return "the ConfigMap " NS_OPERATOR "/" DISABLE_CONFIGMAP " exists";
        if (scaling_is_single_member(scaling_strategy(ctx)))
                return "etcd runs as a single member: defragmenting it would stop every write";
        return NULL;
}

static int sync_defrag(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        const char *disabled = disabled_reason(ctx);
        const EtcdMaintLog *log = op_state(ctx)->maint;

        if (topology_holds_back(ctx, p))
                return 0;

        if (disabled)
                plan_condition(p, DISABLED_COND, "True", "AsExpected", "%s", disabled);
        else
                plan_condition(p, DISABLED_COND, "False", "AsExpected", "defragmentation is enabled");
        unsigned failures = etcd_maint_log_failures_in_row(log, ETCD_MAINT_DEFRAG);
        const EtcdMaintRecord *last = etcd_maint_log_last(log, ETCD_MAINT_DEFRAG, 0, false);
        if (failures >= DEGRADED_AFTER && last) {
                const EtcdMemberState *m = s ? etcd_view_find(s, last->member_id) : NULL;
                char hex[17];
                plan_condition(
                        p, DEGRADED_COND, "True", "Error",
                        "degraded after %u defragmentation attempts in a row failed; the last, of %s: %s",
                        failures, m ? etcd_member_label(m, hex) : etcd_id_to_hex(last->member_id, hex),
                        etcd_strerror(last->error));
        } else
                plan_condition(p, DEGRADED_COND, "False", "AsExpected", "%s", "");

        if (!s || s->error < 0 || s->n_members == 0) {
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0; /* nothing is decided without a view of etcd; the conditions stand */
        }
        if (etcd_view_has_alarm(s, "NOSPACE"))
                return recover_nospace(ctx, s, p);
        plan_condition(p, NOSPACE_COND, "False", "AsExpected", "%s", "");
        if (disabled)
                return 0;
        return routine(ctx, s, p);
}

static const WatchSpec *const watches[] = {
        OP_WATCH(W_OPERATOR_CONFIGMAPS),    OP_WATCH(W_ETCD_CR),    OP_WATCH(W_INFRASTRUCTURES),
        OP_WATCH(W_KUBE_SYSTEM_CONFIGMAPS), OP_WATCH(W_NAMESPACES),
};

const ControllerSpec controller_defrag = {
        .name = "DefragController",
        .degraded_condition = DEGRADED_COND,
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_defrag,
};
