/* The Kubernetes client and informers against kube-apiserver through
 * test/kube/api-fault-proxy (with-kube.sh --fault-proxy; the HTTP/2 variant with
 * --http2-front, nghttpx in front of the proxy), which exports KUBECONFIG; the
 * test-only /sim/ controls answer through the same client. Covers: verbs and Status errors
 * (-ESTALE on conflicts, with the reason), 429 with Retry-After honoured, 500
 * not retried, and an informer that sees 10,000 updates while watches are
 * dropped and etcd is compacted, ending with exactly the server's final state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/log.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "runtime/events.h"

#define NS "itest"

static Loop *loop;
/* 10,000 by default; valgrind runs use fewer (CHURN_UPDATES). */
static unsigned N_UPDATES = 10000;
static KubeClient *client;

typedef struct Result {
        bool done;
        int error;
        long code;
        char reason[64];
        cJSON *body;
} Result;

static void on_result(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Result *r = userdata;
        r->done = true;
        r->error = resp->error;
        r->code = resp->status ? resp->status->code : 0;
        if (resp->status && resp->status->reason)
                (void) snprintf(r->reason, sizeof r->reason, "%s", resp->status->reason);
        r->body = resp->body ? cJSON_Duplicate(resp->body, true) : NULL;
}

static void result_done(Result *r)
{
        cJSON_Delete(r->body);
        *r = (Result){};
}

static void wait_for(Result *r)
{
        assert_int_equal(loop_run_until(loop, &r->done, 60 * USEC_PER_SEC), 0);
}

static cJSON *parse(const char *s)
{
        cJSON *j = NULL;
        assert_int_equal(json_parse(s, strlen(s), &j), 0);
        return j;
}

/* POST to the fault proxy's test-only /sim/ endpoints (test/kube/api-fault-proxy). */
static void sim(const char *path, const char *body)
{
        _cleanup_(cJSON_Deletep) cJSON *b = parse(body ? body : "{}");
        Result r = {};
        assert_int_equal(kube_call(client, "POST", path, b, "application/json", on_result, &r, NULL), 0);
        wait_for(&r);
        if (r.error < 0)
                fail_msg("%s: %s", path, strerror(-r.error));
        result_done(&r);
}

static int setup(void **state)
{
        _cleanup_free_ char *err = NULL;
        KubeConfig *cfg = NULL;
        Result r = {};

        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        if (getenv("CHURN_UPDATES"))
                N_UPDATES = (unsigned) atoi(getenv("CHURN_UPDATES"));
        if (kube_config_load(NULL, NULL, &cfg, &err) < 0) {
                fprintf(stderr, "KUBECONFIG: %s (run through test/integration/with-kube.sh)\n", err);
                return -1;
        }
        loop = loop_new();
        client = kube_client_new(loop, cfg);
        /* integration/test-kube-client-h2: the HTTP/2 path, off by default (kube/client.h). */
        if (client && getenv("KUBE_HTTP2"))
                kube_client_set_http2(client, true);
        _cleanup_(cJSON_Deletep) cJSON *ns =
                parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"" NS "\"}}");
        assert_int_equal(kube_create(client, &KUBE_NAMESPACES, NULL, ns, on_result, &r), 0);
        wait_for(&r);
        int e = r.error;
        result_done(&r);
        return e < 0 && e != -EEXIST ? -1 : 0;
}

static int teardown(void **state)
{
        client = kube_client_free(client);
        assert_int_equal(loop_http_in_flight(loop), 0);
        loop = loop_unref(loop);
        return 0;
}

