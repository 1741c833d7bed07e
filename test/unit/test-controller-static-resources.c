/* StaticResourcesController as a table: cached objects in, applies out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/yaml.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"
#include "render/assets.h"

static const struct {
        const KubeResource *res;
        const char *ns, *selector;
} kinds[] = {
        {&KUBE_SERVICES, NS_ETCD, NULL},
        {&KUBE_SERVICEACCOUNTS, NS_ETCD, NULL},
        {&KUBE_ROLES, NS_ETCD, NULL},
        {&KUBE_ROLEBINDINGS, NS_ETCD, NULL},
        {&KUBE_NETWORKPOLICIES, NS_ETCD, NULL},
        {&KUBE_CLUSTERROLES, NULL, "app=etcd-backup"},
        {&KUBE_CLUSTERROLEBINDINGS, NULL, "app=etcd-backup"},
        {&KUBE_SERVICEMONITORS, NS_OPERATOR, NULL},
};

static size_t count_writes(Fixture *f)
{
        return f->plan.n - fixture_count(f, INTENT_CONDITION) - fixture_count(f, INTENT_EVENT);
}

static void feed_all(Fixture *f)
{
        (void) fixture_feed(f, W_NAMESPACES); /* the shared watch of openshift-etcd alone */
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                (void) fixture_feed_to_selected(f, kinds[i].res, kinds[i].ns, kinds[i].selector);
}

/* A fixture on a cluster whose monitoring CRD is served: the informer of ServiceMonitors exists. */
static Fixture *fixture_new_monitored(void)
{
        Fixture *f = fixture_new();
        (void) fixture_feed_to(f, &KUBE_SERVICEMONITORS, NS_OPERATOR);
        return f;
}

static cJSON *parse_asset(const char *path)
{
        const Asset *a = asset_find(path);
        cJSON *j = NULL;
        assert_non_null(a);
        assert_int_equal(yaml_parse(a->data, a->len, &j, NULL), 0);
        return j;
}

static void test_fresh_cluster(void **state)
{
        Fixture *f = fixture_new_monitored();
        assert_int_equal(fixture_sync(f, &controller_static_resources), 0);
        assert_int_equal(count_writes(f), 16);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 16);
        assert_non_null(fixture_find(f, INTENT_APPLY, "servicemonitors", "etcd"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "servicemonitors", "etcd-minimal"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "serviceaccounts", "guard-sa"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "roles", "prometheus-k8s"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "rolebindings", "prometheus-k8s"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "serviceaccounts", "etcd-backup-sa"));
        assert_non_null(
                fixture_find(f, INTENT_APPLY, "clusterroles", "system:openshift:operator:etcd-backup-role"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "clusterrolebindings",
                                     "system:openshift:operator:etcd-backup-crb"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "namespaces", "openshift-etcd"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "services", "etcd"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "networkpolicies", "default-deny"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "networkpolicies", "allow-egress-to-api-and-stores"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "serviceaccounts", "etcd-sa"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "serviceaccounts", "installer-sa"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "roles", "openshift-etcd-installer"));
        const Intent *rb = fixture_find(f, INTENT_APPLY, "rolebindings", "openshift-etcd-installer");
        assert_non_null(rb);
        assert_string_equal(rb->namespace, NS_ETCD);
        assert_string_equal(json_get_string(rb->object, "roleRef.kind"), "Role");
        cJSON *subject = cJSON_GetArrayItem(json_get_array(rb->object, "subjects"), 0);
        assert_string_equal(json_get_string(subject, "name"), "installer-sa");
        assert_string_equal(json_get_string(subject, "namespace"), NS_ETCD);
        const Intent *role = fixture_find(f, INTENT_APPLY, "roles", "openshift-etcd-installer");
        cJSON *rule = cJSON_GetArrayItem(json_get_array(role->object, "rules"), 0);
        assert_int_equal(cJSON_GetArraySize(json_get_array(rule, "resources")), 2);

        /* The namespace and the Service are exactly what render hands the installer. */
        _cleanup_(cJSON_Deletep) cJSON *ns = parse_asset("bootstrap/00_openshift-etcd-ns.yaml");
        _cleanup_(cJSON_Deletep) cJSON *svc = parse_asset("bootstrap/openshift-etcd-svc.yaml");
        assert_true(cJSON_Compare(fixture_find(f, INTENT_APPLY, "namespaces", NULL)->object, ns, true));
        assert_true(cJSON_Compare(fixture_find(f, INTENT_APPLY, "services", NULL)->object, svc, true));

        /* Once carried out, nothing is written again. */
        feed_all(f);
        assert_int_equal(fixture_sync(f, &controller_static_resources), 0);
        assert_int_equal(count_writes(f), 0);
        fixture_free(f);
}

