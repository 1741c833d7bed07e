/* Conditions and plan building; scheduling; aliveness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "runtime/controller.h"
#include "runtime/plan.h"

static void test_conditions(void **state)
{
        _cleanup_(cJSON_Deletep) cJSON *a = cJSON_CreateArray();
        Condition c = {"FooDegraded", "False", "AsExpected", NULL};
        usec_t t0 = 1735689600ULL * USEC_PER_SEC;

        assert_int_equal(conditions_set(a, &c, t0), 1);
        assert_int_equal(conditions_set(a, &c, t0 + USEC_PER_SEC), 0);
        cJSON *e = conditions_find(a, "FooDegraded");
        assert_string_equal(json_get_string(e, "lastTransitionTime"), "2025-01-01T00:00:00Z");
        /* A new message keeps the transition time; a new status moves it. */
        c.message = "still fine";
        assert_int_equal(conditions_set(a, &c, t0 + 2 * USEC_PER_SEC), 1);
        assert_string_equal(json_get_string(e, "lastTransitionTime"), "2025-01-01T00:00:00Z");
        c = (Condition){"FooDegraded", "True", "SyncError", "boom"};
        assert_int_equal(conditions_set(a, &c, t0 + 3 * USEC_PER_SEC), 1);
        assert_string_equal(json_get_string(e, "lastTransitionTime"), "2025-01-01T00:00:03Z");
        assert_true(conditions_is(a, "FooDegraded", "True"));
        assert_false(conditions_is(a, "Missing", "True"));
        assert_int_equal(cJSON_GetArraySize(a), 1);
        Condition bad = {NULL, "True", "X", NULL};
        assert_int_equal(conditions_set(a, &bad, t0), -EINVAL);
}

