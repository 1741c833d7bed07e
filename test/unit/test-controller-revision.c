/* RevisionController as a table: the revisioned objects, their copies and
 * etcds/cluster in; copies, revision-status-N and the status bump out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

static void cm(Fixture *f, const char *name, const char *data)
{
        fixture_addf(
                f, W_ETCD_CONFIGMAPS,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                "\"openshift-etcd\"},\"data\":{%s}}",
                name, data);
}

static void secret(Fixture *f, const char *name, const char *data)
{
        fixture_addf(
                f, W_ETCD_SECRETS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                "\"openshift-etcd\"},\"type\":\"Opaque\",\"data\":{%s}}",
                name, data);
}

static const char *const content[][2] = {
        {"etcd-pod", "\"pod.yaml\":\"kind: Pod\""},
        {"etcd-endpoints", "\"1\":\"10.0.0.1\""},
        {"etcd-all-bundles", "\"server-ca-bundle.crt\":\"CA\""},
};

/* The current objects and, for revisions 1..n, their copies. */
static Fixture *objects(unsigned n, const char *spec)
{
        char name[64], status[128];
        Fixture *f = fixture_new();
        for (size_t i = 0; i < ELEMENTSOF(content); i++)
                cm(f, content[i][0], content[i][1]);
        secret(f, "etcd-all-certs", "\"etcd-peer-master-0.crt\":\"Q0VSVA==\"");
        for (unsigned r = 1; r <= n; r++) {
                for (size_t i = 0; i < ELEMENTSOF(content); i++) {
                        (void) snprintf(name, sizeof name, "%s-%u", content[i][0], r);
                        cm(f, name, content[i][1]);
                }
                (void) snprintf(name, sizeof name, "etcd-all-certs-%u", r);
                secret(f, name, "\"etcd-peer-master-0.crt\":\"Q0VSVA==\"");
                (void) snprintf(name, sizeof name, "revision-status-%u", r);
                cm(f, name, "\"status\":\"InProgress\",\"reason\":\"test\"");
        }
        (void) snprintf(status, sizeof status,
                        "\"latestAvailableRevision\":%u,\"nodeStatuses\":[{\"nodeName\":\"master-0\","
                        "\"currentRevision\":%u}],\"conditions\":[]",
                        n, n);
        fixture_etcd_cr(f, spec, n ? status : NULL);
        return f;
}

static void three_healthy(Fixture *f)
{
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_member(f, 3, "master-2", "10.0.0.3", false, true, true);
}

static void bootstrap_complete(Fixture *f)
{
        fixture_add(f, W_KUBE_SYSTEM_CONFIGMAPS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bootstrap\","
                    "\"namespace\":\"kube-system\"},\"data\":{\"status\":\"complete\"}}");
}

static int64_t latest(Fixture *f)
{
        int64_t v = 0;
        (void) json_get_int64(fixture_get(f, W_ETCD_CR, NULL, "cluster")->json,
                              "status.latestAvailableRevision", &v);
        return v;
}

/* Phase one: exactly the copies of `rev` and its status, nothing published. */
static void expect_copies(Fixture *f, unsigned rev)
{
        char name[64];
        assert_int_equal(fixture_count(f, INTENT_APPLY), 5);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
        for (size_t i = 0; i < ELEMENTSOF(content); i++) {
                (void) snprintf(name, sizeof name, "%s-%u", content[i][0], rev);
                assert_non_null(fixture_find(f, INTENT_APPLY, "configmaps", name));
        }
        (void) snprintf(name, sizeof name, "etcd-all-certs-%u", rev);
        const Intent *s = fixture_find(f, INTENT_APPLY, "secrets", name);
        assert_non_null(s);
        assert_string_equal(json_get_string(s->object, "type"), "Opaque");
        (void) snprintf(name, sizeof name, "revision-status-%u", rev);
        const Intent *st = fixture_find(f, INTENT_APPLY, "configmaps", name);
        assert_non_null(st);
        assert_string_equal(json_get_string(st->object, "data.status"), "InProgress");
}

/* Feeds phase one, runs phase two, feeds it; returns the reason published. */
static const char *complete(Fixture *f, unsigned rev)
{
        assert_int_equal(fixture_feed(f, W_ETCD_CONFIGMAPS), 4);
        assert_int_equal(fixture_feed(f, W_ETCD_SECRETS), 1);
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 1);
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        assert_int_equal(latest(f), rev);
        /* Settled: the next sync finds revision `rev` current. */
        const char *reason = json_get_string(fixture_get(f, W_ETCD_CR, NULL, "cluster")->json,
                                             "status.latestAvailableRevisionReason");
        return reason;
}

static void expect_nothing(Fixture *f)
{
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
}