/* The server's defaults and other writers' labels are no reason to write. */
static void test_server_defaults_kept(void **state)
{
        Fixture *f = fixture_new_monitored();
        assert_int_equal(fixture_sync(f, &controller_static_resources), 0);
        feed_all(f);
        fixture_add_to(
                f, &KUBE_SERVICES, NS_ETCD,
                "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"etcd\","
                "\"namespace\":\"openshift-etcd\",\"uid\":\"u1\",\"labels\":{\"k8s-app\":\"etcd\","
                "\"other\":\"x\"},\"annotations\":{\"service.beta.openshift.io/serving-cert-secret-name\":"
                "\"serving-cert\",\"prometheus.io/scrape\":\"true\",\"prometheus.io/scheme\":\"https\","
                "\"service.beta.openshift.io/serving-cert-signed-by\":\"y\"}},"
                "\"spec\":{\"clusterIP\":\"172.30.0.10\",\"type\":\"ClusterIP\",\"sessionAffinity\":"
                "\"None\","
                "\"selector\":{\"etcd\":\"true\"},\"ports\":[{\"name\":\"etcd\",\"port\":2379,"
                "\"protocol\":\"TCP\",\"targetPort\":2379},{\"name\":\"etcd-peer\",\"port\":2380,"
                "\"protocol\":\"TCP\",\"targetPort\":2380},{\"name\":\"etcd-http\",\"port\":2381,"
                "\"protocol\":\"TCP\",\"targetPort\":2381},{\"name\":\"grpc-proxy\",\"port\":9978,"
                "\"protocol\":\"TCP\",\"targetPort\":9978},{\"name\":\"etcd-metrics\",\"port\":9979,"
                "\"protocol\":\"TCP\",\"targetPort\":9979},{\"name\":\"readyz-sidecar\",\"port\":9980,"
                "\"protocol\":\"TCP\",\"targetPort\":9980}]}}");
        fixture_addf(
                f, W_NAMESPACES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"openshift-etcd\","
                "\"labels\":{\"openshift.io/run-level\":\"0\",\"openshift.io/cluster-monitoring\":\"true\","
                "\"pod-security.kubernetes.io/enforce\":\"privileged\",\"pod-security.kubernetes.io/audit\":"
                "\"privileged\",\"pod-security.kubernetes.io/warn\":\"privileged\","
                "\"kubernetes.io/metadata.name\":\"openshift-etcd\"},\"annotations\":{"
                "\"openshift.io/node-selector\":\"\",\"workload.openshift.io/allowed\":\"management\","
                "\"openshift.io/sa.scc.uid-range\":\"1000/1000\"}},\"spec\":{\"finalizers\":"
                "[\"kubernetes\"]},\"status\":{\"phase\":\"Active\"}}");
        assert_int_equal(fixture_sync(f, &controller_static_resources), 0);
        assert_int_equal(count_writes(f), 0);
        fixture_free(f);
}