static void test_plan(void **state)
{
        _cleanup_(plan_done) Plan p = {};
        cJSON *cm = NULL;
        const char *j = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"etcd-pod\","
                        "\"namespace\":\"openshift-etcd\"},\"data\":{\"a\":\"b\"}}";

        assert_int_equal(json_parse(j, strlen(j), &cm), 0);
        plan_apply(&p, &KUBE_CONFIGMAPS, cm);
        plan_condition(&p, "EtcdMembersAvailable", "True", "EtcdQuorate", "%d members are available", 3);
        plan_event(&p, false, "MemberAdd", "added %s as learner", "master-0");
        plan_delete(&p, &KUBE_PODS, "openshift-etcd", "installer-1-master-0", NULL);
        plan_requeue_after(&p, 5 * USEC_PER_SEC);
        plan_requeue_after(&p, USEC_PER_SEC);
        cJSON_Delete(cm);
        assert_int_equal(p.error, 0);
        assert_int_equal(p.n, 4);
        assert_int_equal(p.requeue_after, USEC_PER_SEC);
        _cleanup_free_ char *d0 = intent_describe(&p.intents[0]), *d1 = intent_describe(&p.intents[1]);
        _cleanup_free_ char *d2 = intent_describe(&p.intents[2]), *d3 = intent_describe(&p.intents[3]);
        assert_string_equal(d0, "apply configmaps openshift-etcd/etcd-pod");
        assert_string_equal(d1, "condition EtcdMembersAvailable=True EtcdQuorate");
        assert_string_equal(p.intents[1].cond_message, "3 members are available");
        assert_string_equal(d2, "event Normal MemberAdd: added master-0 as learner");
        assert_string_equal(d3, "delete pods openshift-etcd/installer-1-master-0");
        plan_drop_writes(&p);
        assert_int_equal(p.n, 2);
        assert_int_equal(p.intents[0].type, INTENT_CONDITION);
        assert_int_equal(p.intents[1].type, INTENT_EVENT);

        /* Membership intents describe themselves by name and hex ID; only one per plan. */
        _cleanup_(plan_done) Plan e = {};
        plan_etcd_add_learner(&e, "master-0", "https://10.0.0.10:2380");
        _cleanup_free_ char *d4 = intent_describe(&e.intents[0]);
        assert_string_equal(d4, "etcd add learner master-0 (https://10.0.0.10:2380)");
        plan_etcd_promote(&e, "master-0", 0x835678c2cd1d0733ULL);
        assert_int_equal(e.error, -EBUSY);
        _cleanup_(plan_done) Plan e2 = {};
        plan_etcd_remove(&e2, "etcd-bootstrap", 0x835678c2cd1d0733ULL);
        _cleanup_free_ char *d5 = intent_describe(&e2.intents[0]);
        assert_string_equal(d5, "etcd remove etcd-bootstrap (835678c2cd1d0733)");
        assert_true(intent_is_etcd(&e2.intents[0]));

        /* Maintenance intents count as etcd steps: one per plan, membership included. */
        _cleanup_(plan_done) Plan m = {};
        plan_etcd_defragment(&m, "master-1", 2, "https://10.0.0.11:2379", "db 300 MiB");
        _cleanup_free_ char *d6 = intent_describe(&m.intents[0]);
        assert_string_equal(d6, "etcd defragment master-1 (https://10.0.0.11:2379)");
        assert_true(intent_is_etcd(&m.intents[0]));
        assert_false(intent_is_etcd_membership(&m.intents[0]));
        plan_etcd_remove(&m, "master-2", 3);
        assert_int_equal(m.error, -EBUSY);
        _cleanup_(plan_done) Plan m2 = {};
        plan_etcd_compact(&m2, 1234);
        _cleanup_free_ char *d7 = intent_describe(&m2.intents[0]);
        assert_string_equal(d7, "etcd compact to revision 1234");
        _cleanup_(plan_done) Plan m3 = {};
        plan_etcd_disarm(&m3, "master-0", 1, "NOSPACE");
        plan_etcd_move_leader(&m3, "master-2", 3, 1, "https://10.0.0.10:2379");
        assert_int_equal(m3.error, -EBUSY);
        _cleanup_free_ char *d8 = intent_describe(&m3.intents[0]);
        assert_string_equal(d8, "etcd disarm NOSPACE of master-0");
        _cleanup_(plan_done) Plan m4 = {};
        plan_etcd_defragment(&m4, "master-1", 2, NULL, NULL);
        assert_int_equal(m4.error, -EINVAL);
        /* etcd's downgrade: one etcd step too; ENABLE needs its target. */
        _cleanup_(plan_done) Plan m5 = {};
        plan_etcd_downgrade(&m5, "ENABLE", "3.5");
        _cleanup_free_ char *d9 = intent_describe(&m5.intents[0]);
        assert_string_equal(d9, "etcd downgrade ENABLE to 3.5");
        assert_true(intent_is_etcd(&m5.intents[0]));
        assert_false(intent_is_etcd_membership(&m5.intents[0]));
        plan_etcd_downgrade(&m5, "CANCEL", NULL);
        assert_int_equal(m5.error, -EBUSY);
        _cleanup_(plan_done) Plan m6 = {};
        plan_etcd_downgrade(&m6, "CANCEL", NULL);
        _cleanup_free_ char *d10 = intent_describe(&m6.intents[0]);
        assert_string_equal(d10, "etcd downgrade cancel");
        _cleanup_(plan_done) Plan m7 = {};
        plan_etcd_downgrade(&m7, "ENABLE", NULL);
        assert_int_equal(m7.error, -EINVAL);

        /* An object without a namespace for a namespaced resource is a builder error. */
        _cleanup_(plan_done) Plan q = {};
        cJSON *bad = cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}");
        plan_apply(&q, &KUBE_CONFIGMAPS, bad);
        cJSON_Delete(bad);
        assert_int_equal(q.error, -EINVAL);
        assert_int_equal(q.n, 0);
        plan_condition(&q, "A", "True", "B", NULL);
        assert_int_equal(q.n, 0); /* the first error sticks */
}

/* Scheduling: after a first round, the cheaper controller syncs first. */

static const char *sync_order[16];
static size_t n_synced;

static void note_sync(const char *who)
{
        assert_true(n_synced < ELEMENTSOF(sync_order));
        sync_order[n_synced++] = who;
}

static int sync_slow(const SyncContext *ctx, Plan *p)
{
        (void) ctx;
        (void) p;
        usec_t until = now_usec(CLOCK_MONOTONIC) + 8 * USEC_PER_MSEC;
        while (now_usec(CLOCK_MONOTONIC) < until)
                ; /* CPU work, as a sync doing crypto would */
        note_sync("slow");
        return 0;
}

static int sync_fast(const SyncContext *ctx, Plan *p)
{
        (void) ctx;
        (void) p;
        note_sync("fast");
        return 0;
}

