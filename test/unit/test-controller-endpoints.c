/* HostEndpointsController and EtcdEndpointsController as tables: nodes,
 * ConfigMaps and etcd views in, Endpoints/ConfigMap writes out, each result
 * fed back into the cache to prove a second sync plans nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

#define BOOT_KEY "alpha.installer.openshift.io/etcd-bootstrap"

static void endpoints_cm(Fixture *f, const char *bootstrap_ip, const char *data)
{
        char json[2048];
        char ann[256] = "";
        if (bootstrap_ip)
                (void) snprintf(ann, sizeof ann, ",\"annotations\":{\"%s\":\"%s\"}", BOOT_KEY, bootstrap_ip);
        (void) snprintf(
                json, sizeof json,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"etcd-endpoints\","
                "\"namespace\":\"openshift-etcd\"%s},\"data\":%s}",
                ann, data ? data : "{}");
        fixture_add(f, W_ETCD_CONFIGMAPS, json);
}

static void bootstrap_status(Fixture *f, const char *status)
{
        char json[512];
        (void) snprintf(json, sizeof json,
                        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bootstrap\","
                        "\"namespace\":\"kube-system\"},\"data\":{\"status\":\"%s\"}}",
                        status);
        fixture_add(f, W_KUBE_SYSTEM_CONFIGMAPS, json);
}

static void three_masters(Fixture *f)
{
        fixture_master(f, "master-2", "10.0.0.3", true);
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_master(f, "master-1", "10.0.0.2", false);
}

static const cJSON *cached_cm(Fixture *f)
{
        const KubeObject *o = fixture_get(f, W_ETCD_CONFIGMAPS, "openshift-etcd", "etcd-endpoints");
        assert_non_null(o);
        return o->json;
}

static const char *annotation_of(const cJSON *obj)
{
        cJSON *ann = json_get_object(obj, "metadata.annotations");
        return ann ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ann, BOOT_KEY)) : NULL;
}

/* Fails unless `data` is exactly the JSON object `want`. */
static void expect_data(const cJSON *data, const char *want)
{
        cJSON *w = NULL;
        assert_int_equal(json_parse(want, strlen(want), &w), 0);
        if (!cJSON_Compare(data, w, true)) {
                _cleanup_free_ char *got = json_print(data);
                cJSON_Delete(w);
                fail_msg("data: got %s, want %s", got ? got : "(null)", want);
        }
        cJSON_Delete(w);
}

/* The planned etcd-endpoints data, fed back; then a second sync must plan no write. */
static void expect_cm_write(Fixture *f, const char *want)
{
        const Intent *a = fixture_find(f, INTENT_APPLY, "configmaps", "etcd-endpoints");
        assert_non_null(a);
        assert_null(annotation_of(a->object)); /* APPLY keeps the annotation by merging */
        expect_data(json_get_object(a->object, "data"), want);
        assert_int_equal(fixture_feed(f, W_ETCD_CONFIGMAPS), 1);
        expect_data(json_get_object(cached_cm(f), "data"), want);
}

static void expect_no_writes(Fixture *f, const ControllerSpec *spec)
{
        assert_int_equal(fixture_sync(f, spec), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY) + fixture_count(f, INTENT_PATCH) +
                                 fixture_count(f, INTENT_CREATE) + fixture_count(f, INTENT_UPDATE),
                         0);
}

/* ---- EtcdEndpointsController ---- */

static void test_bootstrap_phase(void **state)
{
        Fixture *f = fixture_new();
        three_masters(f);
        endpoints_cm(f, "10.0.0.9", NULL);
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.9", false, true, true);
        /* Only the bootstrap member: nothing to publish, the annotation serves it. */
        expect_no_writes(f, &controller_etcd_endpoints);
        assert_string_equal(annotation_of(cached_cm(f)), "10.0.0.9");
        fixture_free(f);
}