/* Drift in what we set is put back; a deleted object is recreated. */
static void test_drift_repaired(void **state)
{
        Fixture *f = fixture_new_monitored();
        assert_int_equal(fixture_sync(f, &controller_static_resources), 0);
        feed_all(f);
        fixture_addf(
                f, W_NAMESPACES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"openshift-etcd\","
                "\"labels\":{\"openshift.io/run-level\":\"1\"},\"annotations\":{"
                "\"openshift.io/node-selector\":\"\",\"workload.openshift.io/allowed\":\"management\"}}}");
        fixture_add_to(
                f, &KUBE_SERVICES, NS_ETCD,
                "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"etcd\","
                "\"namespace\":\"openshift-etcd\",\"labels\":{\"k8s-app\":\"etcd\"},\"annotations\":{"
                "\"service.alpha.openshift.io/serving-cert-secret-name\":\"serving-cert\"}},"
                "\"spec\":{\"selector\":{\"etcd\":\"true\"},\"ports\":[{\"name\":\"etcd\",\"port\":2379,"
                "\"protocol\":\"TCP\"}]}}");
        fixture_delete_from(f, &KUBE_SERVICEACCOUNTS, NS_ETCD, "installer-sa");
        assert_int_equal(fixture_sync(f, &controller_static_resources), 0);
        assert_int_equal(count_writes(f), 3);
        assert_non_null(fixture_find(f, INTENT_APPLY, "namespaces", "openshift-etcd"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "services", "etcd"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "serviceaccounts", "installer-sa"));
        /* Applied as a merge: the label wins, others' labels stay. */
        feed_all(f);
        const KubeObject *ns = fixture_get(f, W_NAMESPACES, NULL, "openshift-etcd");
        cJSON *labels = json_get_object(ns->json, "metadata.labels");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(labels, "openshift.io/run-level")),
                            "0");
        assert_int_equal(fixture_sync(f, &controller_static_resources), 0);
        assert_int_equal(count_writes(f), 0);
        fixture_free(f);
}

/* Where monitoring is not installed (no informer of ServiceMonitors has anything, as the runtime's
 * optional one while the CRD answers 404), everything else is applied and no ServiceMonitor. */
static void test_without_monitoring(void **state)
{
        Fixture *f = fixture_new();
        assert_int_equal(fixture_sync(f, &controller_static_resources), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 14);
        assert_null(fixture_find(f, INTENT_APPLY, "servicemonitors", "etcd"));
        assert_non_null(fixture_find(f, INTENT_APPLY, "roles", "prometheus-k8s"));
        fixture_free(f);
}

/* Every embedded static manifest parses into objects of kinds the runtime knows. */
static void test_manifests_parse(void **state)
{
        size_t docs = 0;
        for (const Asset *a = assets; a->path; a++) {
                _cleanup_(cJSON_Deletep) cJSON *all = NULL;
                cJSON *d;
                if (strncmp(a->path, "static/", 7) != 0)
                        continue;
                assert_int_equal(yaml_parse_all(a->data, a->len, &all, NULL), 0);
                JSON_ARRAY_FOREACH (d, all) {
                        const KubeResource *res = kube_resource_by_kind(json_get_string(d, "apiVersion"),
                                                                        json_get_string(d, "kind"));
                        assert_non_null(res);
                        assert_true(kube_name_is_valid(json_get_string(d, "metadata.name")));
                        if (res == &KUBE_SERVICEMONITORS) /* upstream keeps them beside the operator */
                                assert_string_equal(json_get_string(d, "metadata.namespace"), NS_OPERATOR);
                        else if (res->namespaced)
                                assert_string_equal(json_get_string(d, "metadata.namespace"), NS_ETCD);
                        docs++;
                }
        }
        assert_int_equal(docs, 16);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fresh_cluster),        cmocka_unit_test(test_without_monitoring),
                cmocka_unit_test(test_server_defaults_kept), cmocka_unit_test(test_drift_repaired),
                cmocka_unit_test(test_manifests_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
