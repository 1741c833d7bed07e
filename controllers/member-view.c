/* MemberViewController: the per-member figures an admin asks for first, in one
 * place kubectl reads (issue 37; what etcd-druid's EtcdMember status shows):
 * the ConfigMap openshift-etcd-operator/etcd-members, a table in `members` and
 * the same as JSON in `members.json`, one entry per member of the etcd view:
 * name, ID, leader, learner, started, healthy, etcd version, database size and
 * size in use (MiB), fragmentation, the last defragmentation the operator did
 * and the last completed backup. The same figures are the operator's
 * /metrics (openshift_etcd_operator_mvcc_db_total_size_in_bytes{member}, ...).
 *
 *   kubectl get configmap -n openshift-etcd-operator etcd-members -o jsonpath='{.data.members}'
 *
 * Written only when what it shows changed, and at most every 30 s (`updated`
 * says when): a busy cluster's growing database moves the sizes all the time.
 * Without a member list (etcd unreachable, a split brain) it is left as it was.
 * It only reports: nothing reads it back. */
#include <inttypes.h>

#include "base/buf.h"
#include "base/json.h"
#include "controllers.h"
#include "facts.h"

#define CM_MEMBER_VIEW        "etcd-members"
#define MEMBER_VIEW_MIN_DELAY (30 * USEC_PER_SEC)

static unsigned long long mib(uint64_t bytes)
{
        return (unsigned long long) ((bytes + 512 * 1024) / (1024 * 1024));
}

