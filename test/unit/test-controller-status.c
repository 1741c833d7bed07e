/* StatusController as a table: etcds/cluster conditions and the etcd view
 * in, clusteroperators/etcd out; every result is fed back to prove the next
 * sync plans nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

#define MIN_AGO(f, m) ((f)->now - (usec_t) (m) *60 * USEC_PER_SEC)

typedef struct Src {
        const char *type, *status, *reason, *message;
        usec_t since;
} Src;

/* etcds/cluster with these conditions (since 0: an hour ago). */
static void etcd_cr(Fixture *f, const char *spec_extra, const Src *src, size_t n)
{
        _cleanup_(cJSON_Deletep) cJSON *cr = NULL;
        char json[512], ts[40];
        (void) snprintf(
                json, sizeof json,
                "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"Etcd\",\"metadata\":{\"name\":"
                "\"cluster\"},\"spec\":{\"managementState\":\"Managed\"%s},\"status\":{\"conditions\":[]}}",
                spec_extra ? spec_extra : "");
        assert_int_equal(json_parse(json, strlen(json), &cr), 0);
        cJSON *conds = json_get_array(cr, "status.conditions");
        for (size_t i = 0; i < n; i++) {
                cJSON *c = cJSON_CreateObject();
                cJSON_AddItemToArray(conds, c);
                cJSON_AddStringToObject(c, "type", src[i].type);
                cJSON_AddStringToObject(c, "status", src[i].status);
                if (src[i].reason)
                        cJSON_AddStringToObject(c, "reason", src[i].reason);
                if (src[i].message)
                        cJSON_AddStringToObject(c, "message", src[i].message);
                format_rfc3339(ts, sizeof ts, src[i].since ? src[i].since : MIN_AGO(f, 60));
                cJSON_AddStringToObject(c, "lastTransitionTime", ts);
        }
        _cleanup_free_ char *txt = json_print(cr);
        fixture_add(f, W_ETCD_CR, txt);
}

static void empty_co(Fixture *f)
{
        fixture_add(f, W_CLUSTEROPERATORS,
                    "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"ClusterOperator\",\"metadata\":{"
                    "\"name\":\"etcd\"},\"spec\":{}}");
}

/* Syncs, expects one status write, feeds it back and proves the next sync is quiet. */
static const cJSON *sync_status(Fixture *f)
{
        assert_int_equal(fixture_sync(f, &controller_status), 0);
        assert_non_null(fixture_find(f, INTENT_UPDATE_STATUS, "clusteroperators", "etcd"));
        assert_int_equal(fixture_feed(f, W_CLUSTEROPERATORS), 1);
        assert_int_equal(fixture_sync(f, &controller_status), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS) + fixture_count(f, INTENT_CREATE), 0);
        return json_get_object(fixture_get(f, W_CLUSTEROPERATORS, NULL, "etcd")->json, "status");
}

static const cJSON *co_cond(const cJSON *status, const char *type)
{
        const cJSON *c = conditions_find(json_get_array(status, "conditions"), type);
        if (!c)
                fail_msg("no %s condition", type);
        return c;
}

static void expect(const cJSON *status, const char *type, const char *st, const char *reason,
                   const char *msg)
{
        const cJSON *c = co_cond(status, type);
        if (!streq_ptr(json_get_string(c, "status"), st) || !streq_ptr(json_get_string(c, "reason"), reason))
                fail_msg("%s: got %s/%s (%s), want %s/%s", type, json_get_string(c, "status"),
                         json_get_string(c, "reason"), strempty(json_get_string(c, "message")), st, reason);
        if (msg && !streq_ptr(json_get_string(c, "message"), msg))
                fail_msg("%s message: got \"%s\", want \"%s\"", type,
                         strempty(json_get_string(c, "message")), msg);
}

static const Src healthy[] = {
        {"EtcdMembersAvailable", "True", "EtcdQuorate", "3 members are available", 0},
        {"EtcdMembersDegraded", "False", "AsExpected", "No unhealthy members found", 0},
        {"EtcdMembersProgressing", "False", "AsExpected", "No unstarted etcd members found", 0},
        {"ClusterMemberControllerDegraded", "False", "AsExpected", NULL, 0},
        {"StaticPodsAvailable", "True", "AsExpected", "3 nodes are active", 0},
};