static void test_bootstrap_by_ip(void **state)
{
        Fixture *f = fixture_new();
        endpoints_cm(f, "10.0.0.9", NULL);
        /* The installer's member may carry another name: its peer host is the annotation's IP. */
        fixture_member(f, 9, "bootstrap-host", "10.0.0.9", false, true, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        expect_cm_write(f, "{\"1\":\"10.0.0.1\"}");
        assert_string_equal(annotation_of(cached_cm(f)), "10.0.0.9");
        fixture_free(f);
}

static void test_masters_joining(void **state)
{
        Fixture *f = fixture_new();
        three_masters(f);
        endpoints_cm(f, "10.0.0.9", NULL);
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.9", false, true, true);
        fixture_member(f, 0xa1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 0xa2, "master-1", "10.0.0.2", true, true, true); /* learner */
        fixture_member(f, 0xa3, NULL, "10.0.0.3", false, false, false);    /* voter, not started */
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        assert_int_equal(fixture_count(f, INTENT_PATCH), 0);
        assert_non_null(fixture_find(f, INTENT_EVENT, NULL, NULL));
        expect_cm_write(f, "{\"a1\":\"10.0.0.1\"}");
        assert_string_equal(annotation_of(cached_cm(f)), "10.0.0.9");
        expect_no_writes(f, &controller_etcd_endpoints);

        /* master-1 promoted, master-2 started. */
        fixture_no_etcd(f);
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.9", false, true, true);
        fixture_member(f, 0xa1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 0xa2, "master-1", "10.0.0.2", false, true, true);
        fixture_member(f, 0xa3, "master-2", "10.0.0.3", false, true, false); /* unhealthy voters stay */
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        expect_cm_write(f, "{\"a1\":\"10.0.0.1\",\"a2\":\"10.0.0.2\","
                           "\"a3\":\"10.0.0.3\"}");
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_free(f);
}

static void members_after_join(Fixture *f, bool with_bootstrap)
{
        fixture_no_etcd(f);
        if (with_bootstrap)
                fixture_member(f, 9, "etcd-bootstrap", "10.0.0.9", false, true, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_member(f, 3, "master-2", "10.0.0.3", false, true, true);
}

#define THREE_DATA                                             \
        "{\"1\":\"10.0.0.1\",\"2\":\"10.0.0.2\",\"3\":\"10.0." \
        "0.3\"}"

static void test_bootstrap_teardown_order(void **state)
{
        Fixture *f = fixture_new();
        endpoints_cm(f, "10.0.0.9", THREE_DATA);

        /* Bootstrap member still listed, bootstrap complete: keep. */
        members_after_join(f, true);
        bootstrap_status(f, "complete");
        expect_no_writes(f, &controller_etcd_endpoints);

        /* Member removed, bootstrap not complete (no ConfigMap, then another status): keep. */
        fixture_delete(f, W_KUBE_SYSTEM_CONFIGMAPS, "kube-system", "bootstrap");
        members_after_join(f, false);
        expect_no_writes(f, &controller_etcd_endpoints);
        bootstrap_status(f, "progressing");
        expect_no_writes(f, &controller_etcd_endpoints);
        assert_string_equal(annotation_of(cached_cm(f)), "10.0.0.9");

        /* Member removed and bootstrap complete: the annotation goes, data stays. */
        bootstrap_status(f, "complete");
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        const Intent *p = fixture_find(f, INTENT_PATCH, "configmaps", "etcd-endpoints");
        assert_non_null(p);
        assert_int_equal(p->patch_type, KUBE_PATCH_MERGE);
        assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
                json_get_object(p->object, "metadata.annotations"), BOOT_KEY)));
        assert_int_equal(fixture_feed(f, W_ETCD_CONFIGMAPS), 1);
        assert_null(annotation_of(cached_cm(f)));
        expect_data(json_get_object(cached_cm(f), "data"), THREE_DATA);
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_free(f);
}

static void test_removal_needs_member_list(void **state)
{
        Fixture *f = fixture_new();
        endpoints_cm(f, "10.0.0.9", THREE_DATA);
        bootstrap_status(f, "complete");
        /* Without a member list we cannot tell the bootstrap member is gone. */
        fixture_etcd_error(f, -ECONNREFUSED);
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_no_etcd(f);
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_free(f);
}

