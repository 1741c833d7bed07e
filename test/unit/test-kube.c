/* Status decoding, errno mapping, REST paths, and informer event application. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "kube/client.h"
#include "kube/informer.h"

static cJSON *parse(const char *s)
{
        cJSON *j = NULL;
        assert_int_equal(json_parse(s, strlen(s), &j), 0);
        return j;
}

static void test_status(void **state)
{
        _cleanup_(cJSON_Deletep) cJSON *j = parse(
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                "\"message\":"
                "\"Operation cannot be fulfilled on configmaps \\\"cfg\\\": the object has been modified\","
                "\"reason\":\"Conflict\",\"details\":{\"name\":\"cfg\",\"kind\":\"configmaps\","
                "\"retryAfterSeconds\":3},"
                "\"code\":409}");
        _cleanup_(kube_status_done) KubeStatus st = {};

        assert_int_equal(kube_status_parse(j, &st), 0);
        assert_int_equal(st.code, 409);
        assert_string_equal(st.reason, "Conflict");
        assert_non_null(strstr(st.message, "has been modified"));
        assert_int_equal(st.retry_after, 3);
        assert_int_equal(kube_status_to_errno(409, "Conflict"), -ESTALE);
        assert_int_equal(kube_status_to_errno(409, "AlreadyExists"), -EEXIST);
        assert_int_equal(kube_status_to_errno(404, "NotFound"), -ENOENT);
        assert_int_equal(kube_status_to_errno(403, NULL), -EPERM);
        assert_int_equal(kube_status_to_errno(410, "Expired"), KUBE_ERR_EXPIRED);
        assert_int_equal(kube_status_to_errno(429, NULL), -EBUSY);
        assert_int_equal(kube_status_to_errno(422, "Invalid"), -EINVAL);
        assert_int_equal(kube_status_to_errno(500, NULL), -EREMOTEIO);
        _cleanup_(cJSON_Deletep) cJSON *notstatus = parse("{\"kind\":\"ConfigMap\"}");
        assert_int_equal(kube_status_parse(notstatus, &st), -EBADMSG);
}

/* kube_name_is_valid: a path-safe name, looser than base/names.h's subdomain. */
static void test_path_names(void **state)
{
        static const struct {
                const char *s;
                bool valid;
        } cases[] = {
                {"a", true},
                {"etcd-pod", true},
                {"master-0.example.com", true},
                {"a..b", true}, /* the labels are the API's business */
                {"a.-b", true},
                {"", false},
                {".", false},
                {"..", false},
                {".a", false},
                {"a.", false},
                {"-a", false},
                {"a-", false},
                {"A", false},
                {"a_b", false},
                {"a/b", false},
                {"a b", false},
                {"a%2f", false},
                /* RBAC names are path segments: upstream's ClusterRoles have ':' in them. */
                {"system:openshift:operator:etcd-backup-role", true},
                {"a?b", false},
                {"a#b", false},
        };
        char name[300];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                if (kube_name_is_valid(cases[i].s) != cases[i].valid)
                        fail_msg("kube_name_is_valid(\"%s\") is not %d", cases[i].s, cases[i].valid);
        assert_false(kube_name_is_valid(NULL));
        memset(name, 'a', sizeof name);
        name[253] = 0;
        assert_true(kube_name_is_valid(name)); /* a 253-character label: not a DNS-1123 one */
        name[253] = 'a';
        name[254] = 0;
        assert_false(kube_name_is_valid(name));
}

