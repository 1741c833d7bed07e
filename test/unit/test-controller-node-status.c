/* NodeStatusController as a table: master nodes and their etcd mirror pods
 * in; nodeStatuses writes and StaticPods* conditions out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

static const cJSON *written(Fixture *f)
{
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 1);
        return json_get_array(fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster")->object,
                              "status.nodeStatuses");
}

static int64_t field(const cJSON *entry, const char *key)
{
        int64_t v = 0;
        return json_get_int64(entry, key, &v) >= 0 ? v : 0;
}

static void no_write(Fixture *f)
{
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
}

static void test_entries_added_without_revisions(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-2", "10.0.0.3", true);
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_master(f, "master-1", "10.0.0.2", true);
        for (int i = 0; i < 3; i++) {
                char n[32];
                (void) snprintf(n, sizeof n, "master-%d", i);
                fixture_etcd_pod(f, n, 1, true);
        }
        fixture_etcd_cr(f, NULL, "\"latestAvailableRevision\":1");
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        const cJSON *list = written(f);
        assert_int_equal(cJSON_GetArraySize(list), 3);
        for (int i = 0; i < 3; i++) {
                const cJSON *e = cJSON_GetArrayItem(list, i);
                char n[32];
                (void) snprintf(n, sizeof n, "master-%d", i); /* sorted */
                assert_string_equal(json_get_string(e, "nodeName"), n);
                assert_null(json_get(e, "currentRevision"));
                assert_null(json_get(e, "targetRevision"));
                assert_null(json_get(e, "nodeUID")); /* "uid-master-0" is no UUID */
        }
        /* The next write sets the revisions the pods run. */
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        list = written(f);
        for (int i = 0; i < 3; i++)
                assert_int_equal(field(cJSON_GetArrayItem(list, i), "currentRevision"), 1);
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        no_write(f);
        fixture_expect_condition(f, "StaticPodsAvailable", "True", "AsExpected");
        assert_string_equal(fixture_condition(f, "StaticPodsAvailable")->cond_message,
                            "3 nodes are active; 3 nodes are at revision 1");
        fixture_expect_condition(f, "StaticPodsDegraded", "False", "AsExpected");
        fixture_free(f);
}

static void test_current_moves_on_ready_pod(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":2,\"readyReplicas\":0,\"nodeStatuses\":[{\"nodeName\":"
                        "\"master-0\",\"currentRevision\":1,\"targetRevision\":2}]");
        /* Still the old revision: nothing. */
        fixture_etcd_pod(f, "master-0", 1, true);
        no_write(f);
        /* The new revision, not ready yet: nothing. */
        fixture_etcd_pod(f, "master-0", 2, false);
        no_write(f);
        fixture_expect_condition(f, "StaticPodsAvailable", "False", "ZeroNodesActive");
        /* Ready with the new label: current moves, target is cleared. */
        fixture_etcd_pod(f, "master-0", 2, true);
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        const cJSON *e = cJSON_GetArrayItem(written(f), 0);
        assert_int_equal(field(e, "currentRevision"), 2);
        assert_null(json_get(e, "targetRevision"));
        /* ... and the one master is ready at the latest revision. */
        const Intent *w = fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster");
        assert_int_equal(field(json_get(w->object, "status"), "readyReplicas"), 1);
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        no_write(f);
        /* Never backwards (a restore pod labelled with an older revision), though that pod is
         * no longer ready at the latest revision. */
        fixture_etcd_pod(f, "master-0", 1, true);
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        w = fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster");
        assert_non_null(w);
        assert_int_equal(field(json_get(w->object, "status"), "readyReplicas"), 0);
        assert_int_equal(field(cJSON_GetArrayItem(written(f), 0), "currentRevision"), 2);
        fixture_free(f);
}

static void test_other_fields_kept(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_etcd_pod(f, "master-0", 3, true);
        fixture_etcd_cr(
                f, NULL,
                "\"latestAvailableRevision\":3,\"conditions\":[{\"type\":\"X\",\"status\":\"True\"}],"
                "\"nodeStatuses\":[{\"nodeName\":\"master-0\",\"currentRevision\":2,\"targetRevision\":3,"
                "\"lastFailedRevision\":3,\"lastFailedCount\":1}]");
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        const cJSON *e = cJSON_GetArrayItem(written(f), 0);
        assert_int_equal(field(e, "currentRevision"), 3);
        assert_int_equal(field(e, "lastFailedRevision"), 3);
        assert_int_equal(field(e, "lastFailedCount"), 1);
        const Intent *i = fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster");
        assert_int_equal(cJSON_GetArraySize(json_get_array(i->object, "status.conditions")), 1);
        int64_t latest = 0;
        assert_int_equal(json_get_int64(i->object, "status.latestAvailableRevision", &latest), 0);
        assert_int_equal(latest, 3);
        fixture_free(f);
}

