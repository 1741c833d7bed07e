/* EtcdMembersController: turns the etcd view into the three domain
 * conditions users and the cluster-version operator read:
 * EtcdMembersAvailable (quorum), EtcdMembersDegraded (any member unhealthy)
 * and EtcdMembersProgressing (learners or members not started yet). It only
 * reports; other controllers act. */
#include "controllers.h"
#include "facts.h"

static size_t describe_unhealthy(const EtcdViewSnapshot *s, char *buf, size_t n)
{
        size_t count = 0, off = 0;
        buf[0] = 0;
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *st = &s->states[i];
                if (st->started && st->healthy)
                        continue;
                char hex[17];
                const char *name = st->name ? st->name : etcd_id_to_hex(st->id, hex);
                int k = snprintf(buf + off, n - off, "%s%s", count ? ", " : "", name);
                if (k > 0 && (size_t) k < n - off)
                        off += (size_t) k;
                count++;
        }
        return count;
}

static int sync_members(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        char names[512];

        if (!s) {
                plan_condition(p, "EtcdMembersAvailable", "Unknown", "EtcdMembersUnknown",
                               "the etcd cluster has not been observed yet");
                return 0;
        }
        if (s->error < 0 || !s->members) {
                plan_condition(p, "EtcdMembersDegraded", "True", "EtcdUnreachable",
                               "no etcd endpoint answered the member list: %s", etcd_strerror(s->error));
                plan_condition(p, "EtcdMembersAvailable", "False", "EtcdUnreachable",
                               "no etcd endpoint answered the member list");
                return 0;
        }
        size_t total = s->n_members, voters = etcd_view_count_voters(s);
        size_t healthy_voters = etcd_view_count_healthy_voters(s);
        size_t unhealthy = describe_unhealthy(s, names, sizeof names);
        size_t available = total - unhealthy;
        size_t quorum = etcd_view_quorum(s);

        if (voters > 0 && etcd_view_fault_tolerance(s) >= 0)
                plan_condition(p, "EtcdMembersAvailable", "True", "EtcdQuorate", "%zu members are available",
                               available);
        else
                plan_condition(p, "EtcdMembersAvailable", "False", "NoQuorum",
                               "%zu of %zu voting members are healthy, %zu are needed for quorum",
                               healthy_voters, voters, quorum);

        if (s->split_brain)
                plan_condition(p, "EtcdMembersDegraded", "True", "SplitBrain", "%s", s->split_brain_detail);
        else if (unhealthy > 0)
                plan_condition(p, "EtcdMembersDegraded", "True", "UnhealthyMembers",
                               "%zu of %zu members are available, %s %s unhealthy", available, total, names,
                               unhealthy == 1 ? "is" : "are");
        else
                plan_condition(p, "EtcdMembersDegraded", "False", "AsExpected",
                               "No unhealthy members found");

        size_t pending = etcd_view_count_pending(s);
        if (pending > 0)
                plan_condition(p, "EtcdMembersProgressing", "True", "MembersNotReady",
                               "%zu member(s) are learners or have not started yet", pending);
        else
                plan_condition(p, "EtcdMembersProgressing", "False", "AsExpected",
                               "No unstarted etcd members found");
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_ETCD_CR)};

const ControllerSpec controller_etcd_members = {
        .name = "EtcdMembersController",
        .degraded_condition = "EtcdMembersControllerDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 30 * USEC_PER_SEC,
        .sync = sync_members,
};
