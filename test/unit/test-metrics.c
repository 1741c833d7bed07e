/* The metrics registry: exact exposition text, ordering, escaping, collectors
 * and the checks on names, label counts and counter values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "runtime/etcd-metrics.h"
#include "runtime/metrics.h"

/* Renders into a fresh buffer and compares the whole text. */
static void assert_render(MetricsRegistry *reg, const char *expected)
{
        _cleanup_(buf_free) Buf b = BUF_INIT(0);

        assert_int_equal(metrics_render(reg, &b), 0);
        assert_string_equal(b.data ? b.data : "", expected);
}

static void test_empty(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();

        assert_non_null(reg);
        assert_render(reg, "");
}

static void test_counter_and_gauge(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        Metric *c = NULL, *g = NULL;

        assert_int_equal(metrics_counter(reg, &c, "ceo_syncs_total", "Syncs run.", NULL), 0);
        assert_int_equal(metrics_gauge(reg, &g, "ceo_members", "Members seen.", NULL), 0);
        /* A plain metric exists at 0 before anything is written. */
        assert_render(reg, "# HELP ceo_members Members seen.\n"
                           "# TYPE ceo_members gauge\n"
                           "ceo_members 0\n"
                           "# HELP ceo_syncs_total Syncs run.\n"
                           "# TYPE ceo_syncs_total counter\n"
                           "ceo_syncs_total 0\n");

        assert_int_equal(metrics_add(c, 1, NULL), 0);
        assert_int_equal(metrics_add(c, 2.5, NULL), 0);
        assert_int_equal(metrics_set(g, 3, NULL), 0);
        assert_int_equal(metrics_add(g, -5, NULL), 0);
        assert_render(reg, "# HELP ceo_members Members seen.\n"
                           "# TYPE ceo_members gauge\n"
                           "ceo_members -2\n"
                           "# HELP ceo_syncs_total Syncs run.\n"
                           "# TYPE ceo_syncs_total counter\n"
                           "ceo_syncs_total 3.5\n");

        /* Counters never go down. */
        assert_int_equal(metrics_add(c, -1, NULL), -EINVAL);
        assert_int_equal(metrics_set(c, -1, NULL), -EINVAL);
        assert_int_equal(metrics_add(c, NAN, NULL), -EINVAL);
        assert_int_equal(metrics_set(c, 10, NULL), 0);
        metrics_reset(c);
        metrics_reset(g);
        assert_render(reg, "# HELP ceo_members Members seen.\n"
                           "# TYPE ceo_members gauge\n"
                           "ceo_members 0\n"
                           "# HELP ceo_syncs_total Syncs run.\n"
                           "# TYPE ceo_syncs_total counter\n"
                           "ceo_syncs_total 0\n");
}

static void test_labels_sorted(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        Metric *g = NULL, *c = NULL;

        assert_int_equal(metrics_gauge(reg, &g, "openshift_etcd_operator_signer_expiration_days",
                                       "Days until the signer expires.", "name", NULL),
                         0);
        assert_int_equal(metrics_counter(reg, &c, "ceo_requests_total", "Requests.", "verb", "code", NULL),
                         0);
        /* A labelled metric with no label set written yet is left out entirely. */
        assert_render(reg, "");

        assert_int_equal(metrics_set(g, 365, "etcd-signer", NULL), 0);
        assert_int_equal(metrics_set(g, 30.25, "etcd-metric-signer", NULL), 0);
        assert_int_equal(metrics_add(c, 1, "PUT", "200", NULL), 0);
        assert_int_equal(metrics_add(c, 1, "GET", "404", NULL), 0);
        assert_int_equal(metrics_add(c, 1, "GET", "200", NULL), 0);
        assert_int_equal(metrics_add(c, 1, "GET", "200", NULL), 0);
        assert_render(
                reg, "# HELP ceo_requests_total Requests.\n"
                     "# TYPE ceo_requests_total counter\n"
                     "ceo_requests_total{verb=\"GET\",code=\"200\"} 2\n"
                     "ceo_requests_total{verb=\"GET\",code=\"404\"} 1\n"
                     "ceo_requests_total{verb=\"PUT\",code=\"200\"} 1\n"
                     "# HELP openshift_etcd_operator_signer_expiration_days Days until the signer expires.\n"
                     "# TYPE openshift_etcd_operator_signer_expiration_days gauge\n"
                     "openshift_etcd_operator_signer_expiration_days{name=\"etcd-metric-signer\"} 30.25\n"
                     "openshift_etcd_operator_signer_expiration_days{name=\"etcd-signer\"} 365\n");

        /* Wrong number of label values, either way. */
        assert_int_equal(metrics_set(g, 1, NULL), -EINVAL);
        assert_int_equal(metrics_set(g, 1, "a", "b", NULL), -EINVAL);
        assert_int_equal(metrics_add(c, 1, "GET", NULL), -EINVAL);

        /* Reset drops every label set: the family disappears. */
        metrics_reset(c);
        assert_int_equal(metrics_set(g, 1, "etcd-signer", NULL), 0);
        assert_render(
                reg, "# HELP openshift_etcd_operator_signer_expiration_days Days until the signer expires.\n"
                     "# TYPE openshift_etcd_operator_signer_expiration_days gauge\n"
                     "openshift_etcd_operator_signer_expiration_days{name=\"etcd-metric-signer\"} 30.25\n"
                     "openshift_etcd_operator_signer_expiration_days{name=\"etcd-signer\"} 1\n");
}