static void test_removal_with_data_change(void **state)
{
        Fixture *f = fixture_new();
        endpoints_cm(f, "10.0.0.9", "{\"1\":\"10.0.0.1\"}");
        bootstrap_status(f, "complete");
        members_after_join(f, false);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        /* Data first (without the annotation), then the removal. */
        assert_int_equal(f->plan.intents[0].type, INTENT_APPLY);
        assert_non_null(fixture_find(f, INTENT_PATCH, "configmaps", "etcd-endpoints"));
        assert_int_equal(fixture_feed(f, W_ETCD_CONFIGMAPS), 2);
        assert_null(annotation_of(cached_cm(f)));
        expect_data(json_get_object(cached_cm(f), "data"), THREE_DATA);
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_free(f);
}

static void test_bootstrap_in_place(void **state)
{
        Fixture *f = fixture_new();
        /* The master reuses the bootstrap host's IP: its member is a master, not the bootstrap. */
        fixture_master(f, "master-0", "10.0.0.1", true);
        endpoints_cm(f, "10.0.0.1", NULL);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        assert_int_equal(fixture_count(f, INTENT_PATCH), 0); /* bootstrap not complete */
        expect_cm_write(f, "{\"1\":\"10.0.0.1\"}");
        bootstrap_status(f, "complete");
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        assert_non_null(fixture_find(f, INTENT_PATCH, "configmaps", "etcd-endpoints"));
        fixture_free(f);
}

static void test_annotation_kept_without_servers(void **state)
{
        Fixture *f = fixture_new();
        endpoints_cm(f, "10.0.0.9", NULL);
        bootstrap_status(f, "complete");
        /* Bootstrap member gone but nothing to publish yet: removing the annotation would
         * leave the kube-apiserver without a server. */
        fixture_member(f, 1, "master-0", "10.0.0.1", true, true, true);
        expect_no_writes(f, &controller_etcd_endpoints);
        assert_string_equal(annotation_of(cached_cm(f)), "10.0.0.9");
        fixture_free(f);
}

static void test_unreachable_keeps_map(void **state)
{
        Fixture *f = fixture_new();
        three_masters(f);
        fixture_master(f, "master-3", "10.0.0.4", true);
        endpoints_cm(f, NULL, "{\"1\":\"10.0.0.1\"}");
        fixture_etcd_error(f, -ECONNREFUSED);
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_no_etcd(f);
        expect_no_writes(f, &controller_etcd_endpoints);
        /* Empty data beside the bootstrap annotation: the bootstrap member serves, keep too. */
        endpoints_cm(f, "10.0.0.9", NULL);
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_free(f);
}

static void test_unreachable_falls_back_to_nodes(void **state)
{
        Fixture *f = fixture_new();
        three_masters(f);
        fixture_etcd_error(f, -ETIMEDOUT);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        const Intent *a = fixture_find(f, INTENT_APPLY, "configmaps", "etcd-endpoints");
        assert_non_null(a);
        assert_string_equal(a->namespace, "openshift-etcd");
        expect_cm_write(f,
                        "{\"master-0\":\"10.0.0.1\",\"master-1\":\"10.0.0.2\",\"master-2\":\"10.0.0.3\"}");
        expect_no_writes(f, &controller_etcd_endpoints);

        /* etcd answers again: member IDs replace the node names. */
        members_after_join(f, false);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        expect_cm_write(f, THREE_DATA);
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_free(f);
}

static void test_no_snapshot_empty_map_falls_back(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        endpoints_cm(f, NULL, NULL);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        expect_cm_write(f, "{\"master-0\":\"10.0.0.1\"}");
        fixture_free(f);
}

