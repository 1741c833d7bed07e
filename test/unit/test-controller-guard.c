/* GuardController as tables: a guard per master running etcd, its probe on
 * that member's readyz, the budget at masters - 1, cordoned masters, stale
 * guards, masters without etcd, and single-member control planes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

static Fixture *three(void)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.10", true);
        fixture_master(f, "master-1", "10.0.0.11", true);
        fixture_master(f, "master-2", "10.0.0.12", true);
        for (int i = 0; i < 3; i++) {
                char node[32];
                (void) snprintf(node, sizeof node, "master-%d", i);
                fixture_etcd_pod(f, node, 3, true);
        }
        return f;
}

static const Intent *create_of(Fixture *f, const char *name)
{
        for (size_t k = 0; k < f->plan.n; k++) {
                const Intent *i = &f->plan.intents[k];
                if (i->type == INTENT_CREATE && streq_ptr(json_get_string(i->object, "metadata.name"), name))
                        return i;
        }
        return NULL;
}

static void test_guards_and_budget(void **state)
{
        Fixture *f = three();
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 3);
        const Intent *g = create_of(f, "etcd-guard-master-1");
        assert_non_null(g);
        assert_string_equal(json_get_string(g->object, "metadata.namespace"), "openshift-etcd");
        assert_string_equal(json_get_string(g->object, "metadata.labels.app"), "guard");
        assert_string_equal(json_get_string(g->object, "spec.nodeName"), "master-1");
        assert_string_equal(json_get_string(g->object, "spec.priorityClassName"), "system-cluster-critical");
        /* As upstream's: guard-sa without a token, its own user namespace, every taint tolerated. */
        assert_string_equal(json_get_string(g->object, "spec.serviceAccountName"), "guard-sa");
        assert_true(cJSON_IsFalse(json_get(g->object, "spec.automountServiceAccountToken")));
        assert_true(cJSON_IsFalse(json_get(g->object, "spec.hostUsers")));
        cJSON *tol = json_get_array(g->object, "spec.tolerations");
        assert_int_equal(cJSON_GetArraySize(tol), 1);
        assert_string_equal(json_get_string(cJSON_GetArrayItem(tol, 0), "operator"), "Exists");
        assert_null(json_get(cJSON_GetArrayItem(tol, 0), "key"));
        cJSON *c = cJSON_GetArrayItem(json_get_array(g->object, "spec.containers"), 0);
        assert_string_equal(json_get_string(c, "image"), f->state.operator_image);
        assert_string_equal(json_get_string(c, "readinessProbe.httpGet.host"), "10.0.0.11");
        assert_string_equal(json_get_string(c, "readinessProbe.httpGet.scheme"), "HTTPS");
        assert_string_equal(json_get_string(c, "readinessProbe.httpGet.path"), "readyz");
        int64_t port = 0, period = 0;
        assert_int_equal(json_get_int64(c, "readinessProbe.httpGet.port", &port), 0);
        assert_int_equal(json_get_int64(c, "readinessProbe.periodSeconds", &period), 0);
        assert_int_equal(port, 9980);
        assert_int_equal(period, 5);
        const Intent *pdb = fixture_find(f, INTENT_APPLY, "poddisruptionbudgets", "etcd-guard-pdb");
        assert_non_null(pdb);
        int64_t min = 0;
        assert_int_equal(json_get_int64(pdb->object, "spec.minAvailable", &min), 0);
        assert_int_equal(min, 2);
        assert_string_equal(json_get_string(pdb->object, "spec.selector.matchLabels.app"), "guard");
        fixture_expect_condition(f, "GuardControllerDegraded", "False", "AsExpected");

        /* Once they exist nothing is made or written again. */
        fixture_feed(f, W_ETCD_PODS);
        fixture_feed(f, W_ETCD_PDBS);
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        assert_int_equal(fixture_count(f, INTENT_DELETE), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);

        /* A master whose address changed: its guard probes the old one, so it goes. */
        fixture_master(f, "master-2", "10.0.0.99", true);
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_non_null(fixture_find(f, INTENT_DELETE, "pods", "etcd-guard-master-2"));
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        fixture_delete(f, W_ETCD_PODS, "openshift-etcd", "etcd-guard-master-2");
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        c = cJSON_GetArrayItem(
                json_get_array(create_of(f, "etcd-guard-master-2")->object, "spec.containers"), 0);
        assert_string_equal(json_get_string(c, "readinessProbe.httpGet.host"), "10.0.0.99");

        /* A guard of an older release (the default ServiceAccount, a token mounted): a pod's
         * ServiceAccount cannot change, so it goes and comes back as guard-sa. */
        fixture_feed(f, W_ETCD_PODS);
        cJSON *old = cJSON_Duplicate(
                fixture_get(f, W_ETCD_PODS, "openshift-etcd", "etcd-guard-master-0")->json, true);
        assert_int_equal(json_set_path_string(old, "spec.serviceAccountName", "default"), 0);
        fixture_add_object(f, W_ETCD_PODS, old);
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_non_null(fixture_find(f, INTENT_DELETE, "pods", "etcd-guard-master-0"));
        assert_int_equal(fixture_count(f, INTENT_DELETE), 1);
        fixture_free(f);
}