static void test_escaping(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        Metric *g = NULL;

        assert_int_equal(metrics_gauge(reg, &g, "ceo_info",
                                       "Help with \\ backslash,\nnewline and \"quotes\".", "path", NULL),
                         0);
        assert_int_equal(metrics_set(g, 1, "C:\\dir \"x\"\nnext", NULL), 0);
        assert_int_equal(metrics_set(g, 2, "", NULL), 0);
        /* HELP keeps quotes as they are; label values escape them. */
        assert_render(reg, "# HELP ceo_info Help with \\\\ backslash,\\nnewline and \"quotes\".\n"
                           "# TYPE ceo_info gauge\n"
                           "ceo_info{path=\"\"} 2\n"
                           "ceo_info{path=\"C:\\\\dir \\\"x\\\"\\nnext\"} 1\n");
}

static void test_values(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        Metric *g = NULL;

        assert_int_equal(metrics_gauge(reg, &g, "v", "Values.", "k", NULL), 0);
        assert_int_equal(metrics_set(g, 0.1, "a", NULL), 0);
        assert_int_equal(metrics_set(g, 1e15, "b", NULL), 0);
        assert_int_equal(metrics_set(g, 123456789012345.0, "c", NULL), 0);
        assert_int_equal(metrics_set(g, -0.0, "d", NULL), 0);
        assert_int_equal(metrics_set(g, INFINITY, "e", NULL), 0);
        assert_int_equal(metrics_set(g, -INFINITY, "f", NULL), 0);
        assert_int_equal(metrics_set(g, NAN, "g", NULL), 0);
        assert_int_equal(metrics_set(g, 1.0 / 3.0, "h", NULL), 0);
        assert_int_equal(metrics_set(g, 1.5e-7, "i", NULL), 0);
        assert_render(reg, "# HELP v Values.\n"
                           "# TYPE v gauge\n"
                           "v{k=\"a\"} 0.1\n"
                           "v{k=\"b\"} 1e+15\n"
                           "v{k=\"c\"} 123456789012345\n"
                           "v{k=\"d\"} 0\n"
                           "v{k=\"e\"} +Inf\n"
                           "v{k=\"f\"} -Inf\n"
                           "v{k=\"g\"} NaN\n"
                           "v{k=\"h\"} 0.3333333333333333\n"
                           "v{k=\"i\"} 1.5e-07\n");
}

static void test_names(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        Metric *m = NULL;

        assert_true(metrics_name_is_valid("a"));
        assert_true(metrics_name_is_valid("_x:y_1"));
        assert_true(metrics_name_is_valid(":recording:rule"));
        assert_false(metrics_name_is_valid(""));
        assert_false(metrics_name_is_valid(NULL));
        assert_false(metrics_name_is_valid("1abc"));
        assert_false(metrics_name_is_valid("a-b"));
        assert_false(metrics_name_is_valid("a b"));
        assert_false(metrics_name_is_valid("caf\xc3\xa9"));

        assert_int_equal(metrics_counter(reg, &m, "bad-name", "x", NULL), -EINVAL);
        assert_int_equal(metrics_gauge(reg, &m, "9lives", "x", NULL), -EINVAL);
        assert_int_equal(metrics_gauge(reg, &m, NULL, "x", NULL), -EINVAL);
        assert_int_equal(metrics_gauge(reg, &m, "ok", NULL, NULL), -EINVAL);
        /* Label names: no colon, no leading digit, no reserved "__", no duplicates. */
        assert_int_equal(metrics_gauge(reg, &m, "ok", "x", "a:b", NULL), -EINVAL);
        assert_int_equal(metrics_gauge(reg, &m, "ok", "x", "1a", NULL), -EINVAL);
        assert_int_equal(metrics_gauge(reg, &m, "ok", "x", "__name__", NULL), -EINVAL);
        assert_int_equal(metrics_gauge(reg, &m, "ok", "x", "", NULL), -EINVAL);
        assert_int_equal(metrics_gauge(reg, &m, "ok", "x", "a", "a", NULL), -EINVAL);
        assert_int_equal(metrics_gauge(reg, &m, "ok", "x", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j",
                                       "k", "l", "m", "n", "o", "p", "q", NULL),
                         -E2BIG);
        assert_null(m);
        assert_render(reg, "");
}