static void test_paths(void **state)
{
        _cleanup_free_ char *a = kube_resource_path(&KUBE_CONFIGMAPS, "openshift-etcd", "etcd-pod", NULL);
        _cleanup_free_ char *b = kube_resource_path(&KUBE_ETCDS, NULL, "cluster", "status");
        _cleanup_free_ char *c = kube_resource_path(&KUBE_PODS, NULL, NULL, NULL);
        _cleanup_free_ char *d = kube_resource_path(&KUBE_LEASES, "ns", "x", NULL);
        _cleanup_free_ char *q = kube_query_escape("node-role.kubernetes.io/master,env in (a,b)");

        assert_string_equal(a, "/api/v1/namespaces/openshift-etcd/configmaps/etcd-pod");
        assert_string_equal(b, "/apis/operator.openshift.io/v1/etcds/cluster/status");
        assert_string_equal(c, "/api/v1/pods");
        assert_string_equal(d, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/x");
        assert_string_equal(q, "node-role.kubernetes.io%2Fmaster%2Cenv%20in%20%28a%2Cb%29");
        /* Names that would change the path are refused. */
        assert_null(kube_resource_path(&KUBE_CONFIGMAPS, "ns", "../secrets/x", NULL));
        assert_null(kube_resource_path(&KUBE_CONFIGMAPS, "ns", "A", NULL));
        assert_null(kube_resource_path(&KUBE_CONFIGMAPS, "ns", "x?watch=1", NULL));
        assert_ptr_equal(kube_resource_by_kind("operator.openshift.io/v1", "Etcd"), &KUBE_ETCDS);
        assert_ptr_equal(kube_resource_by_kind("v1", "Node"), &KUBE_NODES);
}

typedef struct Seen {
        int added, updated, deleted;
        char last[64];
} Seen;

static void handler(Informer *inf, InformerEvent ev, const KubeObject *old, const KubeObject *obj,
                    void *userdata)
{
        Seen *s = userdata;
        if (ev == INFORMER_ADDED) {
                assert_null(old);
                s->added++;
        } else if (ev == INFORMER_UPDATED) {
                assert_non_null(old);
                s->updated++;
        } else
                s->deleted++;
        (void) snprintf(s->last, sizeof s->last, "%s", obj->key);
}

static int apply(Informer *inf, const char *line)
{
        _cleanup_(cJSON_Deletep) cJSON *j = parse(line);
        return informer_apply_watch_line(inf, j);
}

static void test_informer_events(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        KubeConfig *cfg = calloc(1, sizeof *cfg);
        cfg->server = strdup("http://127.0.0.1:1");
        _cleanup_(kube_client_freep) KubeClient *c = kube_client_new(l, cfg);
        _cleanup_(informer_freep) Informer *inf = informer_new(c, &KUBE_PODS, NULL, NULL);
        Seen s = {};
        const KubeObject **v = NULL;
        size_t n = 0;

        assert_int_equal(informer_add_label_index(inf, "app"), 0);
        assert_int_equal(informer_add_handler(inf, handler, &s), 0);
        assert_int_equal(
                apply(inf,
                      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"n1\","
                      "\"resourceVersion\":\"5\",\"labels\":{\"app\":\"etcd\"}}}}"),
                0);
        assert_int_equal(
                apply(inf,
                      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\",\"namespace\":\"n2\","
                      "\"resourceVersion\":\"6\",\"labels\":{\"app\":\"etcd\"}}}}"),
                0);
        assert_int_equal(s.added, 2);
        assert_int_equal(informer_get_resource_version(inf), 6);
        assert_int_equal(informer_list_by_label(inf, "app", "etcd", &v, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(v[0]->key, "n1/a");
        v = mfree(v);
        /* A label change moves the object between index entries. */
        assert_int_equal(
                apply(inf, "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":"
                           "\"n1\",\"resourceVersion\":\"7\",\"labels\":{\"app\":\"other\"}}}}"),
                0);
        assert_int_equal(s.updated, 1);
        assert_int_equal(informer_list_by_label(inf, "app", "etcd", &v, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(v[0]->key, "n2/b");
        v = mfree(v);
        assert_int_equal(informer_get(inf, "n1", "a")->resource_version, 7);
        assert_int_equal(
                apply(inf, "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}"),
                0);
        assert_int_equal(informer_get_resource_version(inf), 9);
        assert_int_equal(
                apply(inf,
                      "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"b\",\"namespace\":\"n2\","
                      "\"resourceVersion\":\"10\"}}}"),
                0);
        assert_int_equal(s.deleted, 1);
        assert_string_equal(s.last, "n2/b");
        assert_null(informer_get(inf, "n2", "b"));
        assert_int_equal(informer_list_namespace(inf, "n2", &v, &n), 0);
        assert_int_equal(n, 0);
        v = mfree(v);
        assert_int_equal(informer_size(inf), 1);
        /* What the cache holds is the one object left, counted once. */
        InformerStats st;
        const KubeObject *a = informer_get(inf, "n1", "a");
        informer_get_stats(inf, &st);
        assert_int_equal(st.objects, 1);
        assert_int_equal(st.cached_bytes, a->size);
        assert_true(a->size > sizeof *a + strlen("n1/a") + strlen("etcd"));
        assert_int_equal(apply(inf,
                               "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":"
                               "\"Expired\",\"message\":\"too old resource version: 1 (5)\"}}"),
                         KUBE_ERR_EXPIRED);
        assert_int_equal(
                apply(inf, "{\"type\":\"WHAT\",\"object\":{\"metadata\":{\"resourceVersion\":\"11\"}}}"),
                -EBADMSG);
        assert_int_equal(apply(inf, "{\"object\":{}}"), -EBADMSG);
}

typedef struct Lines {
        char seen[8][32];
        size_t n;
} Lines;

static int on_line(KubeClient *c, cJSON *line, void *userdata)
{
        Lines *l = userdata;
        _cleanup_free_ char *text = cJSON_PrintUnformatted(line);
        (void) c;
        assert_true(l->n < ELEMENTSOF(l->seen));
        (void) snprintf(l->seen[l->n++], sizeof l->seen[0], "%s", text);
        return streq(text, "{\"stop\":1}") ? -EBADMSG : 0;
}

/* A watch stream's lines arrive cut anywhere: each whole line is parsed once, in order,
 * wherever the cuts fall; empty lines are skipped; an error from on_line stops the stream. */
static void test_stream_framing(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        KubeConfig *cfg = calloc(1, sizeof *cfg);
        cfg->server = strdup("http://127.0.0.1:1");
        _cleanup_(kube_client_freep) KubeClient *c = kube_client_new(l, cfg);
        KubeCall *call = NULL;
        Lines seen = {};
        static const char *const pieces[] = {
                "{\"a\":1}\n{\"b\"", ":2", "}", "\n\n{\"c\":3}\n{", "\"d\":4}\n", "", "{\"e\"", "", ":5}\n"};

        assert_int_equal(kube_stream(c, "/api/v1/pods?watch=1", USEC_INFINITY, on_line, NULL, &seen, &call),
                         0);
        for (size_t i = 0; i < ELEMENTSOF(pieces); i++)
                assert_int_equal(kube_call_feed(call, pieces[i], strlen(pieces[i])), 0);
        assert_int_equal(seen.n, 5);
        assert_string_equal(seen.seen[0], "{\"a\":1}");
        assert_string_equal(seen.seen[1], "{\"b\":2}");
        assert_string_equal(seen.seen[2], "{\"c\":3}");
        assert_string_equal(seen.seen[3], "{\"d\":4}");
        assert_string_equal(seen.seen[4], "{\"e\":5}"); /* an empty chunk loses nothing pending */
        /* A bad line fails the stream; so does an error on_line returns. */
        assert_true(kube_call_feed(call, "{x\n", 3) < 0);
        assert_int_equal(kube_call_feed(call, "{\"stop\":1}\n", 11), -EBADMSG);
        kube_call_cancel(call);
}

static void drop_spec(const KubeResource *res, cJSON *obj, cJSON *dropped)
{
        assert_ptr_equal(res, &KUBE_PODS);
        json_move_to(dropped, obj, "spec");
        assert_int_equal(cJSON_GetArraySize(dropped), 1);
}

/* A transform trims every object before the cache keeps it and before handlers see it. */
static void test_informer_transform(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        KubeConfig *cfg = calloc(1, sizeof *cfg);
        cfg->server = strdup("http://127.0.0.1:1");
        _cleanup_(kube_client_freep) KubeClient *c = kube_client_new(l, cfg);
        _cleanup_(informer_factory_freep) InformerFactory *f = informer_factory_new(c);
        informer_factory_set_transform(f, drop_spec);
        Informer *inf = informer_factory_get(f, &KUBE_PODS, NULL, NULL, NULL);
        Seen s = {};

        assert_non_null(inf);
        assert_int_equal(informer_add_handler(inf, handler, &s), 0);
        assert_int_equal(apply(inf,
                               "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":"
                               "\"n1\",\"resourceVersion\":\"5\"},\"spec\":{\"nodeName\":\"m0\"},"
                               "\"status\":{\"phase\":\"Running\"}}}"),
                         0);
        assert_int_equal(s.added, 1);
        const KubeObject *o = informer_get(inf, "n1", "a");
        assert_non_null(o);
        assert_null(json_get(o->json, "spec"));
        assert_string_equal(json_get_string(o->json, "status.phase"), "Running");
        assert_int_equal(o->resource_version, 5);
        /* The size counts the trimmed object: the same object whole holds more. */
        _cleanup_(kube_object_unrefp) KubeObject *whole = kube_object_new(
                parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n1\",\"resourceVersion\":\"5\"},"
                      "\"spec\":{\"nodeName\":\"m0\"},\"status\":{\"phase\":\"Running\"}}"));
        assert_non_null(whole);
        assert_true(whole->size > o->size);
}

static KubeObject *node(const char *rv, const char *beat, const char *ready, const char *ip)
{
        _cleanup_free_ char *text = strdup_printf(
                "{\"kind\":\"Node\",\"metadata\":{\"name\":\"master-0\",\"resourceVersion\":\"%s\","
                "\"managedFields\":[{\"time\":\"%s\"}]},\"status\":{\"addresses\":[{\"type\":"
                "\"InternalIP\",\"address\":\"%s\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":"
                "\"%s\",\"lastHeartbeatTime\":\"%s\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
                rv, beat, ip, ready, beat);
        KubeObject *o = kube_object_new(cJSON_Parse(text));
        assert_non_null(o);
        return o;
}

static void test_heartbeat_only(void **state)
{
        _cleanup_(kube_object_unrefp) KubeObject *a = node("10", "2026-01-01T00:00:00Z", "True", "10.0.0.1");
        _cleanup_(kube_object_unrefp) KubeObject *beat =
                node("11", "2026-01-01T00:00:10Z", "True", "10.0.0.1");
        _cleanup_(kube_object_unrefp) KubeObject *ready =
                node("12", "2026-01-01T00:00:20Z", "False", "10.0.0.1");
        _cleanup_(kube_object_unrefp) KubeObject *moved =
                node("13", "2026-01-01T00:00:30Z", "True", "10.0.0.9");
        _cleanup_(kube_object_unrefp) KubeObject *same_rv =
                node("10", "2026-01-01T00:00:10Z", "True", "10.0.0.1");

        assert_true(kube_object_heartbeat_only(a, beat));
        assert_false(kube_object_heartbeat_only(beat, ready)); /* a condition changed */
        assert_false(kube_object_heartbeat_only(a, moved));    /* an address changed */
        assert_false(kube_object_heartbeat_only(a, a));        /* a resync replays the same object */
        assert_false(kube_object_heartbeat_only(a, same_rv));  /* not an update */
        assert_false(kube_object_heartbeat_only(NULL, a));
        assert_false(kube_object_heartbeat_only(a, NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_path_names),
                cmocka_unit_test(test_paths),
                cmocka_unit_test(test_informer_events),
                cmocka_unit_test(test_informer_transform),
                cmocka_unit_test(test_heartbeat_only),
                cmocka_unit_test(test_stream_framing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
