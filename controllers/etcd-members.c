/* EtcdMembersController: turns the etcd view into the three domain
 * conditions users and the cluster-version operator read:
 * EtcdMembersAvailable (quorum), EtcdMembersDegraded (any member unhealthy)
 * and EtcdMembersProgressing (learners or members not started yet). It only
 * reports; other controllers act. A member that is down is named with why:
 * what etcd answered, its alarms, and from its pod how often its etcd
 * container restarted and the last line it wrote before the last exit (a
 * damaged database says so there). */
#include <inttypes.h>
#include <stdarg.h>

#include "base/json.h"
#include "controllers.h"
#include "facts.h"

static void append(char *buf, size_t n, size_t *off, const char *fmt, ...) _printf_(4, 5);
static void append(char *buf, size_t n, size_t *off, const char *fmt, ...)
{
        va_list ap;
        if (*off >= n)
                return;
        va_start(ap, fmt);
        int k = vsnprintf(buf + *off, n - *off, fmt, ap);
        va_end(ap);
        if (k > 0)
                *off = MIN(n - 1, *off + (size_t) k);
}

/* Why a member is not serving, in the words of etcd, its alarms and its kubelet:
 * "connection refused; its etcd container restarted 4 times, last exit code 2: ...". */
static void describe_why(const SyncContext *ctx, const EtcdViewSnapshot *s, const EtcdMemberState *st,
                         char *buf, size_t n, size_t *off)
{
        if (!st->started)
                append(buf, n, off, "has not started");
        else
                append(buf, n, off, "%s", etcd_strerror(st->error < 0 ? st->error : -EAGAIN));
        for (size_t i = 0; i < s->n_alarms; i++)
                if (s->alarms[i].member_id == st->id)
                        append(buf, n, off, "; raised the %s alarm", s->alarms[i].alarm);
        const KubeObject *pod = st->name ? etcd_pod_of_node(ctx, st->name) : NULL;
        cJSON *cs;
        JSON_ARRAY_FOREACH (cs, pod ? json_get_array(pod->json, "status.containerStatuses") : NULL) {
                int64_t restarts = 0, code = 0;
                if (!streq_ptr(json_get_string(cs, "name"), "etcd"))
                        continue;
                (void) json_get_int64(cs, "restartCount", &restarts);
                if (restarts == 0)
                        break;
                append(buf, n, off, "; its etcd container restarted %" PRId64 " times", restarts);
                const cJSON *t = json_get_object(cs, "lastState.terminated");
                if (!t)
                        break;
                (void) json_get_int64(t, "exitCode", &code);
                const char *msg = json_get_string(t, "message"), *reason = json_get_string(t, "reason");
                char line[161] = ""; /* 160 characters */
                if (msg)
                        termination_line(msg, line, sizeof line);
                append(buf, n, off, ", last exit code %" PRId64 "%s%s%s", code,
                       line[0] || reason ? ": " : "", line[0] ? line : strempty(reason), "");
                break;
        }
}

/* "master-1" (names), and "master-1: connection refused; ..." (details), for each member
 * that is not serving. */
static size_t describe_unhealthy(const SyncContext *ctx, const EtcdViewSnapshot *s, char *buf, size_t n,
                                 char *why, size_t wn)
{
        size_t count = 0, off = 0, woff = 0;
        buf[0] = why[0] = 0;
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *st = &s->states[i];
                if (st->started && st->healthy)
                        continue;
                char hex[17];
                const char *name = etcd_member_label(st, hex);
                append(buf, n, &off, "%s%s", count ? ", " : "", name);
                append(why, wn, &woff, "%s%s: ", count ? "; " : "", name);
                describe_why(ctx, s, st, why, wn, &woff);
                count++;
        }
        return count;
}

/* How long a quorum of voters that are up but without a leader still counts as available. */
#define ETCD_ELECTION_GRACE (10 * USEC_PER_SEC)