static void test_nothing_to_publish(void **state)
{
        Fixture *f = fixture_new();
        /* No ConfigMap, etcd down, no master IP: nothing is created. */
        fixture_etcd_error(f, -ECONNREFUSED);
        expect_no_writes(f, &controller_etcd_endpoints);
        /* A member list without a publishable member never empties a populated map. */
        endpoints_cm(f, NULL, THREE_DATA);
        fixture_no_etcd(f);
        fixture_member(f, 4, "master-3", "10.0.0.4", true, true, true);
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_free(f);
}

static void test_ipv6_members(void **state)
{
        Fixture *f = fixture_new();
        endpoints_cm(f, "fd00::9", NULL);
        fixture_member(f, 9, "bootstrap-host", "[fd00:0:0::9]", false, true, true);
        fixture_member(f, 1, "master-0", "[fd00::1]", false, true, true);
        fixture_member(f, 2, "master-1", "[FD00:0::2]", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        expect_cm_write(f, "{\"1\":\"fd00::1\",\"2\":\"fd00::2\"}");
        expect_no_writes(f, &controller_etcd_endpoints);
        fixture_free(f);
}

/* Keys are the member ID as upstream prints it (%x): no zero padding, even
 * when the top nibble is 0; a value with all 16 digits keeps them. */
static void test_keys_unpadded(void **state)
{
        Fixture *f = fixture_new();
        fixture_member(f, 0x0123456789abcdefULL, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 0xf123456789abcdefULL, "master-1", "10.0.0.2", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        expect_cm_write(f, "{\"123456789abcdef\":\"10.0.0.1\",\"f123456789abcdef\":\"10.0.0.2\"}");
        fixture_free(f);
}

static void test_missing_cm_created(void **state)
{
        Fixture *f = fixture_new();
        members_after_join(f, false);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        expect_cm_write(f, THREE_DATA);
        assert_null(annotation_of(cached_cm(f)));
        expect_no_writes(f, &controller_etcd_endpoints);
        /* A member replaced (new ID, same IP) and one removed. */
        fixture_no_etcd(f);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 0x77, "master-1", "10.0.0.2", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        expect_cm_write(f, "{\"1\":\"10.0.0.1\",\"77\":\"10.0.0.2\"}");
        fixture_free(f);
}

/* ---- HostEndpointsController ---- */

static const cJSON *cached_ep(Fixture *f)
{
        const KubeObject *o = fixture_get(f, W_ETCD_ENDPOINTS, "openshift-etcd", "host-etcd-2");
        assert_non_null(o);
        return o->json;
}

static void expect_addresses(const cJSON *ep, const char *want)
{
        cJSON *subsets = json_get_array(ep, "subsets");
        assert_int_equal(cJSON_GetArraySize(subsets), 1);
        expect_data(json_get_array(cJSON_GetArrayItem(subsets, 0), "addresses"), want);
        expect_data(json_get_array(cJSON_GetArrayItem(subsets, 0), "ports"),
                    "[{\"name\":\"etcd\",\"port\":2379,\"protocol\":\"TCP\"}]");
}

#define THREE_ADDRS                                                                   \
        "[{\"ip\":\"10.0.0.1\",\"hostname\":\"master-0\",\"nodeName\":\"master-0\"}," \
        "{\"ip\":\"10.0.0.2\",\"hostname\":\"master-1\",\"nodeName\":\"master-1\"},"  \
        "{\"ip\":\"10.0.0.3\",\"hostname\":\"master-2\",\"nodeName\":\"master-2\"}]"

static void test_host_endpoints_created(void **state)
{
        Fixture *f = fixture_new();
        three_masters(f);
        endpoints_cm(f, "10.0.0.9", NULL);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        const Intent *a = fixture_find(f, INTENT_APPLY, "endpoints", "host-etcd-2");
        assert_non_null(a);
        assert_string_equal(a->namespace, "openshift-etcd");
        assert_string_equal(json_get_string(a->object, "kind"), "Endpoints");
        /* Sorted by node name, ready or not. */
        expect_addresses(a->object, THREE_ADDRS);
        assert_string_equal(annotation_of(a->object), "10.0.0.9");
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);
        expect_no_writes(f, &controller_host_endpoints);
        fixture_free(f);
}

static void test_host_endpoints_node_ip_change(void **state)
{
        Fixture *f = fixture_new();
        three_masters(f);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        assert_null(annotation_of(fixture_find(f, INTENT_APPLY, "endpoints", "host-etcd-2")->object));
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);
        expect_no_writes(f, &controller_host_endpoints);

        fixture_master(f, "master-1", "10.0.1.2", true);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        expect_addresses(fixture_find(f, INTENT_APPLY, "endpoints", "host-etcd-2")->object,
                         "[{\"ip\":\"10.0.0.1\",\"hostname\":\"master-0\",\"nodeName\":\"master-0\"},"
                         "{\"ip\":\"10.0.1.2\",\"hostname\":\"master-1\",\"nodeName\":\"master-1\"},"
                         "{\"ip\":\"10.0.0.3\",\"hostname\":\"master-2\",\"nodeName\":\"master-2\"}]");
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);
        expect_no_writes(f, &controller_host_endpoints);

        /* A master leaves. */
        fixture_delete(f, W_MASTER_NODES, NULL, "master-2");
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);
        assert_int_equal(
                cJSON_GetArraySize(json_get_array(
                        cJSON_GetArrayItem(json_get_array(cached_ep(f), "subsets"), 0), "addresses")),
                2);
        expect_no_writes(f, &controller_host_endpoints);
        fixture_free(f);
}

