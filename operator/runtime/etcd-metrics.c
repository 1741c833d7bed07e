/* Per-member etcd figures for /metrics. */
#include "etcd-metrics.h"

struct EtcdMetrics {
        Metric *db_size, *db_in_use, *free_ratio, *is_leader, *is_learner, *healthy, *applied_index, *alarm,
                *defrag_last, *defrag_seconds, *defrag_failures;
};

int etcd_metrics_register(MetricsRegistry *reg, EtcdMetrics **ret)
{
        _cleanup_free_ EtcdMetrics *m = calloc(1, sizeof *m);
        int r;

        if (!m)
                return -ENOMEM;
        if ((r = metrics_gauge(reg, &m->db_size, "openshift_etcd_operator_mvcc_db_total_size_in_bytes",
                               "Size of the member's database file, as its status reports it", "member",
                               NULL)) < 0 ||
            (r = metrics_gauge(reg, &m->db_in_use,
                               "openshift_etcd_operator_mvcc_db_total_size_in_use_in_bytes",
                               "Bytes of the member's database file in use", "member", NULL)) < 0 ||
            (r = metrics_gauge(
                     reg, &m->free_ratio, "openshift_etcd_operator_mvcc_db_free_ratio",
                     "Share of the member's database file not in use (what defragmentation returns)",
                     "member", NULL)) < 0 ||
            (r = metrics_gauge(reg, &m->is_leader, "openshift_etcd_operator_server_is_leader",
                               "1 for the member the others follow", "member", NULL)) < 0 ||
            (r = metrics_gauge(reg, &m->is_learner, "openshift_etcd_operator_server_is_learner",
                               "1 for a learner", "member", NULL)) < 0 ||
            (r = metrics_gauge(reg, &m->healthy, "openshift_etcd_operator_member_healthy",
                               "1 while the member serves quorum reads (a NOSPACE alarm aside)", "member",
                               NULL)) < 0 ||
            (r = metrics_gauge(reg, &m->applied_index, "openshift_etcd_operator_raft_applied_index",
                               "The member's applied raft index", "member", NULL)) < 0 ||
            (r = metrics_gauge(reg, &m->alarm, "openshift_etcd_operator_alarm",
                               "1 for each alarm raised (NOSPACE, CORRUPT)", "member", "alarm", NULL)) < 0 ||
            (r = metrics_gauge(
                     reg, &m->defrag_last, "openshift_etcd_operator_defrag_last_success_timestamp_seconds",
                     "When the operator last defragmented the member (since this operator started)",
                     "member", NULL)) < 0 ||
            (r = metrics_gauge(
                     reg, &m->defrag_seconds, "openshift_etcd_operator_defrag_last_duration_seconds",
                     "How long the member's last successful defragmentation took", "member", NULL)) < 0 ||
            (r = metrics_gauge(reg, &m->defrag_failures, "openshift_etcd_operator_defrag_failures_in_row",
                               "Defragmentations that failed since the last one that did not", NULL)) < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

EtcdMetrics *etcd_metrics_free(EtcdMetrics *m)
{
        free(m);
        return NULL;
}

void etcd_metrics_update(EtcdMetrics *m, const EtcdViewSnapshot *s, const EtcdMaintLog *log)
{
        Metric *all[] = {m->db_size, m->db_in_use,     m->free_ratio, m->is_leader,   m->is_learner,
                         m->healthy, m->applied_index, m->alarm,      m->defrag_last, m->defrag_seconds};
        char hex[17];

        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                metrics_reset(all[i]);
        (void) metrics_set(m->defrag_failures, etcd_maint_log_failures_in_row(log, ETCD_MAINT_DEFRAG), NULL);
        if (!s || s->error < 0)
                return;
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *st = &s->states[i];
                const char *name = st->name ? st->name : etcd_id_to_hex(st->id, hex);
                (void) metrics_set(m->is_leader, st->id == s->leader, name, NULL);
                (void) metrics_set(m->is_learner, st->is_learner, name, NULL);
                (void) metrics_set(m->healthy, st->healthy, name, NULL);
                if (st->has_status) {
                        (void) metrics_set(m->db_size, (double) st->status.db_size, name, NULL);
                        (void) metrics_set(m->db_in_use, (double) st->status.db_size_in_use, name, NULL);
                        (void) metrics_set(
                                m->free_ratio,
                                st->status.db_size && st->status.db_size_in_use <= st->status.db_size
                                        ? (double) (st->status.db_size - st->status.db_size_in_use) /
                                                  (double) st->status.db_size
                                        : 0.0,
                                name, NULL);
                        (void) metrics_set(m->applied_index, (double) st->status.raft_applied_index, name,
                                           NULL);
                }
                const EtcdMaintRecord *d = etcd_maint_log_last(log, ETCD_MAINT_DEFRAG, st->id, true);
                if (d) {
                        (void) metrics_set(m->defrag_last, (double) d->finished / USEC_PER_SEC, name, NULL);
                        (void) metrics_set(m->defrag_seconds,
                                           (double) (d->finished - MIN(d->finished, d->started)) /
                                                   USEC_PER_SEC,
                                           name, NULL);
                }
        }
        for (size_t i = 0; i < s->n_alarms; i++) {
                const EtcdMemberState *st = etcd_view_find(s, s->alarms[i].member_id);
                (void) metrics_set(m->alarm, 1,
                                   st && st->name ? st->name : etcd_id_to_hex(s->alarms[i].member_id, hex),
                                   s->alarms[i].alarm, NULL);
        }
}