static void test_removed_and_replaced_nodes(void **state)
{
        Fixture *f = fixture_new();
        fixture_add(f, W_MASTER_NODES,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"master-0\",\"uid\":"
                    "\"11111111-2222-3333-4444-555555555555\",\"labels\":{\"node-role.kubernetes.io/"
                    "master\":\"\"}}}");
        fixture_etcd_cr(
                f, NULL,
                "\"nodeStatuses\":[{\"nodeName\":\"gone\",\"currentRevision\":2},{\"nodeName\":\"master-0\","
                "\"nodeUID\":\"99999999-2222-3333-4444-555555555555\",\"currentRevision\":2}]");
        /* Both go: one was deleted, the other replaced (its revision may not be unset in place). */
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        assert_int_equal(cJSON_GetArraySize(written(f)), 0);
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        /* Then the new node's entry, fresh. */
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        const cJSON *e = cJSON_GetArrayItem(written(f), 0);
        assert_string_equal(json_get_string(e, "nodeUID"), "11111111-2222-3333-4444-555555555555");
        assert_null(json_get(e, "currentRevision"));
        fixture_free(f);
}

static void test_degraded_pods(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_master(f, "master-1", "10.0.0.2", true);
        fixture_etcd_cr(f, NULL,
                        "\"nodeStatuses\":[{\"nodeName\":\"master-0\"},{\"nodeName\":\"master-1\"}]");
        fixture_etcd_pod(f, "master-0", 1, true);
        /* master-1: etcd crash-looping. */
        fixture_add(f, W_ETCD_PODS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-master-1\","
                    "\"namespace\":"
                    "\"openshift-etcd\",\"labels\":{\"revision\":\"1\"}},\"status\":{\"phase\":\"Running\","
                    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"lastTransitionTime\":"
                    "\"2026-11-21T23:59:00Z\"}],\"containerStatuses\":[{\"name\":\"etcd\",\"ready\":false,"
                    "\"restartCount\":7,\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":"
                    "\"back-off 5m0s\"}}}]}}");
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        fixture_expect_condition(f, "StaticPodsDegraded", "True", "Error");
        assert_string_equal(fixture_condition(f, "StaticPodsDegraded")->cond_message,
                            "pod/etcd-master-1 container \"etcd\" is crash-looping: back-off 5m0s");
        fixture_expect_condition(f, "StaticPodsAvailable", "True", "AsExpected");

        /* An init container that said why it exited (FallbackToLogsOnError: its log's tail):
         * its last line is the cause, not the kubelet's back-off. */
        fixture_add(f, W_ETCD_PODS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-master-1\","
                    "\"namespace\":\"openshift-etcd\",\"labels\":{\"revision\":\"1\"}},\"status\":{"
                    "\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
                    "\"lastTransitionTime\":\"2026-11-21T23:59:00Z\"}],\"initContainerStatuses\":[{"
                    "\"name\":\"setup\",\"ready\":false,\"restartCount\":3,\"state\":{\"waiting\":{"
                    "\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off 40s restarting failed "
                    "container=setup\"}},\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":"
                    "\"Error\",\"message\":\"+ etcd --version\\nthe etcd image carries etcd 3.6.16, but "
                    "the release declares etcd 3.5\\n\\n\"}}}]}}");
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        fixture_expect_condition(f, "StaticPodsDegraded", "True", "Error");
        assert_string_equal(fixture_condition(f, "StaticPodsDegraded")->cond_message,
                            "pod/etcd-master-1 container \"setup\" is crash-looping, last exit code 1: the "
                            "etcd image carries etcd 3.6.16, but the release declares etcd 3.5");

        /* Not ready for a minute, no crash loop: not yet degraded, but looked at again. */
        fixture_add(f, W_ETCD_PODS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-master-1\","
                    "\"namespace\":"
                    "\"openshift-etcd\",\"labels\":{\"revision\":\"1\"}},\"status\":{\"phase\":\"Running\","
                    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"lastTransitionTime\":"
                    "\"2026-11-21T23:59:00Z\"}],\"containerStatuses\":[{\"name\":\"etcd\",\"ready\":false,"
                    "\"restartCount\":0,\"state\":{\"running\":{}}}]}}");
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        fixture_expect_condition(f, "StaticPodsDegraded", "False", "AsExpected");
        assert_int_equal(f->plan.requeue_after, 4 * 60 * USEC_PER_SEC);
        /* Ten minutes later it is. */
        f->now += 9 * 60 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        fixture_expect_condition(f, "StaticPodsDegraded", "True", "Error");
        assert_string_equal(fixture_condition(f, "StaticPodsDegraded")->cond_message,
                            "pod/etcd-master-1 has not been ready since 2026-11-21T23:59:00Z");
        /* The same words an hour on: time passing alone is no reason to write the status. */
        f->now += 60 * 60 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        assert_string_equal(fixture_condition(f, "StaticPodsDegraded")->cond_message,
                            "pod/etcd-master-1 has not been ready since 2026-11-21T23:59:00Z");
        fixture_free(f);
}

static void test_no_cr(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        assert_int_equal(fixture_sync(f, &controller_node_status), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_entries_added_without_revisions),
                cmocka_unit_test(test_current_moves_on_ready_pod),
                cmocka_unit_test(test_other_fields_kept),
                cmocka_unit_test(test_removed_and_replaced_nodes),
                cmocka_unit_test(test_degraded_pods),
                cmocka_unit_test(test_no_cr),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