static void test_host_endpoints_mirror_annotation(void **state)
{
        Fixture *f = fixture_new();
        three_masters(f);
        endpoints_cm(f, "10.0.0.9", NULL);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);

        /* The IP changes there: here too. */
        endpoints_cm(f, "10.0.0.8", NULL);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        assert_string_equal(annotation_of(fixture_find(f, INTENT_APPLY, "endpoints", "host-etcd-2")->object),
                            "10.0.0.8");
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);
        assert_string_equal(annotation_of(cached_ep(f)), "10.0.0.8");

        /* Removed there: removed here, by a merge patch (APPLY would merge it back). */
        endpoints_cm(f, NULL, THREE_DATA);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        const Intent *p = fixture_find(f, INTENT_PATCH, "endpoints", "host-etcd-2");
        assert_non_null(p);
        assert_int_equal(p->patch_type, KUBE_PATCH_MERGE);
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);
        assert_null(annotation_of(cached_ep(f)));
        expect_addresses(cached_ep(f), THREE_ADDRS);
        expect_no_writes(f, &controller_host_endpoints);
        fixture_free(f);
}

static void test_host_endpoints_without_cm_keeps_annotation(void **state)
{
        Fixture *f = fixture_new();
        three_masters(f);
        /* An upgraded seed cluster: host-etcd-2 exists with the annotation, no ConfigMap. */
        fixture_add(f, W_ETCD_ENDPOINTS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"host-etcd-2\","
                    "\"namespace\":\"openshift-etcd\",\"annotations\":{\"" BOOT_KEY "\":\"10.0.0.9\"}},"
                    "\"subsets\":[{\"addresses\":[{\"ip\":\"10.0.0.1\",\"nodeName\":\"master-0\"}]}]}");
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        assert_int_equal(fixture_count(f, INTENT_PATCH), 0);
        const Intent *a = fixture_find(f, INTENT_APPLY, "endpoints", "host-etcd-2");
        assert_non_null(a);
        assert_string_equal(annotation_of(a->object), "10.0.0.9");
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);
        expect_addresses(cached_ep(f), THREE_ADDRS);
        assert_string_equal(annotation_of(cached_ep(f)), "10.0.0.9");
        expect_no_writes(f, &controller_host_endpoints);
        fixture_free(f);
}

static void test_host_endpoints_ipv6_and_fqdn(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0.example.com", "fd00:0::1", true);
        fixture_master(f, "master-1", "fd00::2", true);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        /* Canonical IPv6, no brackets; an FQDN is no DNS label, so no hostname. */
        expect_addresses(fixture_find(f, INTENT_APPLY, "endpoints", "host-etcd-2")->object,
                         "[{\"ip\":\"fd00::1\",\"nodeName\":\"master-0.example.com\"},"
                         "{\"ip\":\"fd00::2\",\"hostname\":\"master-1\",\"nodeName\":\"master-1\"}]");
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);
        expect_no_writes(f, &controller_host_endpoints);
        fixture_free(f);
}