static void test_created_then_status(void **state)
{
        Fixture *f = fixture_new();
        etcd_cr(f, NULL, healthy, ELEMENTSOF(healthy));
        assert_int_equal(fixture_sync(f, &controller_status), 0);
        const Intent *c = fixture_find(f, INTENT_CREATE, "clusteroperators", "etcd");
        assert_non_null(c);
        assert_null(c->namespace);
        assert_string_equal(json_get_string(c->object, "apiVersion"), "config.openshift.io/v1");
        assert_int_equal(f->plan.n, 1);
        assert_int_equal(fixture_feed(f, W_CLUSTEROPERATORS), 1);
        const cJSON *st = sync_status(f);
        expect(st, "Degraded", "False", "AsExpected", "EtcdMembersDegraded: No unhealthy members found");
        expect(st, "Progressing", "False", "AsExpected", NULL);
        expect(st, "Available", "True", "AsExpected",
               "EtcdMembersAvailable: 3 members are available\nStaticPodsAvailable: 3 nodes are active");
        expect(st, "Upgradeable", "True", "AsExpected", "All is well");
        char ts[40];
        assert_string_equal(json_get_string(co_cond(st, "Available"), "lastTransitionTime"),
                            format_rfc3339(ts, sizeof ts, f->now));
        fixture_free(f);
}

static void test_degraded_after_inertia(void **state)
{
        Fixture *f = fixture_new();
        empty_co(f);
        Src src[] = {
                {"EtcdMembersAvailable", "True", "EtcdQuorate", "3 members are available", 0},
                {"TargetConfigControllerDegraded", "True", "SyncError",
                 "apply configmaps: boom\nsecond line", MIN_AGO(f, 11)},
                {"EtcdMembersDegraded", "True", "UnhealthyMembers", "2 of 3 members are available",
                 MIN_AGO(f, 12)},
                {"BootstrapTeardownDegraded", "False", "AsExpected", NULL, 0},
        };
        etcd_cr(f, NULL, src, ELEMENTSOF(src));
        const cJSON *st = sync_status(f);
        /* Sorted by type: the first offending type is the reason; one line per message line. */
        expect(st, "Degraded", "True", "EtcdMembersDegraded",
               "EtcdMembersDegraded: 2 of 3 members are available\n"
               "TargetConfigControllerDegraded: apply configmaps: boom\n"
               "TargetConfigControllerDegraded: second line");
        assert_int_equal(f->plan.requeue_after, 0);
        fixture_free(f);
}

static void test_degraded_inertia_does_not_flap(void **state)
{
        Fixture *f = fixture_new();
        empty_co(f);
        Src src[] = {
                {"EtcdMembersAvailable", "True", "EtcdQuorate", "3 members are available", 0},
                {"EtcdMembersDegraded", "True", "UnhealthyMembers", "master-1 is unhealthy", MIN_AGO(f, 1)},
                {"InstallerControllerDegraded", "True", "SyncError", "x", f->now - 570 * USEC_PER_SEC},
        };
        etcd_cr(f, NULL, src, ELEMENTSOF(src));
        assert_int_equal(fixture_sync(f, &controller_status), 0);
        /* Both within their 10 minutes: not Degraded, look again when the first ages. */
        assert_int_equal(f->plan.requeue_after, 30 * USEC_PER_SEC);
        assert_int_equal(fixture_feed(f, W_CLUSTEROPERATORS), 1);
        const cJSON *st = json_get_object(fixture_get(f, W_CLUSTEROPERATORS, NULL, "etcd")->json, "status");
        expect(st, "Degraded", "False", "AsExpected", NULL);

        /* 100 s later the installer's condition counts; EtcdMembers still waits. */
        f->now += 100 * USEC_PER_SEC;
        st = sync_status(f);
        expect(st, "Degraded", "True", "InstallerControllerDegraded", "InstallerControllerDegraded: x");
        assert_int_equal(f->plan.requeue_after, 440 * USEC_PER_SEC);
        char ts[40];
        assert_string_equal(json_get_string(co_cond(st, "Degraded"), "lastTransitionTime"),
                            format_rfc3339(ts, sizeof ts, f->now));

        /* Later both count: the message changes, lastTransitionTime does not. */
        usec_t became = f->now;
        f->now += 10 * 60 * USEC_PER_SEC;
        st = sync_status(f);
        expect(st, "Degraded", "True", "EtcdMembersDegraded",
               "EtcdMembersDegraded: master-1 is unhealthy\nInstallerControllerDegraded: x");
        assert_string_equal(json_get_string(co_cond(st, "Degraded"), "lastTransitionTime"),
                            format_rfc3339(ts, sizeof ts, became));
        assert_int_equal(f->plan.requeue_after, 0);
        fixture_free(f);
}

