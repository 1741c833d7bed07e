/* PruneController as a table: revision copies, installer pods and node
 * statuses in; deletions out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

static const char *const cms[] = {"etcd-pod", "etcd-endpoints", "etcd-all-bundles", "revision-status"};

static void cm(Fixture *f, const char *name)
{
        fixture_addf(
                f, W_ETCD_CONFIGMAPS,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                "\"openshift-etcd\",\"uid\":\"uid-%s\"},\"data\":{}}",
                name, name);
}

static void installer(Fixture *f, unsigned rev, const char *phase)
{
        fixture_addf(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"installer-%u-master-0\","
                "\"namespace\":\"openshift-etcd\",\"labels\":{\"app\":\"installer\"}},\"status\":{\"phase\":"
                "\"%s\"}}",
                rev, phase);
}

/* Revisions 1..n of everything, plus a few objects that only look alike. */
static Fixture *revisions(unsigned n, const char *spec, const char *statuses)
{
        char name[64], status[512];
        Fixture *f = fixture_new();
        for (unsigned r = 1; r <= n; r++) {
                for (size_t i = 0; i < ELEMENTSOF(cms); i++) {
                        (void) snprintf(name, sizeof name, "%s-%u", cms[i], r);
                        cm(f, name);
                }
                fixture_addf(f, W_ETCD_SECRETS,
                             "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"etcd-all-"
                             "certs-%u\","
                             "\"namespace\":\"openshift-etcd\"},\"data\":{}}",
                             r);
                installer(f, r, "Succeeded");
        }
        cm(f, "etcd-pod");
        cm(f, "etcd-pod-01");
        cm(f, "etcd-pod-x1");
        cm(f, "etcd-serving-ca-1");
        (void) snprintf(status, sizeof status, "\"latestAvailableRevision\":%u,\"nodeStatuses\":[%s]", n,
                        statuses);
        fixture_etcd_cr(f, spec, status);
        return f;
}

static bool deleted(Fixture *f, const char *plural, const char *name)
{
        return fixture_find(f, INTENT_DELETE, plural, name) != NULL;
}

static void test_keeps_last_five_and_in_use(void **state)
{
        Fixture *f =
                revisions(10, NULL,
                          "{\"nodeName\":\"master-0\",\"currentRevision\":10},{\"nodeName\":\"master-1\","
                          "\"currentRevision\":3},{\"nodeName\":\"master-2\",\"currentRevision\":9,"
                          "\"lastFailedRevision\":2}");
        installer(f, 4, "Running"); /* never a running one */
        assert_int_equal(fixture_sync(f, &controller_prune), 0);
        /* Revisions 1, 4, 5 go (3 and 2 are in use, 6..10 are the last five). */
        static const unsigned gone[] = {1, 4, 5};
        char name[64];
        for (size_t k = 0; k < ELEMENTSOF(gone); k++) {
                for (size_t i = 0; i < ELEMENTSOF(cms); i++) {
                        (void) snprintf(name, sizeof name, "%s-%u", cms[i], gone[k]);
                        assert_true(deleted(f, "configmaps", name));
                }
                (void) snprintf(name, sizeof name, "etcd-all-certs-%u", gone[k]);
                assert_true(deleted(f, "secrets", name));
        }
        assert_true(deleted(f, "pods", "installer-1-master-0"));
        assert_true(deleted(f, "pods", "installer-5-master-0"));
        assert_false(deleted(f, "pods", "installer-4-master-0"));
        assert_int_equal(fixture_count(f, INTENT_DELETE), 3 * 5 + 2);
        /* With a precondition on the object we saw. */
        assert_string_equal(fixture_find(f, INTENT_DELETE, "configmaps", "etcd-pod-1")->precondition_uid,
                            "uid-etcd-pod-1");
        assert_false(deleted(f, "configmaps", "etcd-pod-3"));
        assert_false(deleted(f, "configmaps", "etcd-pod-2"));
        assert_false(deleted(f, "configmaps", "etcd-pod-6"));
        assert_false(deleted(f, "configmaps", "etcd-pod"));
        assert_false(deleted(f, "configmaps", "etcd-pod-01"));
        assert_false(deleted(f, "configmaps", "etcd-serving-ca-1"));
        fixture_free(f);
}