static int sync_members(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        char names[512], why[1536];

        if (!s) {
                plan_condition(p, "EtcdMembersAvailable", "Unknown", "EtcdMembersUnknown",
                               "the etcd cluster has not been observed yet");
                return 0;
        }
        usec_t since_quorate =
                s->quorate_at && s->taken_at >= s->quorate_at ? s->taken_at - s->quorate_at : USEC_INFINITY;
        if (s->error < 0 || !s->members) {
                plan_condition(p, "EtcdMembersDegraded", "True", "EtcdUnreachable",
                               "no etcd endpoint answered the member list: %s", etcd_strerror(s->error));
                /* During an election the member list can fail on every member for a moment. */
                if (since_quorate < ETCD_ELECTION_GRACE) {
                        plan_condition(p, "EtcdMembersAvailable", "True", "EtcdQuorate",
                                       "no etcd endpoint answered the member list just now; a quorum was "
                                       "healthy within the last %llu s",
                                       (unsigned long long) (ETCD_ELECTION_GRACE / USEC_PER_SEC));
                        plan_requeue_after(p, ETCD_ELECTION_GRACE - since_quorate);
                } else
                        plan_condition(p, "EtcdMembersAvailable", "False", "EtcdUnreachable",
                                       "no etcd endpoint answered the member list");
                return 0;
        }
        size_t total = s->n_members, voters = etcd_view_count_voters(s);
        size_t healthy_voters = etcd_view_count_healthy_voters(s);
        size_t unhealthy = describe_unhealthy(ctx, s, names, sizeof names, why, sizeof why);
        size_t available = total - unhealthy;
        size_t quorum = etcd_view_quorum(s);

        /* A leader election (the leader killed, or restarted by a rollout) leaves the others
         * without a leader for a second or a few: /health says false, quorum reads fail. That
         * is no unavailability while a quorum of voters is up and answering, for
         * ETCD_ELECTION_GRACE after the last round with a healthy quorum. */
        size_t reachable = etcd_view_count_reachable_voters(s);
        bool electing = voters > 0 && etcd_view_fault_tolerance(s) < 0 && reachable >= quorum &&
                        since_quorate < ETCD_ELECTION_GRACE;
        if (voters > 0 && etcd_view_fault_tolerance(s) >= 0)
                plan_condition(p, "EtcdMembersAvailable", "True", "EtcdQuorate", "%zu members are available",
                               available);
        else if (electing) {
                plan_condition(p, "EtcdMembersAvailable", "True", "EtcdQuorate",
                               "%zu of %zu voting members are up; they are electing a leader", reachable,
                               voters);
                plan_requeue_after(p, ETCD_ELECTION_GRACE - since_quorate);
        } else
                plan_condition(p, "EtcdMembersAvailable", "False", "NoQuorum",
                               "%zu of %zu voting members are healthy, %zu are needed for quorum",
                               healthy_voters, voters, quorum);

        if (s->split_brain)
                plan_condition(p, "EtcdMembersDegraded", "True", "SplitBrain", "%s", s->split_brain_detail);
        else if (unhealthy > 0)
                plan_condition(p, "EtcdMembersDegraded", "True", "UnhealthyMembers",
                               "%zu of %zu members are available, %s %s unhealthy (%s)", available, total,
                               names, unhealthy == 1 ? "is" : "are", why);
        else
                plan_condition(p, "EtcdMembersDegraded", "False", "AsExpected",
                               "No unhealthy members found");

        size_t pending = etcd_view_count_pending(s);
        if (pending > 0)
                plan_condition(p, "EtcdMembersProgressing", "True", "MembersNotStarted",
                               "%zu member(s) are learners or have not started yet", pending);
        else
                plan_condition(p, "EtcdMembersProgressing", "False", "AsExpected",
                               "No unstarted etcd members found");
        return 0;
}

/* The etcd pods: a member's restarts and last exit say why it is down. */
static const WatchSpec *const watches[] = {OP_WATCH(W_ETCD_CR), OP_WATCH(W_ETCD_PODS)};

const ControllerSpec controller_etcd_members = {
        .name = "EtcdMembersController",
        .degraded_condition = "EtcdMembersControllerDegraded",
        .reads_etcd_view = true,
        .reports_split_brain = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 30 * USEC_PER_SEC,
        .sync = sync_members,
};