static void test_initial_revision(void **state)
{
        Fixture *f = objects(0, NULL);
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 1);
        assert_string_equal(complete(f, 1), "initial revision");
        expect_nothing(f);
        fixture_free(f);
}

static void test_nothing_changed(void **state)
{
        Fixture *f = objects(3, NULL);
        three_healthy(f);
        bootstrap_complete(f);
        expect_nothing(f);
        assert_int_equal(f->plan.n, 0);
        fixture_free(f);
}

static void test_content_change(void **state)
{
        Fixture *f = objects(3, NULL);
        three_healthy(f);
        bootstrap_complete(f);
        cm(f, "etcd-endpoints", "\"1\":\"10.0.0.1\",\"2\":\"10.0.0.2\"");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        const Intent *copy = fixture_find(f, INTENT_APPLY, "configmaps", "etcd-endpoints-4");
        assert_string_equal(json_get_string(copy->object, "data.2"), "10.0.0.2");
        /* Until every copy is in, the same copies again, never the bump. */
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        assert_string_equal(complete(f, 4), "configmap/etcd-endpoints has changed");
        /* Only our two fields changed. */
        const KubeObject *cr = fixture_get(f, W_ETCD_CR, NULL, "cluster");
        assert_string_equal(
                json_get_string(cJSON_GetArrayItem(json_get_array(cr->json, "status.nodeStatuses"), 0),
                                "nodeName"),
                "master-0");
        assert_non_null(json_get_array(cr->json, "status.conditions"));
        expect_nothing(f);
        fixture_free(f);
}

static void test_stale_half_revision_refreshed(void **state)
{
        Fixture *f = objects(3, NULL);
        cm(f, "etcd-pod", "\"pod.yaml\":\"kind: Pod v2\"");
        /* Left by an earlier attempt, with older content. */
        cm(f, "etcd-pod-4", "\"pod.yaml\":\"kind: Pod v1.5\"");
        cm(f, "revision-status-4", "\"status\":\"InProgress\",\"reason\":\"old\"");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        assert_string_equal(complete(f, 4), "configmap/etcd-pod has changed");
        fixture_free(f);
}

/* The cache keeps the copies' long values as digests (pod.yaml, private keys): the
 * revision is still current while they match, and a one-byte change is a new one. */
static void test_long_values_compared_by_digest(void **state)
{
        char pod[300], key[300], data[400], name[64];
        Fixture *f = objects(3, NULL);
        three_healthy(f);
        bootstrap_complete(f);
        memset(pod, 'p', sizeof pod - 1);
        pod[sizeof pod - 1] = 0;
        memset(key, 'K', sizeof key - 1);
        key[sizeof key - 1] = 0;
        (void) snprintf(data, sizeof data, "\"pod.yaml\":\"%s\"", pod);
        cm(f, "etcd-pod", data);
        cm(f, "etcd-pod-3", data);
        (void) snprintf(data, sizeof data,
                        "\"etcd-peer-master-0.crt\":\"Q0VSVA==\",\"etcd-peer-master-0.key\":\"%s\"", key);
        secret(f, "etcd-all-certs", data);
        secret(f, "etcd-all-certs-3", data);
        const KubeObject *copy = fixture_get(f, W_ETCD_CONFIGMAPS, "openshift-etcd", "etcd-pod-3");
        assert_true(
                startswith(json_string(cJSON_GetObjectItem(json_get_object(copy->json, "data"), "pod.yaml")),
                           "sha256:"));
        copy = fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-all-certs-3");
        cJSON *d = json_get_object(copy->json, "data");
        assert_true(startswith(json_string(cJSON_GetObjectItem(d, "etcd-peer-master-0.key")), "sha256:"));
        assert_string_equal(json_string(cJSON_GetObjectItem(d, "etcd-peer-master-0.crt")), "Q0VSVA==");
        /* The current objects are no copies: kept whole. */
        d = json_get_object(fixture_get(f, W_ETCD_CONFIGMAPS, "openshift-etcd", "etcd-pod")->json, "data");
        assert_string_equal(json_string(cJSON_GetObjectItem(d, "pod.yaml")), pod);
        expect_nothing(f);

        key[150] = 'L';
        (void) snprintf(data, sizeof data,
                        "\"etcd-peer-master-0.crt\":\"Q0VSVA==\",\"etcd-peer-master-0.key\":\"%s\"", key);
        secret(f, "etcd-all-certs", data);
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        /* The copy written carries the whole key; the cache then holds its digest. */
        (void) snprintf(name, sizeof name, "etcd-all-certs-%u", 4);
        const Intent *w = fixture_find(f, INTENT_APPLY, "secrets", name);
        assert_string_equal(json_string(cJSON_GetObjectItem(json_get_object(w->object, "data"),
                                                            "etcd-peer-master-0.key")),
                            key);
        assert_string_equal(complete(f, 4), "secret/etcd-all-certs has changed");
        expect_nothing(f);
        fixture_free(f);
}