static void test_reregister(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        Metric *a = NULL, *b = NULL;

        assert_int_equal(metrics_counter(reg, &a, "x_total", "X.", "k", NULL), 0);
        assert_int_equal(metrics_counter(reg, &b, "x_total", "X.", "k", NULL), 0);
        assert_ptr_equal(a, b);
        b = NULL;
        assert_int_equal(metrics_gauge(reg, &b, "x_total", "X.", "k", NULL), -EEXIST);
        assert_int_equal(metrics_counter(reg, &b, "x_total", "Other.", "k", NULL), -EEXIST);
        assert_int_equal(metrics_counter(reg, &b, "x_total", "X.", "j", NULL), -EEXIST);
        assert_int_equal(metrics_counter(reg, &b, "x_total", "X.", NULL), -EEXIST);
        assert_null(b);
}

typedef struct Stats {
        Metric *lists;
        Metric *synced;
        unsigned calls;
        int fail;
} Stats;

/* Mirrors counts kept elsewhere, the way informer stats are exported. */
static int collect_stats(MetricsRegistry *reg, void *userdata)
{
        Stats *s = userdata;
        int r;

        s->calls++;
        if (s->fail < 0)
                return s->fail;
        metrics_reset(s->lists);
        r = metrics_set(s->lists, 10 * s->calls, "pods", NULL);
        if (r < 0)
                return r;
        r = metrics_set(s->lists, s->calls, "configmaps", NULL);
        if (r < 0)
                return r;
        return metrics_set(s->synced, s->calls % 2, NULL);
}

static void test_collector(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        Stats s = {};

        assert_int_equal(
                metrics_counter(reg, &s.lists, "ceo_informer_lists_total", "LIST calls.", "resource", NULL),
                0);
        assert_int_equal(metrics_gauge(reg, &s.synced, "ceo_informers_synced", "1 when synced.", NULL), 0);
        assert_int_equal(metrics_register_collector(reg, collect_stats, &s), 0);
        assert_int_equal(metrics_register_collector(reg, NULL, &s), -EINVAL);

        assert_render(reg, "# HELP ceo_informer_lists_total LIST calls.\n"
                           "# TYPE ceo_informer_lists_total counter\n"
                           "ceo_informer_lists_total{resource=\"configmaps\"} 1\n"
                           "ceo_informer_lists_total{resource=\"pods\"} 10\n"
                           "# HELP ceo_informers_synced 1 when synced.\n"
                           "# TYPE ceo_informers_synced gauge\n"
                           "ceo_informers_synced 1\n");
        /* Asked again at every scrape. */
        assert_render(reg, "# HELP ceo_informer_lists_total LIST calls.\n"
                           "# TYPE ceo_informer_lists_total counter\n"
                           "ceo_informer_lists_total{resource=\"configmaps\"} 2\n"
                           "ceo_informer_lists_total{resource=\"pods\"} 20\n"
                           "# HELP ceo_informers_synced 1 when synced.\n"
                           "# TYPE ceo_informers_synced gauge\n"
                           "ceo_informers_synced 0\n");
        assert_int_equal(s.calls, 2);

        /* A failing collector fails the render with its error. */
        _cleanup_(buf_free) Buf b = BUF_INIT(0);
        s.fail = -EIO;
        assert_int_equal(metrics_render(reg, &b), -EIO);
}

static void test_bounds(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        _cleanup_(buf_free) Buf small = BUF_INIT(16);
        Metric *g = NULL;
        char v[16];

        assert_int_equal(metrics_gauge(reg, &g, "many", "Many label sets.", "i", NULL), 0);
        for (unsigned i = 0; i < METRICS_SAMPLES_MAX; i++) {
                (void) snprintf(v, sizeof v, "%u", i);
                assert_int_equal(metrics_set(g, i, v, NULL), 0);
        }
        /* Existing label sets still update; a new one is refused. */
        assert_int_equal(metrics_set(g, 1, "0", NULL), 0);
        assert_int_equal(metrics_set(g, 1, "new", NULL), -E2BIG);
        /* The output buffer's maximum holds. */
        assert_int_equal(metrics_render(reg, &small), -E2BIG);
}