static void test_cordoned_and_removed_masters(void **state)
{
        Fixture *f = three();
        fixture_addf(
                f, W_MASTER_NODES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"master-1\",\"labels\":{"
                "\"node-role.kubernetes.io/master\":\"\"}},\"spec\":{\"unschedulable\":true},\"status\":{"
                "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.11\"}],\"conditions\":[{"
                "\"type\":\"Ready\",\"status\":\"True\"}]}}");
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_null(create_of(f, "etcd-guard-master-1")); /* a drained master gets no new guard */
        assert_int_equal(fixture_count(f, INTENT_CREATE), 2);
        int64_t min = 0;
        const Intent *pdb = fixture_find(f, INTENT_APPLY, "poddisruptionbudgets", "etcd-guard-pdb");
        assert_int_equal(json_get_int64(pdb->object, "spec.minAvailable", &min), 0);
        assert_int_equal(min, 2); /* still every master but one */

        /* A guard whose node is no longer a master goes. */
        fixture_feed(f, W_ETCD_PODS);
        fixture_delete(f, W_MASTER_NODES, NULL, "master-2");
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_non_null(fixture_find(f, INTENT_DELETE, "pods", "etcd-guard-master-2"));
        fixture_free(f);
}

static void test_master_without_etcd(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.10", true);
        fixture_etcd_pod(f, "master-0", 1, true);
        fixture_addf(
                f, W_MASTER_NODES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"master-1\",\"labels\":{"
                "\"node-role.kubernetes.io/master\":\"\"}},\"status\":{\"addresses\":[{\"type\":"
                "\"InternalIP\",\"address\":\"10.0.0.11\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":"
                "\"True\",\"lastTransitionTime\":\"2026-11-22T00:00:00Z\"}]}}");
        /* Ready for 5 minutes without etcd: an installation in progress, not an error. */
        usec_t ready_at = 0;
        assert_int_equal(parse_rfc3339("2026-11-22T00:00:00Z", &ready_at), 0);
        f->now = ready_at + 5 * 60 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_null(create_of(f, "etcd-guard-master-1"));
        assert_non_null(create_of(f, "etcd-guard-master-0"));
        fixture_expect_condition(f, "GuardControllerDegraded", "False", "AsExpected");
        f->now = ready_at + 11 * 60 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        fixture_expect_condition(f, "GuardControllerDegraded", "True", "Error");
        assert_non_null(strstr(fixture_condition(f, "GuardControllerDegraded")->cond_message, "master-1"));
        fixture_free(f);
}

static void test_single_member(void **state)
{
        Fixture *f = three();
        fixture_add(f, W_INFRASTRUCTURES,
                    "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"Infrastructure\",\"metadata\":{"
                    "\"name\":\"cluster\"},\"status\":{\"controlPlaneTopology\":\"SingleReplica\"}}");
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        fixture_expect_condition(f, "GuardControllerDegraded", "False", "AsExpected");
        fixture_free(f);
}

/* Every character that ends a JSON string or opens a member of its own (review H1, L4). */
#define HOSTILE "x\"}]},\"evil\":{\"a\":[1,\":\"]},\"y\":\"{"

static char *guard_shape(const char *image, const char *ip, cJSON **ret)
{
        Fixture *f = three();
        f->state.operator_image = image;
        fixture_master(f, "master-1", "10.0.0.11", true);
        /* The etcd pod without a podIP: the probe goes to the node's InternalIP. */
        cJSON *pod =
                cJSON_Duplicate(fixture_get(f, W_ETCD_PODS, "openshift-etcd", "etcd-master-1")->json, true);
        assert_non_null(pod);
        cJSON_DeleteItemFromObjectCaseSensitive(json_get_object(pod, "status"), "podIP");
        fixture_add_object(f, W_ETCD_PODS, pod);
        cJSON *node = cJSON_Duplicate(fixture_get(f, W_MASTER_NODES, NULL, "master-1")->json, true);
        assert_int_equal(json_set_path_string(node, "status.addresses.0.address", ip), 0);
        fixture_add_object(f, W_MASTER_NODES, node);
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        const Intent *g = create_of(f, "etcd-guard-master-1");
        char *shape = g ? fixture_shape(g->object) : NULL;
        *ret = g ? cJSON_Duplicate(g->object, true) : NULL;
        fixture_free(f);
        return shape;
}

static void test_values_stay_values(void **state)
{
        cJSON *plain = NULL, *g = NULL;
        _cleanup_free_ char *want = guard_shape("quay.io/ceo@sha256:1", "10.0.0.11", &plain);
        assert_non_null(want);
        assert_string_equal(json_get_string(cJSON_GetArrayItem(json_get_array(plain, "spec.containers"), 0),
                                            "readinessProbe.httpGet.host"),
                            "10.0.0.11");
        cJSON_Delete(plain);
        _cleanup_free_ char *got = guard_shape(HOSTILE, "10.0.0.11", &g);
        assert_non_null(got);
        if (!streq(got, want))
                fail_msg("the guard's shape changed:\n%s\nwanted:\n%s", got, want);
        assert_string_equal(
                json_get_string(cJSON_GetArrayItem(json_get_array(g, "spec.containers"), 0), "image"),
                HOSTILE);
        cJSON_Delete(g);
        /* An InternalIP that is no IP (nothing validates a Node's status) is no probe host. */
        static const char *const bad[] = {HOSTILE, "10.0.0.11\",\"port\":1", "master-1.example", "",
                                          "10.0.0.256"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *none = guard_shape("quay.io/ceo@sha256:1", bad[i], &g);
                if (none)
                        fail_msg("\"%s\" became a probe host", bad[i]);
        }
        _cleanup_free_ char *v6 = guard_shape("quay.io/ceo@sha256:1", "fd00::11", &g);
        assert_non_null(v6);
        assert_string_equal(json_get_string(cJSON_GetArrayItem(json_get_array(g, "spec.containers"), 0),
                                            "readinessProbe.httpGet.host"),
                            "fd00::11");
        cJSON_Delete(g);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_guards_and_budget),
                cmocka_unit_test(test_cordoned_and_removed_masters),
                cmocka_unit_test(test_master_without_etcd),
                cmocka_unit_test(test_single_member),
                cmocka_unit_test(test_values_stay_values),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