static void test_limits(void **state)
{
        /* -1 keeps everything. */
        Fixture *f = revisions(10, "\"succeededRevisionLimit\":-1", "");
        assert_int_equal(fixture_sync(f, &controller_prune), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_free(f);

        /* 2 keeps 9 and 10 only; a target in flight is kept too. */
        f = revisions(10, "\"succeededRevisionLimit\":2",
                      "{\"nodeName\":\"master-0\",\"targetRevision\":8}");
        assert_int_equal(fixture_sync(f, &controller_prune), 0);
        assert_true(deleted(f, "configmaps", "etcd-pod-7"));
        assert_false(deleted(f, "configmaps", "etcd-pod-8"));
        assert_false(deleted(f, "configmaps", "etcd-pod-9"));
        fixture_free(f);

        /* Too few revisions to prune anything. */
        f = revisions(5, NULL, "");
        assert_int_equal(fixture_sync(f, &controller_prune), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_free(f);
}

static void test_batches(void **state)
{
        Fixture *f = revisions(40, NULL, "");
        assert_int_equal(fixture_sync(f, &controller_prune), 0);
        assert_int_equal(fixture_count(f, INTENT_DELETE), 50);
        assert_true(f->plan.requeue_after > 0);
        fixture_free(f);
}

/* The container command of a planned pod, as one string ("a b c"). */
static void command_of(const Intent *i, char *buf, size_t n)
{
        cJSON *arg;
        size_t len = 0;
        buf[0] = 0;
        JSON_ARRAY_FOREACH (
                arg, json_get_array(cJSON_GetArrayItem(json_get_array(i->object, "spec.containers"), 0),
                                    "command"))
                len += (size_t) snprintf(buf + len, n - len, "%s%s", len ? " " : "", json_string(arg));
}

static void test_pruner_pods(void **state)
{
        char cmd[1024];
        Fixture *f = revisions(10, NULL,
                               "{\"nodeName\":\"master-0\",\"currentRevision\":9,\"targetRevision\":10},"
                               "{\"nodeName\":\"master-1\",\"currentRevision\":10,\"lastFailedRevision\":2},"
                               "{\"nodeName\":\"master-2\",\"currentRevision\":10}");

        /* master-0 rolls out: none there. master-1 runs the latest: revisions up to 5 may go
         * there, but its last failed one. */
        assert_int_equal(fixture_sync(f, &controller_prune), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 1);
        const Intent *c = fixture_find(f, INTENT_CREATE, "pods", "revision-pruner-10-master-1");
        assert_non_null(c);
        assert_string_equal(json_get_string(c->object, "spec.nodeName"), "master-1");
        assert_string_equal(json_get_string(c->object, "metadata.labels.app"), "pruner");
        assert_string_equal(json_get_string(c->object, "spec.serviceAccountName"), "installer-sa");
        command_of(c, cmd, sizeof cmd);
        assert_string_equal(cmd,
                            "cluster-etcd-operator prune --max-eligible-revision=5 --protected-revisions=2 "
                            "--resource-dir=/etc/kubernetes/static-pod-resources --cert-dir=etcd-certs "
                            "--static-pod-name=etcd-pod --pod-manifest-dir=/etc/kubernetes/manifests");

        /* It exists (running): master-2's next, nothing protected below the window. */
        fixture_addf(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"revision-pruner-10-"
                "master-1\",\"namespace\":\"openshift-etcd\",\"labels\":{\"app\":\"pruner\"}},\"status\":"
                "{\"phase\":\"Running\"}}");
        assert_int_equal(fixture_sync(f, &controller_prune), 0);
        c = fixture_find(f, INTENT_CREATE, "pods", "revision-pruner-10-master-2");
        assert_non_null(c);
        command_of(c, cmd, sizeof cmd);
        assert_non_null(strstr(cmd, "--max-eligible-revision=5 --protected-revisions= "));

        /* A finished pruner pod of an old revision goes like an installer pod; a newer one stays. */
        fixture_addf(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"revision-pruner-4-"
                "master-1\",\"namespace\":\"openshift-etcd\",\"labels\":{\"app\":\"pruner\"}},\"status\":"
                "{\"phase\":\"Succeeded\"}}");
        assert_int_equal(fixture_sync(f, &controller_prune), 0);
        assert_true(deleted(f, "pods", "revision-pruner-4-master-1"));
        assert_false(deleted(f, "pods", "revision-pruner-10-master-1"));
        fixture_free(f);

        /* Everything kept (five revisions or fewer): no pruner pod. */
        f = revisions(5, NULL, "{\"nodeName\":\"master-1\",\"currentRevision\":5}");
        assert_int_equal(fixture_sync(f, &controller_prune), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_keeps_last_five_and_in_use),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_batches),
                cmocka_unit_test(test_pruner_pods),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