static int add_row(Buf *b, const char *fmt, ...) _printf_(2, 3);
static int add_row(Buf *b, const char *fmt, ...)
{
        char line[512];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(line, sizeof line, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -EINVAL;
        return buf_append(b, line, MIN((size_t) n, sizeof line - 1));
}

/* One member's entry of members.json, and its row of the table. */
static int member_entry(const SyncContext *ctx, const EtcdViewSnapshot *s, const EtcdMemberState *m,
                        cJSON *list, Buf *table)
{
        const EtcdMaintLog *maint = op_state(ctx)->maint;
        const EtcdMaintRecord *defrag =
                maint ? etcd_maint_log_last(maint, ETCD_MAINT_DEFRAG, m->id, true) : NULL;
        char hex[17], when[64] = "";
        const char *name = m->name && *m->name                   ? m->name
                           : m->member && m->member->n_peer_urls ? m->member->peer_urls[0]
                                                                 : "(unstarted)";
        bool leader = s->leader && s->leader == m->id;
        cJSON *e = cJSON_CreateObject();

        if (!e || !cJSON_AddItemToArray(list, e)) {
                cJSON_Delete(e);
                return -ENOMEM;
        }
        (void) etcd_id_to_hex(m->id, hex);
        if (defrag)
                (void) format_rfc3339(when, sizeof when, defrag->finished);
        if (!cJSON_AddStringToObject(e, "name", name) || !cJSON_AddStringToObject(e, "id", hex) ||
            !cJSON_AddBoolToObject(e, "leader", leader) ||
            !cJSON_AddBoolToObject(e, "learner", m->is_learner) ||
            !cJSON_AddBoolToObject(e, "started", m->started) ||
            !cJSON_AddBoolToObject(e, "healthy", m->healthy))
                return -ENOMEM;
        if (m->has_status &&
            (!cJSON_AddStringToObject(e, "version", m->status.version) ||
             !cJSON_AddNumberToObject(e, "dbSizeMiB", (double) mib(m->status.db_size)) ||
             !cJSON_AddNumberToObject(e, "dbSizeInUseMiB", (double) mib(m->status.db_size_in_use)) ||
             !cJSON_AddNumberToObject(e, "fragmentedPercent", etcd_member_fragmented_percent(m))))
                return -ENOMEM;
        if (*when && !cJSON_AddStringToObject(e, "lastDefragmentation", when))
                return -ENOMEM;

        char db[32] = "-", in_use[32] = "-", frag[16] = "-";
        if (m->has_status) {
                (void) snprintf(db, sizeof db, "%llu MiB", mib(m->status.db_size));
                (void) snprintf(in_use, sizeof in_use, "%llu MiB", mib(m->status.db_size_in_use));
                (void) snprintf(frag, sizeof frag, "%u%%", etcd_member_fragmented_percent(m));
        }
        return add_row(table, "%-24s %-16s %-6s %-7s %-7s %-8s %9s %9s %5s  %s\n", name, hex,
                       leader ? "yes" : "-", m->is_learner ? "yes" : "-",
                       !m->started  ? "-"
                       : m->healthy ? "yes"
                                    : "no",
                       m->has_status && m->status.version[0] ? m->status.version : "-", db, in_use, frag,
                       *when ? when : "-");
}

static int sync_member_view(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        _cleanup_free_ const KubeObject **backups = NULL;
        _cleanup_(buf_free) Buf table = BUF_INIT(64 * 1024);
        size_t n_backups = 0;
        int r;

        if (!s || s->error < 0 || !s->members)
                return 0; /* what it showed stays: no list to show */
        _cleanup_(cJSON_Deletep) cJSON *data = cJSON_CreateObject();
        _cleanup_(cJSON_Deletep) cJSON *list = cJSON_CreateArray();
        if (!data || !list)
                return -ENOMEM;
        r = add_row(&table, "%-24s %-16s %-6s %-7s %-7s %-8s %9s %9s %5s  %s\n", "NAME", "ID", "LEADER",
                    "LEARNER", "HEALTHY", "VERSION", "DB", "IN USE", "FRAG", "LAST DEFRAG");
        for (size_t i = 0; r >= 0 && i < s->n_members; i++)
                r = member_entry(ctx, s, &s->states[i], list, &table);
        if (r < 0)
                return r;
        /* Backups are the cluster's, taken on one master: when the last one completed. */
        char when[64] = "";
        if (op_list(ctx, W_ETCD_BACKUPS, &backups, &n_backups) >= 0) {
                usec_t t = backups_newest_completed(backups, n_backups);
                if (t)
                        (void) format_rfc3339(when, sizeof when, t);
        }
        if ((r = add_row(&table, "last backup completed: %s\n", *when ? when : "none")) < 0)
                return r;

        /* members.json as a string, as a ConfigMap holds it. */
        _cleanup_free_ char *json = json_print(list);
        _cleanup_free_ char *text = buf_steal(&table);
        if (!json || !text)
                return -ENOMEM;
        if (!cJSON_AddStringToObject(data, "members", text) ||
            !cJSON_AddStringToObject(data, "members.json", json) ||
            (*when && !cJSON_AddStringToObject(data, "lastBackup", when)))
                return -ENOMEM;

        const KubeObject *have = op_get(ctx, W_OPERATOR_CONFIGMAPS, NS_OPERATOR, CM_MEMBER_VIEW);
        cJSON *have_data = have ? json_get_object(have->json, "data") : NULL;
        if (have_data) {
                _cleanup_(cJSON_Deletep) cJSON *old = cJSON_Duplicate(have_data, true);
                if (!old)
                        return -ENOMEM;
                cJSON_DeleteItemFromObject(old, "updated");
                if (cJSON_Compare(old, data, true))
                        return 0;
                usec_t updated = 0;
                if (parse_rfc3339(json_get_string(have_data, "updated"), &updated) >= 0 &&
                    ctx->now >= updated && ctx->now - updated < MEMBER_VIEW_MIN_DELAY) {
                        plan_requeue_after(p, MEMBER_VIEW_MIN_DELAY - (ctx->now - updated));
                        return 0;
                }
        }
        char now[64];
        if (!cJSON_AddStringToObject(data, "updated", format_rfc3339(now, sizeof now, ctx->now)))
                return -ENOMEM;
        _cleanup_(cJSON_Deletep) cJSON *cm =
                kube_object_skeleton(&KUBE_CONFIGMAPS, NS_OPERATOR, CM_MEMBER_VIEW);
        if (!cm || !cJSON_AddItemToObject(cm, "data", TAKE_PTR(data)))
                return -ENOMEM;
        plan_apply(p, &KUBE_CONFIGMAPS, cm);
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_OPERATOR_CONFIGMAPS), OP_WATCH(W_ETCD_BACKUPS)};

const ControllerSpec controller_member_view = {
        .name = "MemberViewController",
        .degraded_condition = "MemberViewControllerDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_member_view,
};