static void test_inertia_override(void **state)
{
        Fixture *f = fixture_new();
        empty_co(f);
        Src src[] = {{"EtcdMembersDegraded", "True", "UnhealthyMembers", "m", f->now - USEC_PER_SEC}};
        etcd_cr(f, ",\"unsupportedConfigOverrides\":{\"degradedInertia\":\"0s\"}", src, ELEMENTSOF(src));
        const cJSON *st = sync_status(f);
        expect(st, "Degraded", "True", "EtcdMembersDegraded", "EtcdMembersDegraded: m");
        fixture_free(f);
}

static void test_progressing(void **state)
{
        Fixture *f = fixture_new();
        empty_co(f);
        Src src[] = {
                {"NodeInstallerProgressing", "True", "NodesAtDifferentRevisions", "1 node is at revision 2",
                 f->now - USEC_PER_SEC},
                {"EtcdMembersProgressing", "False", "AsExpected", "No unstarted etcd members found", 0},
                {"EtcdMembersAvailable", "True", "EtcdQuorate", "3 members are available", 0},
        };
        etcd_cr(f, NULL, src, ELEMENTSOF(src));
        const cJSON *st = sync_status(f);
        /* No inertia on Progressing. */
        expect(st, "Progressing", "True", "NodeInstallerProgressing",
               "NodeInstallerProgressing: 1 node is at revision 2");
        expect(st, "Available", "True", "AsExpected", NULL);
        expect(st, "Degraded", "Unknown", "NoData", NULL);
        fixture_free(f);
}

static void test_available_false_and_unknown(void **state)
{
        Fixture *f = fixture_new();
        empty_co(f);
        Src src[] = {
                {"StaticPodsAvailable", "True", "AsExpected", "3 nodes are active", 0},
                {"EtcdMembersAvailable", "False", "NoQuorum", "1 of 3 voting members are healthy", 0},
                {"OtherAvailable", "Unknown", "Checking", NULL, 0},
        };
        etcd_cr(f, NULL, src, ELEMENTSOF(src));
        const cJSON *st = sync_status(f);
        expect(st, "Available", "False", "EtcdMembersAvailable",
               "EtcdMembersAvailable: 1 of 3 voting members are healthy");

        Src unknown[] = {
                {"StaticPodsAvailable", "True", "AsExpected", NULL, 0},
                {"EtcdMembersAvailable", "Unknown", "EtcdMembersUnknown", "not observed yet", 0},
        };
        etcd_cr(f, NULL, unknown, ELEMENTSOF(unknown));
        st = sync_status(f);
        expect(st, "Available", "Unknown", "EtcdMembersAvailable", "EtcdMembersAvailable: not observed yet");
        fixture_free(f);
}