static void test_verbs_and_errors(void **state)
{
        _cleanup_(cJSON_Deletep) cJSON *cm =
                parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                      "\"verbs\",\"namespace\":\"" NS "\"},\"data\":{\"a\":\"1\"}}");
        Result r = {};

        assert_int_equal(kube_create(client, &KUBE_CONFIGMAPS, NS, cm, on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        _cleanup_(cJSON_Deletep) cJSON *created = TAKE_PTR(r.body);
        assert_non_null(json_get_string(created, "metadata.uid"));
        result_done(&r);

        assert_int_equal(kube_create(client, &KUBE_CONFIGMAPS, NS, cm, on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, -EEXIST);
        assert_string_equal(r.reason, "AlreadyExists");
        result_done(&r);

        /* Update with the current RV works; the same stale RV then conflicts. */
        _cleanup_(cJSON_Deletep) cJSON *upd = cJSON_Duplicate(created, true);
        cJSON_ReplaceItemInObject(json_get_object(upd, "data"), "a", cJSON_CreateString("2"));
        assert_int_equal(kube_update(client, &KUBE_CONFIGMAPS, upd, on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        result_done(&r);
        assert_int_equal(kube_update(client, &KUBE_CONFIGMAPS, upd, on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, -ESTALE);
        assert_int_equal(r.code, 409);
        assert_string_equal(r.reason, "Conflict");
        result_done(&r);

        _cleanup_(cJSON_Deletep) cJSON *patch = parse("{\"data\":{\"b\":\"3\"}}");
        assert_int_equal(kube_patch(client, &KUBE_CONFIGMAPS, NS, "verbs", NULL, KUBE_PATCH_MERGE, patch,
                                    "itest", false, on_result, &r),
                         0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        assert_string_equal(json_get_string(r.body, "data.b"), "3");
        assert_string_equal(json_get_string(r.body, "data.a"), "2");
        result_done(&r);

        KubeListOpts lo = {.field_selector = "metadata.name=verbs"};
        assert_int_equal(kube_list(client, &KUBE_CONFIGMAPS, NS, &lo, on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        assert_int_equal(cJSON_GetArraySize(json_get_array(r.body, "items")), 1);
        result_done(&r);

        assert_int_equal(kube_delete(client, &KUBE_CONFIGMAPS, NS, "verbs", NULL, NULL, on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        result_done(&r);
        assert_int_equal(kube_get(client, &KUBE_CONFIGMAPS, NS, "verbs", on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, -ENOENT);
        assert_string_equal(r.reason, "NotFound");
        result_done(&r);
}

static void test_retry_after(void **state)
{
        uint64_t req0 = 0, retries0 = 0, req1 = 0, retries1 = 0;
        Result r = {};

        sim("/sim/faults", "{\"method\":\"GET\",\"path_regex\":\"/namespaces/" NS
                           "/configmaps/missing$\",\"code\":429,\"count\":2,\"retry_after\":1}");
        kube_client_get_counters(client, &req0, &retries0);
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(kube_get(client, &KUBE_CONFIGMAPS, NS, "missing", on_result, &r), 0);
        wait_for(&r);
        usec_t took = now_usec(CLOCK_MONOTONIC) - t0;
        kube_client_get_counters(client, &req1, &retries1);
        /* Two 429s waited out (1 s each), then the real answer. */
        assert_int_equal(r.error, -ENOENT);
        assert_int_equal(retries1 - retries0, 2);
        assert_int_equal(req1 - req0, 3);
        assert_true(took >= 2 * USEC_PER_SEC);
        result_done(&r);

        /* A 500 without Retry-After goes straight to the caller. */
        sim("/sim/faults", "{\"method\":\"GET\",\"path_regex\":\"/namespaces/" NS
                           "/configmaps/missing$\",\"code\":500,\"count\":1}");
        assert_int_equal(kube_get(client, &KUBE_CONFIGMAPS, NS, "missing", on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, -EREMOTEIO);
        assert_int_equal(r.code, 500);
        result_done(&r);
}

/* Runs the loop until the recorder has settled `want` writes (written or dropped), for up to
 * 30 s: beside e2e clusters (CI's load) a write took longer than the 300 ms a quiet machine
 * needs, and the counts were read too soon. */
static void settle_events(EventRecorder *rec, uint64_t want)
{
        uint64_t written = 0, dropped = 0;
        bool never = false;
        for (int i = 0; i < 300; i++) {
                event_recorder_get_counts(rec, &written, &dropped);
                if (written + dropped >= want)
                        return;
                (void) loop_run_until(loop, &never, 100 * USEC_PER_MSEC);
        }
}

/* The same event three times is one Event with count 3; another reason is another Event. */
static void test_events_dedup(void **state)
{
        EventSource src = {.component = "openshift-cluster-etcd-operator",
                           .api_version = "apps/v1",
                           .kind = "Deployment",
                           .namespace = NS,
                           .name = "etcd-operator"};
        _cleanup_(event_recorder_freep) EventRecorder *rec = event_recorder_new(client, &src);
        uint64_t written = 0, dropped = 0;
        Result r = {};

        assert_non_null(rec);
        for (int i = 0; i < 3; i++) {
                event_record(rec, false, "MemberPromote", "promoted %s", "master-0");
                /* Let each write land before the next, as events arrive over time. */
                settle_events(rec, (uint64_t) i + 1);
        }
        event_record(rec, true, "MemberChangeFailed", "etcd remove master-2 failed");
        bool never = false;
        settle_events(rec, 4);
        event_recorder_get_counts(rec, &written, &dropped);
        assert_int_equal(written, 4);
        assert_int_equal(dropped, 0);

        KubeListOpts lo = {.field_selector = "involvedObject.name=etcd-operator"};
        assert_int_equal(kube_list(client, &KUBE_EVENTS, NS, &lo, on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        cJSON *e;
        int promotes = 0, failures = 0;
        JSON_ARRAY_FOREACH (e, json_get_array(r.body, "items")) {
                int64_t count = 0;
                (void) json_get_int64(e, "count", &count);
                if (streq_ptr(json_get_string(e, "reason"), "MemberPromote")) {
                        promotes++;
                        assert_int_equal(count, 3);
                        assert_string_equal(json_get_string(e, "type"), "Normal");
                        assert_string_equal(json_get_string(e, "message"), "promoted master-0");
                        assert_string_equal(json_get_string(e, "involvedObject.kind"), "Deployment");
                } else if (streq_ptr(json_get_string(e, "reason"), "MemberChangeFailed")) {
                        failures++;
                        assert_int_equal(count, 1);
                        assert_string_equal(json_get_string(e, "type"), "Warning");
                }
        }
        assert_int_equal(promotes, 1);
        assert_int_equal(failures, 1);
        result_done(&r);

        /* A create the server did not take for a passing reason (a 500, as kube-apiserver's
         * "raft: stopped" from a member being removed) is sent again a second later. */
        sim("/sim/faults",
            "{\"method\":\"POST\",\"path_regex\":\"/namespaces/" NS "/events$\",\"code\":500,\"count\":1}");
        event_record(rec, false, "ScaleDown", "removing member master-0");
        (void) loop_run_until(loop, &never, 300 * USEC_PER_MSEC);
        event_recorder_get_counts(rec, &written, &dropped);
        assert_int_equal(written, 4); /* waiting to send it again */
        assert_int_equal(dropped, 0);
        settle_events(rec, 5);
        event_recorder_get_counts(rec, &written, &dropped);
        assert_int_equal(written, 5);
        assert_int_equal(dropped, 0);

        /* A create refused for good (403) is forgotten (this path freed the entry and then
         * wrote to it, found by ASan in e2e): the next occurrence creates the event afresh. */
        sim("/sim/faults",
            "{\"method\":\"POST\",\"path_regex\":\"/namespaces/" NS "/events$\",\"code\":403,\"count\":1}");
        event_record(rec, true, "BootstrapRemoveFailed", "etcd remove etcd-bootstrap failed");
        settle_events(rec, 6);
        event_recorder_get_counts(rec, &written, &dropped);
        assert_int_equal(written, 5);
        assert_int_equal(dropped, 1);
        event_record(rec, true, "BootstrapRemoveFailed", "etcd remove etcd-bootstrap failed");
        settle_events(rec, 7);
        event_recorder_get_counts(rec, &written, &dropped);
        assert_int_equal(written, 6);
        assert_int_equal(dropped, 1);
}

/* ---- informer under churn ---- */

#define N_OBJECTS 50
#define IN_FLIGHT 16

typedef struct Writer {
        unsigned sent, acked, failed, in_flight;
        bool done;
} Writer;

static void write_next(Writer *w);

static void on_written(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Writer *w = userdata;
        w->in_flight--;
        if (resp->error < 0)
                w->failed++;
        else
                w->acked++;
        write_next(w);
}

static void write_next(Writer *w)
{
        while (w->in_flight < IN_FLIGHT && w->sent < N_UPDATES) {
                unsigned i = w->sent++;
                char body[512];
                /* Every object is created, then overwritten; a few are deleted and made again. */
                (void) snprintf(
                        body, sizeof body,
                        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"churn-%u\","
                        "\"namespace\":\"" NS
                        "\",\"labels\":{\"app\":\"churn\"}},\"data\":{\"seq\":\"%u\"}}",
                        i % N_OBJECTS, i);
                _cleanup_(cJSON_Deletep) cJSON *obj = parse(body);
                int r;
                w->in_flight++;
                if (i < N_OBJECTS)
                        r = kube_create(client, &KUBE_CONFIGMAPS, NS, obj, on_written, w);
                else if (i % 997 == 0)
                        r = kube_delete(client, &KUBE_CONFIGMAPS, NS, json_get_string(obj, "metadata.name"),
                                        NULL, NULL, on_written, w);
                else {
                        /* PUT without resourceVersion: built-ins update unconditionally (or 404 after a
                         * delete). */
                        _cleanup_free_ char *path = kube_resource_path(
                                &KUBE_CONFIGMAPS, NS, json_get_string(obj, "metadata.name"), NULL);
                        r = kube_call(client, "PUT", path, obj, "application/json", on_written, w, NULL);
                }
                assert_int_equal(r, 0);
        }
        if (w->sent == N_UPDATES && w->in_flight == 0)
                w->done = true;
}

static void test_informer_churn(void **state)
{
        _cleanup_(informer_freep) Informer *inf = informer_new(client, &KUBE_CONFIGMAPS, NS, "app=churn");
        Writer w = {};
        Result r = {};
        InformerStats st;

        assert_int_equal(informer_start(inf), 0);
        while (!informer_has_synced(inf))
                assert_int_equal(sd_event_run(loop_get_event(loop), UINT64_MAX) >= 0, true);
        write_next(&w);
        unsigned step = N_UPDATES / 10, next_fault = step;
        uint64_t watches_due = 0;
        while (!w.done) {
                assert_true(sd_event_run(loop_get_event(loop), UINT64_MAX) >= 0);
                /* The next fault once the informer has been through the last one: faults
                 * posted while it backs off would pile up (a writer over HTTP/2 outpaces
                 * the 0.8 s backoff), and it would spend the rest of the test backing off. */
                informer_get_stats(inf, &st);
                if (w.acked + w.failed >= next_fault && st.watches >= watches_due) {
                        /* A drop costs one new watch; two refused ones and a third. */
                        watches_due = st.watches + ((next_fault / step) % 2 ? 1 : 3);
                        /* Alternate: drop every watch (the informer resumes from its last RV), or
                         * hold it off while etcd compacts past that RV (it must relist after a 410). */
                        if ((next_fault / step) % 2)
                                sim("/sim/drop-watches", NULL);
                        else {
                                bool never = false;
                                /* Two refusals: the first is retried at once, the second
                                 * backs off (0.8 s), and etcd compacts meanwhile. */
                                sim("/sim/faults", "{\"method\":\"GET\",\"path_regex\":\"watch=true\","
                                                   "\"code\":500,\"count\":2}");
                                sim("/sim/drop-watches", NULL);
                                (void) loop_run_until(loop, &never, 300 * USEC_PER_MSEC);
                                sim("/sim/compact", NULL);
                        }
                        next_fault += step;
                }
        }
        printf("writer: %u acknowledged, %u failed (404s after deletes are expected)\n", w.acked, w.failed);
        assert_true(w.acked > N_UPDATES * 9 / 10);

        /* Converged: the cache equals a fresh list, object by object, RV by RV. */
        /* Backoff after repeated errors reaches 30 s, as client-go's does: allow for one full step. */
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + 90 * USEC_PER_SEC;
        for (;;) {
                KubeListOpts lo = {.label_selector = "app=churn"};
                assert_int_equal(kube_list(client, &KUBE_CONFIGMAPS, NS, &lo, on_result, &r), 0);
                wait_for(&r);
                assert_int_equal(r.error, 0);
                cJSON *item;
                size_t n = 0, same = 0;
                JSON_ARRAY_FOREACH (item, json_get_array(r.body, "items")) {
                        const KubeObject *o = informer_get(inf, NS, json_get_string(item, "metadata.name"));
                        n++;
                        if (o && streq_ptr(kube_object_rv_string(o),
                                           json_get_string(item, "metadata.resourceVersion")))
                                same++;
                }
                bool converged = same == n && n == informer_size(inf);
                result_done(&r);
                if (converged)
                        break;
                assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                bool never = false;
                (void) loop_run_until(loop, &never, 200 * USEC_PER_MSEC);
        }
        informer_get_stats(inf, &st);
        printf("informer: %llu lists, %llu watches, %llu events, %llu relists after 410, %llu errors\n",
               (unsigned long long) st.lists, (unsigned long long) st.watches,
               (unsigned long long) st.events, (unsigned long long) st.relists_410,
               (unsigned long long) st.errors);
        assert_true(st.watches >= 5); /* it re-watched after every drop */
        if (getenv("KUBE_NO_WATCH_CACHE")) {
                /* Without kube-apiserver's watch cache (with-kube.py --no-watch-cache), a
                 * watch resuming from a resourceVersion etcd compacted is answered 410 Gone by
                 * etcd through kube-apiserver: the informer must have listed again after each
                 * compaction that overtook it, and still converged (above). */
                assert_true(st.relists_410 >= 1);
                assert_int_equal(st.lists, 1 + st.relists_410);
        } else {
                /* kube-apiserver serves it from its watch cache, which keeps its own history
                 * whatever etcd compacted: the informer resumes from its resourceVersion,
                 * without a 410 and without a second list. */
                assert_int_equal(st.relists_410, 0);
                assert_int_equal(st.lists, 1);
        }
        informer_stop(inf);
}

static void put_configmap(const char *name, const char *value)
{
        _cleanup_free_ char *text =
                strdup_printf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                              "{\"name\":\"%s\",\"namespace\":\"" NS "\"},\"data\":{\"v\":\"%s\"}}",
                              name, value);
        _cleanup_(cJSON_Deletep) cJSON *cm = parse(text);
        Result r = {};
        assert_int_equal(kube_patch(client, &KUBE_CONFIGMAPS, NS, name, NULL, KUBE_PATCH_APPLY, cm, "itest",
                                    true, on_result, &r),
                         0);
        wait_for(&r);
        if (r.error < 0)
                fail_msg("apply %s: %s", name, strerror(-r.error));
        result_done(&r);
}

/* An informer of one name (fieldSelector=metadata.name=...) lists and watches that object
 * alone: the others of its namespace, before and after it started, never reach its cache. */
static void test_named_informer(void **state)
{
        _cleanup_(informer_freep) Informer *inf = informer_new(client, &KUBE_CONFIGMAPS, NS, NULL);
        bool never = false;

        put_configmap("named-one", "1");
        put_configmap("named-other", "1");
        assert_int_equal(informer_set_name(inf, "named-one"), 0);
        assert_int_equal(informer_start(inf), 0);
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        while (!informer_has_synced(inf)) {
                assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                (void) loop_run_until(loop, &never, 50 * USEC_PER_MSEC);
        }
        assert_int_equal(informer_size(inf), 1);
        assert_non_null(informer_get(inf, NS, "named-one"));
        put_configmap("named-other", "2");
        put_configmap("named-third", "1");
        put_configmap("named-one", "2");
        for (;;) {
                const KubeObject *o = informer_get(inf, NS, "named-one");
                if (o && streq_ptr(json_get_string(o->json, "data.v"), "2"))
                        break;
                assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                (void) loop_run_until(loop, &never, 50 * USEC_PER_MSEC);
        }
        assert_int_equal(informer_size(inf), 1);
        assert_null(informer_get(inf, NS, "named-other"));
        assert_null(informer_get(inf, NS, "named-third"));
        assert_int_equal(informer_set_name(inf, "x"), -EINVAL); /* not once it runs */
        informer_stop(inf);
}

/* A resource no CRD serves yet: the optional informer syncs empty at once (controllers are
 * not held up), and once the CRD is installed it lists and watches it like any other. */
static void test_optional_informer(void **state)
{
        static const KubeResource widgets = {
                .group = "itest.example.com", .version = "v1", .plural = "widgets", .kind = "Widget"};
        _cleanup_(informer_freep) Informer *inf = informer_new(client, &widgets, NULL, NULL);
        Result r = {};
        bool never = false;

        informer_set_optional(inf, 500 * USEC_PER_MSEC);
        assert_int_equal(informer_start(inf), 0);
        assert_int_equal(loop_run_until(loop, &never, 300 * USEC_PER_MSEC), -ETIMEDOUT);
        assert_true(informer_has_synced(inf));
        assert_true(informer_is_absent(inf));
        assert_int_equal(informer_size(inf), 0);

        _cleanup_(cJSON_Deletep) cJSON *crd =
                parse("{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
                      "\"metadata\":{\"name\":\"widgets.itest.example.com\"},\"spec\":{\"group\":"
                      "\"itest.example.com\",\"scope\":\"Cluster\",\"names\":{\"plural\":\"widgets\","
                      "\"singular\":\"widget\",\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},"
                      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{"
                      "\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":"
                      "true}}}]}}");
        assert_int_equal(kube_create(client, &KUBE_CRDS, NULL, crd, on_result, &r), 0);
        wait_for(&r);
        assert_true(r.error == 0 || r.error == -EEXIST);
        result_done(&r);
        _cleanup_(cJSON_Deletep) cJSON *w = parse("{\"apiVersion\":\"itest.example.com/v1\",\"kind\":"
                                                  "\"Widget\",\"metadata\":{\"name\":\"one\"}}");
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        for (;;) { /* the CRD is served once kube-apiserver has installed it */
                assert_int_equal(kube_create(client, &widgets, NULL, w, on_result, &r), 0);
                wait_for(&r);
                int e = r.error;
                result_done(&r);
                if (e == 0 || e == -EEXIST)
                        break;
                assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                (void) loop_run_until(loop, &never, 200 * USEC_PER_MSEC);
        }
        while (!informer_get(inf, NULL, "one")) {
                assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                (void) loop_run_until(loop, &never, 100 * USEC_PER_MSEC);
        }
        assert_false(informer_is_absent(inf));
        assert_true(informer_has_synced(inf));
        informer_stop(inf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_verbs_and_errors),  cmocka_unit_test(test_retry_after),
                cmocka_unit_test(test_events_dedup),      cmocka_unit_test(test_informer_churn),
                cmocka_unit_test(test_optional_informer), cmocka_unit_test(test_named_informer),
        };
        json_hooks_install(); /* watch events through the scratch arena, as in the operator */
        return cmocka_run_group_tests(tests, setup, teardown);
}
