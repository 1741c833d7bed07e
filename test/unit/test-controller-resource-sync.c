/* ResourceSyncController as a table: sources and targets in, copies out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

static const OperatorWatch targets[] = {W_CONFIG_CONFIGMAPS, W_CONFIG_SECRETS, W_OPERATOR_CONFIGMAPS,
                                        W_OPERATOR_SECRETS, W_ETCD_CONFIGMAPS};

static void add_cm(Fixture *f, OperatorWatch w, const char *ns, const char *name, const char *key,
                   const char *value, const char *extra_md)
{
        _cleanup_free_ char *j =
                strdup_printf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                              "\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"uid-%s-%s\"%s},"
                              "\"data\":{\"%s\":\"%s\"}}",
                              name, ns, ns, name, strempty(extra_md), key, value);
        fixture_add(f, w, j);
}

static void add_secret(Fixture *f, OperatorWatch w, const char *ns, const char *name, const char *type,
                       const char *crt, const char *extra_md)
{
        _cleanup_free_ char *j =
                strdup_printf("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{"
                              "\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"uid-%s-%s\"%s},"
                              "\"type\":\"%s\",\"data\":{\"tls.crt\":\"%s\",\"tls.key\":\"a2V5\"}}",
                              name, ns, ns, name, strempty(extra_md), type, crt);
        fixture_add(f, w, j);
}

static void add_sources(Fixture *f, const char *version)
{
        add_cm(f, W_ETCD_CONFIGMAPS, NS_ETCD, "etcd-ca-bundle", "ca-bundle.crt", version, NULL);
        add_cm(f, W_ETCD_CONFIGMAPS, NS_ETCD, "etcd-metrics-ca-bundle", "ca-bundle.crt", version, NULL);
        add_secret(f, W_ETCD_SECRETS, NS_ETCD, "etcd-client", "kubernetes.io/tls", "Y2xpZW50", NULL);
        add_secret(f, W_ETCD_SECRETS, NS_ETCD, "etcd-metric-client", "kubernetes.io/tls", "bWV0cmlj", NULL);
        add_cm(f, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "cluster-config-v1", "install-config",
               "controlPlane:\\n  replicas: 3\\n", NULL);
}

static size_t writes(Fixture *f)
{
        return f->plan.n - fixture_count(f, INTENT_CONDITION) - fixture_count(f, INTENT_EVENT);
}

static void feed(Fixture *f)
{
        for (size_t i = 0; i < ELEMENTSOF(targets); i++)
                (void) fixture_feed(f, targets[i]);
}

static const Intent *find_in(Fixture *f, IntentType t, const char *plural, const char *ns, const char *name)
{
        for (size_t i = 0; i < f->plan.n; i++) {
                const Intent *in = &f->plan.intents[i];
                if (in->type == t && in->res && streq(in->res->plural, plural) &&
                    streq_ptr(in->namespace, ns) && streq_ptr(in->name, name))
                        return in;
        }
        return NULL;
}

static const char *data_of(const cJSON *obj, const char *key)
{
        return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json_get_object(obj, "data"), key));
}

static void test_nothing_without_sources(void **state)
{
        Fixture *f = fixture_new();
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        assert_int_equal(writes(f), 0);
        fixture_free(f);
}

static void test_copies_created(void **state)
{
        static const struct {
                const char *plural, *ns, *name, *key, *value;
        } want[] = {
                {"configmaps", NS_CONFIG, "etcd-serving-ca", "ca-bundle.crt", "v1"},
                {"configmaps", NS_CONFIG, "etcd-ca-bundle", "ca-bundle.crt", "v1"},
                {"configmaps", NS_OPERATOR, "etcd-ca-bundle", "ca-bundle.crt", "v1"},
                {"configmaps", NS_OPERATOR, "etcd-metric-serving-ca", "ca-bundle.crt", "v1"},
                {"secrets", NS_CONFIG, "etcd-client", "tls.crt", "Y2xpZW50"},
                {"secrets", NS_OPERATOR, "etcd-client", "tls.crt", "Y2xpZW50"},
                {"secrets", NS_OPERATOR, "etcd-metric-client", "tls.crt", "bWV0cmlj"},
                {"configmaps", NS_ETCD, "cluster-config-v1", "install-config",
                 "controlPlane:\n  replicas: 3\n"},
        };
        Fixture *f = fixture_new();
        add_sources(f, "v1");
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        assert_int_equal(writes(f), ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                const Intent *in = find_in(f, INTENT_CREATE, want[i].plural, want[i].ns, want[i].name);
                if (!in) {
                        fail_msg("no create of %s %s/%s", want[i].plural, want[i].ns, want[i].name);
                        continue;
                }
                assert_string_equal(data_of(in->object, want[i].key), want[i].value);
                assert_string_equal(json_get_string(in->object, "metadata.namespace"), want[i].ns);
                assert_null(json_get_string(in->object, "metadata.uid"));
                if (streq(want[i].plural, "secrets")) {
                        assert_string_equal(json_get_string(in->object, "type"), "kubernetes.io/tls");
                        assert_string_equal(data_of(in->object, "tls.key"), "a2V5");
                }
        }
        /* Carried out, the copies are up to date: nothing more to write. */
        feed(f);
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        assert_int_equal(writes(f), 0);
        fixture_free(f);
}