static void test_host_endpoints_no_addresses(void **state)
{
        Fixture *f = fixture_new();
        /* No master at all, then a master whose InternalIP is not an IP. */
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), -ENODATA);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        fixture_master(f, "master-0", "not-an-ip", true);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), -ENODATA);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        const Intent *e = fixture_find(f, INTENT_EVENT, NULL, NULL);
        assert_non_null(e);
        assert_true(e->warning);
        assert_string_equal(e->reason, "HostEndpointsNoAddresses");
        /* One good master is enough; the bad one is left out. */
        fixture_master(f, "master-1", "10.0.0.2", true);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        expect_addresses(fixture_find(f, INTENT_APPLY, "endpoints", "host-etcd-2")->object,
                         "[{\"ip\":\"10.0.0.2\",\"hostname\":\"master-1\",\"nodeName\":\"master-1\"}]");
        fixture_free(f);
}

/* Loopback and link-local InternalIPs are left out (kube-apiserver refuses them in
 * Endpoints: every write would fail); with no other address the object holds none,
 * and the sync does not fail. */
static void test_host_endpoints_special_addresses(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "127.0.100.10", true);
        fixture_master(f, "master-1", "fe80::1", true);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        const Intent *a = fixture_find(f, INTENT_APPLY, "endpoints", "host-etcd-2");
        assert_non_null(a);
        assert_int_equal(cJSON_GetArraySize(json_get_array(a->object, "subsets")), 0);
        assert_int_equal(fixture_feed(f, W_ETCD_ENDPOINTS), 1);
        expect_no_writes(f, &controller_host_endpoints);
        /* As the API returns it: no subsets key at all. */
        fixture_add(f, W_ETCD_ENDPOINTS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"host-etcd-2\","
                    "\"namespace\":\"openshift-etcd\"}}");
        expect_no_writes(f, &controller_host_endpoints);
        fixture_master(f, "master-2", "10.0.0.3", true);
        fixture_master(f, "master-3", "169.254.0.7", true);
        assert_int_equal(fixture_sync(f, &controller_host_endpoints), 0);
        expect_addresses(fixture_find(f, INTENT_APPLY, "endpoints", "host-etcd-2")->object,
                         "[{\"ip\":\"10.0.0.3\",\"hostname\":\"master-2\",\"nodeName\":\"master-2\"}]");
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bootstrap_phase),
                cmocka_unit_test(test_bootstrap_by_ip),
                cmocka_unit_test(test_masters_joining),
                cmocka_unit_test(test_bootstrap_teardown_order),
                cmocka_unit_test(test_removal_needs_member_list),
                cmocka_unit_test(test_removal_with_data_change),
                cmocka_unit_test(test_bootstrap_in_place),
                cmocka_unit_test(test_annotation_kept_without_servers),
                cmocka_unit_test(test_unreachable_keeps_map),
                cmocka_unit_test(test_unreachable_falls_back_to_nodes),
                cmocka_unit_test(test_no_snapshot_empty_map_falls_back),
                cmocka_unit_test(test_nothing_to_publish),
                cmocka_unit_test(test_ipv6_members),
                cmocka_unit_test(test_keys_unpadded),
                cmocka_unit_test(test_missing_cm_created),
                cmocka_unit_test(test_host_endpoints_created),
                cmocka_unit_test(test_host_endpoints_node_ip_change),
                cmocka_unit_test(test_host_endpoints_mirror_annotation),
                cmocka_unit_test(test_host_endpoints_without_cm_keeps_annotation),
                cmocka_unit_test(test_host_endpoints_ipv6_and_fqdn),
                cmocka_unit_test(test_host_endpoints_no_addresses),
                cmocka_unit_test(test_host_endpoints_special_addresses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