static void test_missing_copy(void **state)
{
        Fixture *f = objects(2, NULL);
        fixture_delete(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-all-certs-2");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 3);
        assert_string_equal(complete(f, 3), "secret/etcd-all-certs-2 is missing");
        fixture_free(f);
}

static void test_waits_for_required_objects(void **state)
{
        Fixture *f = objects(0, NULL);
        fixture_delete(f, W_ETCD_CONFIGMAPS, "openshift-etcd", "etcd-all-bundles");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(f->plan.n, 0);
        assert_true(f->plan.requeue_after > 0);
        assert_string_equal(f->plan.waiting,
                            "no revision yet: configmap openshift-etcd/etcd-all-bundles does not exist");
        fixture_free(f);
}

static void test_quorum_gate(void **state)
{
        Fixture *f = objects(3, NULL);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_member(f, 3, "master-2", "10.0.0.3", false, true, false);
        cm(f, "etcd-pod", "\"pod.yaml\":\"kind: Pod v2\"");

        /* Before bootstrap completes, revisions always go out. */
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        assert_int_equal(fixture_feed(f, W_ETCD_CONFIGMAPS), 4);
        assert_int_equal(fixture_feed(f, W_ETCD_SECRETS), 1);

        /* After: 2 of 3 healthy has no fault tolerance, and publishing waits too. */
        bootstrap_complete(f);
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(f->plan.n, 0);
        assert_true(f->plan.requeue_after > 0);
        assert_non_null(f->plan.waiting);
        assert_non_null(strstr(f->plan.waiting, "2 of 3 voting members are healthy"));
        fixture_free(f);

        /* The bootstrap ConfigMap says complete, but the bootstrap member is still there. */
        f = objects(3, NULL);
        bootstrap_complete(f);
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.10", false, true, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, false);
        cm(f, "etcd-pod", "\"pod.yaml\":\"kind: Pod v2\"");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        fixture_free(f);

        /* Unknown membership after bootstrap: wait. */
        f = objects(3, NULL);
        bootstrap_complete(f);
        fixture_etcd_error(f, -ECONNREFUSED);
        cm(f, "etcd-pod", "\"pod.yaml\":\"kind: Pod v2\"");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(f->plan.n, 0);
        /* Two voters, both healthy: quorum 2 leaves nothing to spare. */
        fixture_free(f);
        f = objects(3, NULL);
        bootstrap_complete(f);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        cm(f, "etcd-pod", "\"pod.yaml\":\"kind: Pod v2\"");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_master(f, "master-1", "10.0.0.2", true);
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(f->plan.n, 0);
        /* ... unless a master waits to join (a dead one's replacement): it needs a revision
         * that carries it, or the cluster could never grow back to three. */
        fixture_master(f, "master-2", "10.0.0.3", true);
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        /* A master whose Machine is being deleted is leaving, not joining. */
        fixture_add(f, W_MASTER_MACHINES,
                    "{\"apiVersion\":\"machine.openshift.io/v1beta1\",\"kind\":\"Machine\",\"metadata\":{"
                    "\"name\":\"m2\",\"namespace\":\"openshift-machine-api\",\"deletionTimestamp\":"
                    "\"2026-11-26T10:00:00Z\"},\"status\":{\"phase\":\"Deleting\",\"nodeRef\":{\"name\":"
                    "\"master-2\"}}}");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_delete(f, W_MASTER_NODES, NULL, "master-2");
        /* ... unless the cluster is single-replica by design. */
        fixture_add(f, W_INFRASTRUCTURES,
                    "{\"apiVersion\":\"config.openshift.io/"
                    "v1\",\"kind\":\"Infrastructure\",\"metadata\":{\"name\":"
                    "\"cluster\"},\"status\":{\"controlPlaneTopology\":\"SingleReplica\"}}");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        fixture_free(f);

        /* Three healthy voters: go. */
        f = objects(3, NULL);
        bootstrap_complete(f);
        three_healthy(f);
        cm(f, "etcd-pod", "\"pod.yaml\":\"kind: Pod v2\"");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        fixture_free(f);
}

/* Revision 3 is the latest after bootstrap; etcd-pod has changed since. Each master's member
 * answers healthy or not and its etcd pod runs `revs[i]`, ready or not. */
static Fixture *three_masters(const bool healthy[3], const unsigned revs[3], const bool ready[3])
{
        static const char *const names[] = {"master-0", "master-1", "master-2"};
        static const char *const ips[] = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};
        Fixture *f = objects(3, NULL);
        bootstrap_complete(f);
        for (int i = 0; i < 3; i++) {
                fixture_master(f, names[i], ips[i], true);
                fixture_member(f, (uint64_t) i + 1, names[i], ips[i], false, true, healthy[i]);
                fixture_etcd_pod(f, names[i], revs[i], ready[i]);
        }
        cm(f, "etcd-pod", "\"pod.yaml\":\"kind: Pod v2\"");
        return f;
}