/* A changed source updates its copies only, keeping the targets' metadata. */
static void test_update_keeps_metadata(void **state)
{
        Fixture *f = fixture_new();
        add_sources(f, "v1");
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        feed(f);
        add_cm(f, W_CONFIG_CONFIGMAPS, NS_CONFIG, "etcd-serving-ca", "ca-bundle.crt", "v1",
               ",\"labels\":{\"mine\":\"yes\"},\"annotations\":{\"note\":\"kept\"}");
        add_cm(f, W_ETCD_CONFIGMAPS, NS_ETCD, "etcd-ca-bundle", "ca-bundle.crt", "v2", NULL);
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        assert_int_equal(writes(f), 3);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 3);
        const Intent *in = find_in(f, INTENT_UPDATE, "configmaps", NS_CONFIG, "etcd-serving-ca");
        assert_non_null(in);
        assert_string_equal(data_of(in->object, "ca-bundle.crt"), "v2");
        assert_string_equal(json_get_string(in->object, "metadata.labels.mine"), "yes");
        assert_string_equal(json_get_string(in->object, "metadata.annotations.note"), "kept");
        assert_string_equal(json_get_string(in->object, "metadata.uid"),
                            "uid-openshift-config-etcd-serving-ca");
        /* Under the cached resourceVersion: a stale cache conflicts instead of overwriting. */
        assert_string_equal(
                json_get_string(in->object, "metadata.resourceVersion"),
                kube_object_rv_string(fixture_get(f, W_CONFIG_CONFIGMAPS, NS_CONFIG, "etcd-serving-ca")));
        assert_non_null(find_in(f, INTENT_UPDATE, "configmaps", NS_CONFIG, "etcd-ca-bundle"));
        assert_non_null(find_in(f, INTENT_UPDATE, "configmaps", NS_OPERATOR, "etcd-ca-bundle"));
        feed(f);
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        assert_int_equal(writes(f), 0);
        fixture_free(f);
}

/* Extra keys in a target are dropped: the copy is the source's data. */
static void test_extra_keys_dropped(void **state)
{
        Fixture *f = fixture_new();
        add_sources(f, "v1");
        fixture_add(f, W_OPERATOR_CONFIGMAPS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"etcd-metric-"
                    "serving-ca\","
                    "\"namespace\":\"openshift-etcd-operator\"},\"data\":{\"ca-bundle.crt\":\"v1\",\"old\":"
                    "\"x\"}}");
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        const Intent *in = find_in(f, INTENT_UPDATE, "configmaps", NS_OPERATOR, "etcd-metric-serving-ca");
        assert_non_null(in);
        assert_null(data_of(in->object, "old"));
        assert_string_equal(data_of(in->object, "ca-bundle.crt"), "v1");
        fixture_free(f);
}

/* A secret's type is immutable: a target of another type is replaced. */
static void test_secret_type_change(void **state)
{
        Fixture *f = fixture_new();
        add_sources(f, "v1");
        add_secret(f, W_CONFIG_SECRETS, NS_CONFIG, "etcd-client", "Opaque", "Y2xpZW50", NULL);
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        const Intent *del = find_in(f, INTENT_DELETE, "secrets", NS_CONFIG, "etcd-client");
        assert_non_null(del);
        assert_string_equal(del->precondition_uid, "uid-openshift-config-etcd-client");
        const Intent *cr = find_in(f, INTENT_CREATE, "secrets", NS_CONFIG, "etcd-client");
        assert_non_null(cr);
        assert_true(del < cr);
        assert_string_equal(json_get_string(cr->object, "type"), "kubernetes.io/tls");
        fixture_free(f);
}

/* A vanished source never takes its copies with it. */
static void test_source_vanished(void **state)
{
        Fixture *f = fixture_new();
        add_sources(f, "v1");
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        feed(f);
        fixture_delete(f, W_ETCD_CONFIGMAPS, NS_ETCD, "etcd-ca-bundle");
        fixture_delete(f, W_ETCD_SECRETS, NS_ETCD, "etcd-client");
        fixture_delete(f, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "cluster-config-v1");
        assert_int_equal(fixture_sync(f, &controller_resource_sync), 0);
        assert_int_equal(writes(f), 0);
        assert_non_null(fixture_get(f, W_CONFIG_CONFIGMAPS, NS_CONFIG, "etcd-serving-ca"));
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_nothing_without_sources), cmocka_unit_test(test_copies_created),
                cmocka_unit_test(test_update_keeps_metadata),   cmocka_unit_test(test_extra_keys_dropped),
                cmocka_unit_test(test_secret_type_change),      cmocka_unit_test(test_source_vanished),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