static void run_until_synced(Loop *l, size_t want)
{
        for (int i = 0; i < 1000 && n_synced < want; i++)
                assert_true(sd_event_run(loop_get_event(l), 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(n_synced, want);
}

static void test_cheap_syncs_first(void **state)
{
        static const ControllerSpec slow = {
                .name = "Slow", .degraded_condition = "SlowDegraded", .sync = sync_slow};
        static const ControllerSpec fast = {
                .name = "Fast", .degraded_condition = "FastDegraded", .sync = sync_fast};
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        KubeConfig *cfg = calloc(1, sizeof *cfg);
        assert_non_null(l);
        assert_non_null(cfg);
        cfg->server = strdup("https://127.0.0.1:1"); /* never called: no watches, no writes */
        _cleanup_(kube_client_freep) KubeClient *kc = kube_client_new(l, cfg);
        _cleanup_(informer_factory_freep) InformerFactory *f = informer_factory_new(kc);
        RuntimeConfig rc = {};
        _cleanup_(runtime_freep) Runtime *rt = runtime_new(kc, f, NULL, &rc);
        ControllerStats st_slow, st_fast;

        assert_non_null(rt);
        assert_int_equal(runtime_add(rt, &slow), 0);
        assert_int_equal(runtime_add(rt, &fast), 0);
        n_synced = 0;
        assert_int_equal(runtime_start(rt), 0);
        run_until_synced(l, 2);
        assert_int_equal(runtime_get_stats(rt, "Slow", &st_slow), 0);
        assert_int_equal(runtime_get_stats(rt, "Fast", &st_fast), 0);
        assert_true(st_slow.sync_cost >= 8 * USEC_PER_MSEC);
        assert_true(st_fast.sync_cost < st_slow.sync_cost);

        /* Both due at once, in registration order: the fast one goes first. */
        for (int round = 0; round < 3; round++) {
                n_synced = 0;
                assert_int_equal(runtime_enqueue(rt, "Slow"), 0);
                assert_int_equal(runtime_enqueue(rt, "Fast"), 0);
                run_until_synced(l, 2);
                assert_string_equal(sync_order[0], "fast");
                assert_string_equal(sync_order[1], "slow");
        }
        assert_int_equal(runtime_enqueue(rt, "Nobody"), -ENOENT);
}

/* /healthz's aliveness: a started controller that keeps taking keys is alive;
 * one idle for 3 resync periods (at least 2 minutes) is not, with its name;
 * a runtime not started (a standby) is alive. */
static void test_aliveness(void **state)
{
        static const ControllerSpec ticker = {.name = "Ticker",
                                              .degraded_condition = "TickerDegraded",
                                              .resync = 30 * USEC_PER_SEC,
                                              .sync = sync_fast};
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        KubeConfig *cfg = calloc(1, sizeof *cfg);
        char why[256] = "";
        assert_non_null(l);
        assert_non_null(cfg);
        cfg->server = strdup("https://127.0.0.1:1");
        _cleanup_(kube_client_freep) KubeClient *kc = kube_client_new(l, cfg);
        _cleanup_(informer_factory_freep) InformerFactory *f = informer_factory_new(kc);
        RuntimeConfig rc = {};
        _cleanup_(runtime_freep) Runtime *rt = runtime_new(kc, f, NULL, &rc);
        assert_non_null(rt);
        assert_int_equal(runtime_add(rt, &ticker), 0);
        usec_t now = now_usec(CLOCK_MONOTONIC);
        assert_true(runtime_check_alive(rt, now + 3600 * USEC_PER_SEC, why, sizeof why)); /* standby */
        n_synced = 0;
        assert_int_equal(runtime_start(rt), 0);
        run_until_synced(l, 1);
        now = now_usec(CLOCK_MONOTONIC);
        assert_true(runtime_check_alive(rt, now, why, sizeof why));
        assert_true(runtime_check_alive(rt, now + 89 * USEC_PER_SEC, why, sizeof why));
        assert_false(runtime_check_alive(rt, now + 121 * USEC_PER_SEC, why, sizeof why));
        assert_non_null(strstr(why, "Ticker has not synced for 12"));
        /* It syncs again: alive again. */
        assert_int_equal(runtime_enqueue(rt, "Ticker"), 0);
        run_until_synced(l, 2);
        assert_true(runtime_check_alive(rt, now_usec(CLOCK_MONOTONIC) + 60 * USEC_PER_SEC, why, sizeof why));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_conditions),
                cmocka_unit_test(test_plan),
                cmocka_unit_test(test_cheap_syncs_first),
                cmocka_unit_test(test_aliveness),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