static void test_upgradeable(void **state)
{
        Fixture *f = fixture_new();
        empty_co(f);
        Src src[] = {
                {"UnsupportedConfigOverridesUpgradeable", "False", "UnsupportedConfigOverridesSet",
                 "unsupportedConfigOverrides are set", 0},
                {"OtherUpgradeable", "Unknown", NULL, NULL, 0},
        };
        etcd_cr(f, NULL, src, ELEMENTSOF(src));
        const cJSON *st = sync_status(f);
        expect(st, "Upgradeable", "False", "UnsupportedConfigOverridesUpgradeable",
               "UnsupportedConfigOverridesUpgradeable: unsupportedConfigOverrides are set");
        Src unknown_only[] = {{"OtherUpgradeable", "Unknown", NULL, NULL, 0}};
        etcd_cr(f, NULL, unknown_only, ELEMENTSOF(unknown_only));
        st = sync_status(f);
        expect(st, "Upgradeable", "True", "AsExpected", "All is well");
        fixture_free(f);
}

/* UnsupportedConfigOverridesController: the overridden leaves, sorted, arrays by index; no
 * keys (absent, null, {}) is no override. */
static void overrides_expect(const char *spec, const char *status, const char *message)
{
        Fixture *f = fixture_new();
        fixture_etcd_cr(f, spec, NULL);
        assert_int_equal(fixture_sync(f, &controller_config_overrides), 0);
        fixture_expect_condition(f, "UnsupportedConfigOverridesUpgradeable", status,
                                 streq(status, "True") ? "NoUnsupportedConfigOverrides"
                                                       : "UnsupportedConfigOverridesSet");
        const Intent *i = fixture_condition(f, "UnsupportedConfigOverridesUpgradeable");
        if (message) {
                assert_non_null(strstr(i->cond_message, message));
                assert_non_null(strstr(i->cond_message, "Upgrades are refused"));
        } else
                assert_string_equal(strempty(i->cond_message), "");
        fixture_free(f);
}

static void test_config_overrides(void **state)
{
        overrides_expect("\"managementState\":\"Managed\"", "True", NULL);
        overrides_expect("\"unsupportedConfigOverrides\":null", "True", NULL);
        overrides_expect("\"unsupportedConfigOverrides\":{}", "True", NULL);
        overrides_expect(
                "\"unsupportedConfigOverrides\":{\"useUnsupportedUnsafeNonHANonProductionUnstableEtcd\":"
                "true,\"degradedInertia\":\"1m\",\"a\":{\"b\":[1,{\"c\":2}],\"d\":{}}}",
                "False",
                "setting: [a.b.0 a.b.1.c degradedInertia "
                "useUnsupportedUnsafeNonHANonProductionUnstableEtcd]. ");
        overrides_expect("\"unsupportedConfigOverrides\":\"x\"", "False",
                         "setting: [spec.unsupportedConfigOverrides]");
        /* 300 keys: the message stays bounded and counts what it leaves out. */
        Buf b = BUF_INIT(64 * 1024);
        assert_int_equal(buf_append(&b, "\"unsupportedConfigOverrides\":{", 30), 0);
        for (int k = 0; k < 300; k++) {
                char kv[64];
                int n = snprintf(kv, sizeof kv, "%s\"key-%03d-%s\":1", k ? "," : "", k,
                                 "padding-padding-padding");
                assert_int_equal(buf_append(&b, kv, (size_t) n), 0);
        }
        assert_int_equal(buf_append(&b, "}", 1), 0);
        Fixture *f = fixture_new();
        fixture_etcd_cr(f, b.data, NULL);
        assert_int_equal(fixture_sync(f, &controller_config_overrides), 0);
        const Intent *i = fixture_condition(f, "UnsupportedConfigOverridesUpgradeable");
        assert_non_null(i);
        assert_true(strlen(i->cond_message) < 5000);
        assert_non_null(strstr(i->cond_message, "setting: [key-000-"));
        assert_non_null(strstr(i->cond_message, " more. Upgrades are refused"));
        fixture_free(f);
        buf_free(&b);
}