static void test_null_args(void **state)
{
        Metric *m = NULL;

        assert_int_equal(metrics_gauge(NULL, &m, "x", "x", NULL), -EINVAL);
        assert_int_equal(metrics_set(NULL, 1, NULL), -EINVAL);
        assert_int_equal(metrics_add(NULL, 1, NULL), -EINVAL);
        assert_int_equal(metrics_render(NULL, NULL), -EINVAL);
        metrics_reset(NULL);
        assert_null(metrics_registry_free(NULL));
}

/* The operator's per-member etcd figures, from a snapshot and the maintenance log. */
static void test_etcd_metrics(void **state)
{
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        _cleanup_(etcd_metrics_freep) EtcdMetrics *em = NULL;
        _cleanup_(etcd_maint_log_freep) EtcdMaintLog *log = etcd_maint_log_new();
        _cleanup_(buf_free) Buf b = BUF_INIT(0);
        EtcdMemberState states[2] = {
                {.id = 1,
                 .name = "master-0",
                 .started = true,
                 .healthy = true,
                 .has_status = true,
                 .status = {.db_size = 400, .db_size_in_use = 100, .raft_applied_index = 77}},
                {.id = 2, .started = false, .is_learner = true},
        };
        EtcdAlarm alarm = {.member_id = 1, .alarm = "NOSPACE"};
        EtcdViewSnapshot snap = {
                .leader = 1, .states = states, .n_members = 2, .alarms = &alarm, .n_alarms = 1};
        EtcdMaintRecord ok = {
                .kind = ETCD_MAINT_DEFRAG, .member_id = 1, .started = 1000000, .finished = 3500000};
        EtcdMaintRecord bad = {
                .kind = ETCD_MAINT_DEFRAG, .member_id = 1, .finished = 4000000, .error = -EIO};

        (void) state;
        assert_int_equal(etcd_metrics_register(reg, &em), 0);
        etcd_maint_log_add(log, &ok);
        etcd_maint_log_add(log, &bad);
        etcd_metrics_update(em, &snap, log);
        assert_int_equal(metrics_render(reg, &b), 0);
        static const char *const want[] = {
                "openshift_etcd_operator_mvcc_db_total_size_in_bytes{member=\"master-0\"} 400\n",
                "openshift_etcd_operator_mvcc_db_total_size_in_use_in_bytes{member=\"master-0\"} 100\n",
                "openshift_etcd_operator_mvcc_db_free_ratio{member=\"master-0\"} 0.75\n",
                "openshift_etcd_operator_server_is_leader{member=\"master-0\"} 1\n",
                "openshift_etcd_operator_server_is_leader{member=\"0000000000000002\"} 0\n",
                "openshift_etcd_operator_server_is_learner{member=\"0000000000000002\"} 1\n",
                "openshift_etcd_operator_member_healthy{member=\"0000000000000002\"} 0\n",
                "openshift_etcd_operator_raft_applied_index{member=\"master-0\"} 77\n",
                "openshift_etcd_operator_alarm{member=\"master-0\",alarm=\"NOSPACE\"} 1\n",
                "openshift_etcd_operator_defrag_last_success_timestamp_seconds{member=\"master-0\"} 3.5\n",
                "openshift_etcd_operator_defrag_last_duration_seconds{member=\"master-0\"} 2.5\n",
                "openshift_etcd_operator_defrag_failures_in_row 1\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                if (!strstr(b.data, want[i]))
                        fail_msg("missing: %s in:\n%s", want[i], b.data);
        /* An unstarted member reports no sizes; without a view only the log's figure stays. */
        assert_null(strstr(b.data, "mvcc_db_total_size_in_bytes{member=\"0000000000000002\"}"));
        etcd_metrics_update(em, NULL, log);
        buf_free(&b);
        b = (Buf) BUF_INIT(0);
        assert_int_equal(metrics_render(reg, &b), 0);
        assert_null(strstr(b.data, "member=\"master-0\""));
        assert_non_null(strstr(b.data, "openshift_etcd_operator_defrag_failures_in_row 1\n"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty),         cmocka_unit_test(test_counter_and_gauge),
                cmocka_unit_test(test_labels_sorted), cmocka_unit_test(test_escaping),
                cmocka_unit_test(test_values),        cmocka_unit_test(test_names),
                cmocka_unit_test(test_reregister),    cmocka_unit_test(test_collector),
                cmocka_unit_test(test_bounds),        cmocka_unit_test(test_null_args),
                cmocka_unit_test(test_etcd_metrics),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