/* A release whose etcd does not start (its etcd image refused by the pod's setup container):
 * master-2's member is down at the latest revision, 3. The fixed release's revision must
 * still come, or the cluster would wait on two members for ever; while master-2's etcd is
 * down at an older revision, or two voters are down, the gate holds. */
static void test_quorum_gate_voter_down_at_latest(void **state)
{
        /* Down at revision 2: not the latest's doing, the gate holds. */
        Fixture *f = three_masters((const bool[]){true, true, false}, (const unsigned[]){3, 3, 2},
                                   (const bool[]){true, true, false});
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(f->plan.n, 0);
        assert_non_null(strstr(strempty(f->plan.waiting), "2 of 3 voting members are healthy"));

        /* Down at revision 3, the latest: the next revision goes out. */
        fixture_etcd_pod(f, "master-2", 3, false);
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);

        /* ... but not while its pod looks ready (etcd is down for another reason) ... */
        fixture_etcd_pod(f, "master-2", 3, true);
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_free(f);

        /* ... nor with two voters down: no quorum to roll anything with. */
        f = three_masters((const bool[]){true, false, false}, (const unsigned[]){3, 3, 3},
                          (const bool[]){true, false, false});
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_free(f);
}

static void test_force_redeployment(void **state)
{
        Fixture *f = objects(3, "\"forceRedeploymentReason\":\"try again\"");
        three_healthy(f);
        bootstrap_complete(f);
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        const Intent *st = fixture_find(f, INTENT_APPLY, "configmaps", "revision-status-4");
        assert_string_equal(json_get_string(st->object, "data.forceRedeploymentReason"), "try again");
        assert_string_equal(complete(f, 4), "forced redeployment: try again");
        expect_nothing(f);
        /* The same reason again is no new request; another one is. */
        fixture_etcd_cr(f, "\"forceRedeploymentReason\":\"once more\"", "\"latestAvailableRevision\":4");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 5);
        fixture_free(f);
}

/* etcd-pod carries forceRedeploymentReason as upstream's does: a forced redeployment is
 * published only once etcd-pod has the new reason, so the one change makes one revision
 * (published earlier, the etcd-pod update would make a second one right after). */
static void test_force_waits_for_etcd_pod(void **state)
{
        Fixture *f = objects(3, "\"forceRedeploymentReason\":\"try again\"");
        three_healthy(f);
        bootstrap_complete(f);
        cm(f, "etcd-pod", "\"pod.yaml\":\"kind: Pod\",\"forceRedeploymentReason\":\"\"");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        assert_int_equal(fixture_feed(f, W_ETCD_CONFIGMAPS), 4);
        assert_int_equal(fixture_feed(f, W_ETCD_SECRETS), 1);
        /* Copies made, but etcd-pod still says "": not published, the copies stay. */
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
        assert_int_equal(latest(f), 3);
        /* TargetConfigController writes the reason: the copies follow, then it is published. */
        cm(f, "etcd-pod", "\"pod.yaml\":\"kind: Pod\",\"forceRedeploymentReason\":\"try again\"");
        assert_int_equal(fixture_sync(f, &controller_revision), 0);
        expect_copies(f, 4);
        const Intent *copy = fixture_find(f, INTENT_APPLY, "configmaps", "etcd-pod-4");
        assert_string_equal(json_get_string(copy->object, "data.forceRedeploymentReason"), "try again");
        assert_string_equal(complete(f, 4),
                            "configmap/etcd-pod has changed, forced redeployment: try again");
        expect_nothing(f);
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_initial_revision),
                cmocka_unit_test(test_nothing_changed),
                cmocka_unit_test(test_content_change),
                cmocka_unit_test(test_stale_half_revision_refreshed),
                cmocka_unit_test(test_long_values_compared_by_digest),
                cmocka_unit_test(test_missing_copy),
                cmocka_unit_test(test_waits_for_required_objects),
                cmocka_unit_test(test_quorum_gate),
                cmocka_unit_test(test_quorum_gate_voter_down_at_latest),
                cmocka_unit_test(test_force_redeployment),
                cmocka_unit_test(test_force_waits_for_etcd_pod),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