static void test_nothing_yet(void **state)
{
        Fixture *f = fixture_new();
        empty_co(f);
        /* No etcds/cluster at all. */
        const cJSON *st = sync_status(f);
        expect(st, "Degraded", "Unknown", "NoData", NULL);
        expect(st, "Progressing", "Unknown", "NoData", NULL);
        expect(st, "Available", "Unknown", "NoData", NULL);
        expect(st, "Upgradeable", "True", "AsExpected", NULL);
        /* The object exists without conditions: still no data, no write. */
        etcd_cr(f, NULL, NULL, 0);
        assert_int_equal(fixture_sync(f, &controller_status), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
        fixture_free(f);
}

static void test_unmanaged(void **state)
{
        Fixture *f = fixture_new();
        empty_co(f);
        fixture_add(f, W_ETCD_CR,
                    "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"Etcd\",\"metadata\":{\"name\":"
                    "\"cluster\"},\"spec\":{\"managementState\":\"Unmanaged\"},\"status\":{\"conditions\":[{"
                    "\"type\":\"EtcdMembersDegraded\",\"status\":\"True\",\"lastTransitionTime\":"
                    "\"2020-01-01T00:00:00Z\"}]}}");
        const cJSON *st = sync_status(f);
        expect(st, "Degraded", "Unknown", "Unmanaged", NULL);
        expect(st, "Available", "Unknown", "Unmanaged", NULL);
        fixture_free(f);
}

static const char *version_of(const cJSON *status, const char *name)
{
        cJSON *v;
        JSON_ARRAY_FOREACH (v, json_get_array(status, "versions"))
                if (streq_ptr(json_get_string(v, "name"), name))
                        return json_get_string(v, "version");
        return NULL;
}

/* etcds/cluster at latestAvailableRevision `latest` with master-0 and master-1 at cur0 and cur1. */
static void etcd_cr_revisions(Fixture *f, int latest, int cur0, int cur1)
{
        fixture_addf(f, W_ETCD_CR,
                     "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"Etcd\",\"metadata\":{\"name\":"
                     "\"cluster\"},\"spec\":{\"managementState\":\"Managed\"},\"status\":{\"conditions\":[],"
                     "\"latestAvailableRevision\":%d,\"nodeStatuses\":[{\"nodeName\":\"master-0\","
                     "\"currentRevision\":%d},{\"nodeName\":\"master-1\",\"currentRevision\":%d}]}}",
                     latest, cur0, cur1);
}

/* As library-go's static pod operators: raw-internal always; operator and etcd
 * (the release version, upstream's OPERATOR_IMAGE_VERSION / OPERAND_IMAGE_VERSION)
 * once every master runs the latest revision with every member healthy, and
 * kept while a later rollout runs, so a cluster-version operator sees an
 * install or upgrade complete only when it is. */
static void test_versions(void **state)
{
        Fixture *f = fixture_new();
        empty_co(f);
        etcd_cr(f, NULL, healthy, ELEMENTSOF(healthy));
        /* Installing (no view, no revision yet): raw-internal only. */
        const cJSON *st = sync_status(f);
        assert_int_equal(cJSON_GetArraySize(json_get_array(st, "versions")), 1);
        assert_string_equal(version_of(st, "raw-internal"), CEO_VERSION);
        assert_null(version_of(st, "operator"));

        f->state.operator_version = "4.99.0-e2e";
        f->state.operand_version = "4.99.0-e2e";
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_member_version(f, 1, "3.5.9");
        fixture_member_version(f, 2, "3.5.9");
        etcd_cr_revisions(f, 3, 3, 2); /* one master behind */
        st = sync_status(f);
        assert_null(version_of(st, "operator"));
        assert_null(version_of(st, "etcd"));
        assert_string_equal(version_of(st, "raw-internal"), "4.99.0-e2e");
        fixture_member(f, 3, NULL, "10.0.0.3", true, false, false); /* a learner being added */
        etcd_cr_revisions(f, 3, 3, 3);
        assert_int_equal(fixture_sync(f, &controller_status), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0); /* not done: nothing new */
        fixture_no_etcd(f);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_member_version(f, 1, "3.5.9");
        fixture_member_version(f, 2, "3.5.9");
        st = sync_status(f);
        assert_string_equal(version_of(st, "operator"), "4.99.0-e2e");
        assert_string_equal(version_of(st, "etcd"), "4.99.0-e2e");
        assert_string_equal(json_get_string(cJSON_GetArrayItem(json_get_array(st, "versions"), 0), "name"),
                            "operator");

        /* An upgrade: the new release shows in raw-internal at once, in operator and
         * etcd only when its rollout is done; nothing changes while it runs. */
        f->state.operator_version = "5.0.0";
        f->state.operand_version = "5.0.0";
        etcd_cr_revisions(f, 4, 4, 3);
        st = sync_status(f);
        assert_string_equal(version_of(st, "operator"), "4.99.0-e2e");
        assert_string_equal(version_of(st, "etcd"), "4.99.0-e2e");
        assert_string_equal(version_of(st, "raw-internal"), "5.0.0");
        fixture_etcd_error(f, -ECONNREFUSED);
        etcd_cr_revisions(f, 4, 4, 4);
        assert_int_equal(fixture_sync(f, &controller_status), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0); /* etcd unreachable: not done */
        fixture_no_etcd(f);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member_version(f, 1, "3.5.10");
        st = sync_status(f);
        assert_string_equal(version_of(st, "operator"), "5.0.0");
        assert_string_equal(version_of(st, "etcd"), "5.0.0");

        /* Without OPERAND_IMAGE_VERSION the etcd version is etcd's own. */
        f->state.operand_version = NULL;
        st = sync_status(f);
        assert_string_equal(version_of(st, "etcd"), "3.5.10");
        fixture_free(f);
}

static void test_related_objects_and_foreign_fields(void **state)
{
        Fixture *f = fixture_new();
        /* Fields others own (extension, other conditions) survive, in place. */
        fixture_add(f, W_CLUSTEROPERATORS,
                    "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"ClusterOperator\",\"metadata\":{"
                    "\"name\":\"etcd\"},\"spec\":{},\"status\":{\"extension\":{\"x\":1},\"conditions\":[{"
                    "\"type\":\"EvaluationConditionsDetected\",\"status\":\"False\",\"lastTransitionTime\":"
                    "\"2020-01-01T00:00:00Z\"}]}}");
        etcd_cr(f, NULL, healthy, ELEMENTSOF(healthy));
        const cJSON *st = sync_status(f);
        cJSON *want = NULL;
        const char *w = "[{\"group\":\"operator.openshift.io\",\"resource\":\"etcds\",\"name\":\"cluster\"},"
                        "{\"group\":\"\",\"resource\":\"namespaces\",\"name\":\"openshift-config\"},"
                        "{\"group\":\"\",\"resource\":\"namespaces\",\"name\":\"openshift-config-managed\"},"
                        "{\"group\":\"\",\"resource\":\"namespaces\",\"name\":\"openshift-etcd-operator\"},"
                        "{\"group\":\"\",\"resource\":\"namespaces\",\"name\":\"openshift-etcd\"}]";
        assert_int_equal(json_parse(w, strlen(w), &want), 0);
        assert_true(cJSON_Compare(json_get_array(st, "relatedObjects"), want, true));
        cJSON_Delete(want);
        assert_non_null(json_get_object(st, "extension"));
        cJSON *conds = json_get_array(st, "conditions");
        assert_int_equal(cJSON_GetArraySize(conds), 5);
        assert_string_equal(json_get_string(cJSON_GetArrayItem(conds, 0), "type"),
                            "EvaluationConditionsDetected");
        assert_string_equal(json_get_string(cJSON_GetArrayItem(conds, 1), "type"), "Degraded");
        /* The write carried the cached resourceVersion (fixture_feed checks it). */
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_created_then_status),
                cmocka_unit_test(test_degraded_after_inertia),
                cmocka_unit_test(test_degraded_inertia_does_not_flap),
                cmocka_unit_test(test_inertia_override),
                cmocka_unit_test(test_progressing),
                cmocka_unit_test(test_available_false_and_unknown),
                cmocka_unit_test(test_upgradeable),
                cmocka_unit_test(test_config_overrides),
                cmocka_unit_test(test_nothing_yet),
                cmocka_unit_test(test_unmanaged),
                cmocka_unit_test(test_versions),
                cmocka_unit_test(test_related_objects_and_foreign_fields),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
