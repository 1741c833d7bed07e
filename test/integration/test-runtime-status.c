/* The runtime's conditions writes against kube-apiserver, through the fault
 * proxy (run by with-kube.sh --fault-proxy). Each sync ends by writing its conditions on etcds/cluster;
 * they are compared with the informer's copy, so a sync that changes nothing
 * sends no request at all, while a change, including one undoing another
 * writer's edit or our own write the cache has not seen yet, still lands.
 * While spec.managementState is Unmanaged or Removed only controllers that
 * run unmanaged sync. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/log.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "runtime/conditions.h"
#include "runtime/controller.h"

static Loop *loop;
static KubeClient *client;
static InformerFactory *informers;
static Runtime *rt;
static const char *probe_status = "True"; /* what the Probe controller reports */
static const char *quiet_status = "True"; /* and the Quiet one, which watches nothing */
static unsigned n_syncs;

typedef struct Result {
        bool done;
        int error;
        cJSON *body;
} Result;

static void on_result(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Result *r = userdata;
        (void) c;
        r->done = true;
        r->error = resp->error;
        r->body = resp->body ? cJSON_Duplicate(resp->body, true) : NULL;
}

static void wait_for(Result *r)
{
        assert_int_equal(loop_run_until(loop, &r->done, 30 * USEC_PER_SEC), 0);
}

static int sync_probe(const SyncContext *ctx, Plan *p)
{
        (void) ctx;
        n_syncs++;
        plan_condition(p, "ProbeAvailable", probe_status, probe_status[0] == 'T' ? "AsExpected" : "Broken",
                       "probe says %s", probe_status);
        return 0;
}

static int sync_quiet(const SyncContext *ctx, Plan *p)
{
        (void) ctx;
        plan_condition(p, "QuietAvailable", quiet_status, "AsExpected", "quiet says %s", quiet_status);
        return 0;
}

static const ControllerSpec quiet = {
        .name = "Quiet", .degraded_condition = "QuietDegraded", .sync = sync_quiet};

/* Writer updates a ConfigMap that does not exist: the API server refuses
 * with 404 and its own words, which WriterDegraded must carry. */
static bool writer_on;
static int sync_writer(const SyncContext *ctx, Plan *p)
{
        (void) ctx;
        if (!writer_on)
                return 0;
        cJSON *cm = NULL;
        static const char body[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                                   "\"never-created\",\"namespace\":\"default\",\"resourceVersion\":\"1\"}}";
        if (json_parse(body, strlen(body), &cm) < 0)
                return -ENOMEM;
        plan_update(p, &KUBE_CONFIGMAPS, cm);
        cJSON_Delete(cm);
        return 0;
}

static const ControllerSpec writer = {
        .name = "Writer", .degraded_condition = "WriterDegraded", .sync = sync_writer};

/* Creator creates a ConfigMap whenever its cache lacks it. Enqueued again
 * and again right after its create, it must not create twice: its next
 * sync waits until its informer shows its own write (expectations). */
static unsigned n_creates;
static bool creator_on;
static const WatchSpec creator_watch = {.res = &KUBE_CONFIGMAPS, .namespace = "default"};
static const WatchSpec *const creator_watches[] = {&creator_watch};
static int sync_creator(const SyncContext *ctx, Plan *p)
{
        if (!creator_on)
                return 0;
        Informer *inf = informer_factory_find(ctx->informers, &KUBE_CONFIGMAPS, "default", NULL, NULL);
        if (informer_get(inf, "default", "created-once"))
                return 0;
        cJSON *cm = NULL;
        static const char body[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                                   "\"created-once\",\"namespace\":\"default\"},\"data\":{\"a\":\"b\"}}";
        if (json_parse(body, strlen(body), &cm) < 0)
                return -ENOMEM;
        plan_create(p, &KUBE_CONFIGMAPS, cm);
        cJSON_Delete(cm);
        n_creates++;
        return 0;
}

static const ControllerSpec creator = {.name = "Creator",
                                       .degraded_condition = "CreatorDegraded",
                                       .watches = creator_watches,
                                       .n_watches = 1,
                                       .sync = sync_creator};

/* Purger is finish_deleted() of periodic-backup in small: while its owner (a Secret) says
 * "pending", it creates its job (a ConfigMap) if absent; once the job is there, it deletes it
 * and marks the owner "done" in one plan. The owner's informer is then kept blind for seconds:
 * a sync from that stale cache (owner "pending", job gone) would make a second job that
 * nothing ever deletes, as e2e/redeploy met under CI load when expectations lapsed after 2 s. */
static unsigned n_purge_creates;
static bool purger_on;
static const WatchSpec purger_owner_watch = {.res = &KUBE_SECRETS, .namespace = "default"};
static const WatchSpec *const purger_watches[] = {&creator_watch, &purger_owner_watch};
static int sync_purger(const SyncContext *ctx, Plan *p)
{
        if (!purger_on)
                return 0;
        Informer *owners = informer_factory_find(ctx->informers, &KUBE_SECRETS, "default", NULL, NULL);
        Informer *jobs = informer_factory_find(ctx->informers, &KUBE_CONFIGMAPS, "default", NULL, NULL);
        const KubeObject *owner = informer_get(owners, "default", "purge-owner");
        if (!owner || !streq_ptr(json_get_string(owner->json, "metadata.annotations.state"), "pending"))
                return 0;
        const KubeObject *job = informer_get(jobs, "default", "purge-job");
        if (job) {
                _cleanup_(cJSON_Deletep) cJSON *done = cJSON_Duplicate(owner->json, true);
                if (!done || json_set_path_string(done, "metadata.annotations.state", "done") < 0)
                        return -ENOMEM;
                plan_delete(p, &KUBE_CONFIGMAPS, "default", "purge-job", kube_object_uid(job));
                plan_update(p, &KUBE_SECRETS, done);
                return 0;
        }
        cJSON *cm = NULL;
        static const char body[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                                   "\"purge-job\",\"namespace\":\"default\"}}";
        if (json_parse(body, strlen(body), &cm) < 0)
                return -ENOMEM;
        plan_create(p, &KUBE_CONFIGMAPS, cm);
        cJSON_Delete(cm);
        n_purge_creates++;
        return 0;
}

static const ControllerSpec purger = {.name = "Purger",
                                      .degraded_condition = "PurgerDegraded",
                                      .watches = purger_watches,
                                      .n_watches = 2,
                                      .sync = sync_purger};

static const WatchSpec probe_watch = {.res = &KUBE_ETCDS};
static const WatchSpec *const probe_watches[] = {&probe_watch};
static const ControllerSpec probe = {.name = "Probe",
                                     .degraded_condition = "ProbeDegraded",
                                     .watches = probe_watches,
                                     .n_watches = 1,
                                     .sync = sync_probe};

/* Reporter syncs even while unmanaged (as the ClusterOperator status does). */
static unsigned n_reports;
static int sync_reporter(const SyncContext *ctx, Plan *p)
{
        (void) ctx;
        (void) p;
        n_reports++;
        return 0;
}
static const ControllerSpec reporter = {.name = "Reporter",
                                        .degraded_condition = "ReporterDegraded",
                                        .watches = probe_watches,
                                        .n_watches = 1,
                                        .runs_unmanaged = true,
                                        .resync = 200 * USEC_PER_MSEC,
                                        .sync = sync_reporter};

/* A condition's status on the live object ("" when absent). */
static char *live_condition(const char *type, uint64_t *ret_rv)
{
        Result r = {};
        assert_int_equal(kube_get(client, &KUBE_ETCDS, NULL, "cluster", on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        cJSON *conds = json_get(r.body, "status.conditions");
        cJSON *c = conds ? conditions_find(conds, type) : NULL;
        const char *s = c ? json_get_string(c, "status") : NULL;
        char *ret = strdup(s ? s : "");
        if (ret_rv)
                (void) json_get_uint64(r.body, "metadata.resourceVersion", ret_rv);
        cJSON_Delete(r.body);
        return ret;
}

static char *live_status(uint64_t *ret_rv)
{
        return live_condition("ProbeAvailable", ret_rv);
}

static uint64_t requests(void)
{
        uint64_t n = 0;
        kube_client_get_counters(client, &n, NULL);
        return n;
}

static void run_for(usec_t d)
{
        bool never = false;
        (void) loop_run_until(loop, &never, d);
}

/* Runs the loop until the live ProbeAvailable is `want`. */
static void wait_live(const char *want)
{
        for (int i = 0; i < 100; i++) {
                _cleanup_free_ char *s = live_status(NULL);
                if (streq(s, want))
                        return;
                run_for(50 * USEC_PER_MSEC);
        }
        fail_msg("ProbeAvailable never became %s", want);
}

static void wait_cached_rv(uint64_t rv)
{
        Informer *inf = informer_factory_get(informers, &KUBE_ETCDS, NULL, NULL, NULL);
        for (int i = 0; i < 200; i++) {
                const KubeObject *o = informer_get(inf, NULL, "cluster");
                if (o && o->resource_version >= rv)
                        return;
                run_for(20 * USEC_PER_MSEC);
        }
        fail_msg("the informer never saw resourceVersion %" PRIu64, rv);
}

static void test_unchanged_conditions_send_nothing(void **state)
{
        (void) state;
        wait_live("True");
        uint64_t rv = 0;
        free(live_status(&rv));
        wait_cached_rv(rv);
        /* Every controller of this file starts with setup(), and the others' first syncs
         * (a create, a failed update, their informers' lists and watches) may still be under
         * way on a loaded machine: 5 of them were once counted here. Measure from a quiet
         * client: every informer synced and no request for 1 s. */
        uint64_t seen = requests();
        usec_t quiet_since = now_usec(CLOCK_MONOTONIC);
        for (int i = 0; i < 1000; i++) {
                run_for(50 * USEC_PER_MSEC);
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (requests() != seen) {
                        seen = requests();
                        quiet_since = now;
                } else if (informer_factory_has_synced(informers) && now - quiet_since >= USEC_PER_SEC)
                        break;
        }
        assert_true(informer_factory_has_synced(informers));

        uint64_t before = requests();
        unsigned syncs = n_syncs;
        /* Each enqueue waits for its sync (two enqueues before a sync would be one sync: on a
         * loaded machine 20 ms was not always enough). */
        for (unsigned i = 0; i < 20; i++) {
                assert_int_equal(runtime_enqueue(rt, "Probe"), 0);
                for (int t = 0; t < 250 && n_syncs < syncs + i + 1; t++)
                        run_for(20 * USEC_PER_MSEC);
        }
        run_for(200 * USEC_PER_MSEC);
        assert_true(n_syncs >= syncs + 20);
        /* Twenty syncs, nothing to change: not one GET or PUT. */
        assert_int_equal(requests(), before);
}

static void test_change_right_after_a_write(void **state)
{
        (void) state;
        /* Quiet watches nothing, so no informer event wakes it: only its own
         * syncs can put its condition right. False, and the moment that write
         * has completed (before the watch can have brought it into the
         * cache), True again: the stale cached True must not pass for
         * "nothing to do". */
        unsigned base = loop_http_in_flight(loop);
        for (int round = 0; round < 10; round++) {
                quiet_status = "False";
                uint64_t before = requests();
                assert_int_equal(runtime_enqueue(rt, "Quiet"), 0);
                for (int i = 0; i < 10000 && (requests() == before || loop_http_in_flight(loop) > base); i++)
                        assert_true(sd_event_run(loop_get_event(loop), 10 * USEC_PER_MSEC) >= 0);
                assert_true(requests() > before);
                quiet_status = "True";
                assert_int_equal(runtime_enqueue(rt, "Quiet"), 0);
                bool ok = false;
                for (int i = 0; i < 60 && !ok; i++) {
                        run_for(50 * USEC_PER_MSEC);
                        _cleanup_free_ char *s = live_condition("QuietAvailable", NULL);
                        ok = streq(s, "True");
                }
                if (!ok)
                        fail_msg("round %d: QuietAvailable stayed False on the server", round);
        }
}

/* The live object's metadata.generation and status.observedGeneration (-1 when absent). */
static void live_generations(int64_t *ret_gen, int64_t *ret_observed)
{
        Result r = {};
        assert_int_equal(kube_get(client, &KUBE_ETCDS, NULL, "cluster", on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        *ret_gen = *ret_observed = -1;
        (void) json_get_int64(r.body, "metadata.generation", ret_gen);
        (void) json_get_int64(r.body, "status.observedGeneration", ret_observed);
        cJSON_Delete(r.body);
}

static void wait_observed(int64_t *ret_gen)
{
        int64_t gen = -1, observed = -1;
        for (int i = 0; i < 200; i++) {
                live_generations(&gen, &observed);
                if (gen > 0 && observed == gen) {
                        *ret_gen = gen;
                        return;
                }
                run_for(50 * USEC_PER_MSEC);
        }
        fail_msg("status.observedGeneration stayed %" PRId64 " with metadata.generation %" PRId64, observed,
                 gen);
}

/* The status writer publishes the spec's generation its syncs saw: a spec change is
 * observed by the next sync's conditions write. */
static void test_observed_generation(void **state)
{
        (void) state;
        int64_t gen = 0, next = 0;
        wait_observed(&gen);
        _cleanup_(cJSON_Deletep) cJSON *patch = NULL;
        _cleanup_free_ char *text =
                strdup_printf("{\"spec\":{\"forceRedeploymentReason\":\"observed-%" PRId64 "\"}}", gen);
        assert_int_equal(json_parse(text, strlen(text), &patch), 0);
        Result r = {};
        assert_int_equal(kube_patch(client, &KUBE_ETCDS, NULL, "cluster", NULL, KUBE_PATCH_MERGE, patch,
                                    NULL, false, on_result, &r),
                         0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        cJSON_Delete(r.body);
        wait_observed(&next);
        assert_int_equal(next, gen + 1);
}

static void test_undoes_another_writer(void **state)
{
        (void) state;
        Result r = {};
        assert_int_equal(kube_get(client, &KUBE_ETCDS, NULL, "cluster", on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        cJSON *c = conditions_find(json_get(r.body, "status.conditions"), "ProbeAvailable");
        assert_non_null(c);
        cJSON_ReplaceItemInObject(c, "status", cJSON_CreateString("Unknown"));
        Result w = {};
        assert_int_equal(kube_update_status(client, &KUBE_ETCDS, r.body, on_result, &w), 0);
        wait_for(&w);
        assert_int_equal(w.error, 0);
        cJSON_Delete(r.body);
        /* The Probe controller watches etcds: the edit reaches it through the
         * informer, and its next sync puts True back. */
        wait_live("True");
        cJSON_Delete(w.body);
}

static void test_degraded_message_from_server(void **state)
{
        (void) state;
        writer_on = true;
        for (int i = 0; i < 100; i++) {
                assert_int_equal(runtime_enqueue(rt, "Writer"), 0);
                run_for(100 * USEC_PER_MSEC);
                Result r = {};
                assert_int_equal(kube_get(client, &KUBE_ETCDS, NULL, "cluster", on_result, &r), 0);
                wait_for(&r);
                cJSON *c = conditions_find(json_get(r.body, "status.conditions"), "WriterDegraded");
                const char *msg = c ? json_get_string(c, "message") : NULL;
                bool degraded = c && streq_ptr(json_get_string(c, "status"), "True");
                if (degraded) {
                        /* The server's Status message, not strerror's "No such file or directory". */
                        assert_non_null(msg);
                        assert_non_null(strstr(msg, "\"never-created\" not found"));
                        assert_null(strstr(msg, "No such file"));
                        cJSON_Delete(r.body);
                        writer_on = false;
                        return;
                }
                cJSON_Delete(r.body);
        }
        fail_msg("WriterDegraded never became True");
}

static void test_no_second_create_from_a_stale_cache(void **state)
{
        (void) state;
        /* First a sync that creates nothing, so CreatorDegraded=False is on the
         * server and in the cache: the create's sync then ends with its
         * answer, with no status write to give the watch time to catch up. */
        assert_int_equal(runtime_enqueue(rt, "Creator"), 0);
        run_for(500 * USEC_PER_MSEC);
        /* Make Creator's informer blind for a while: its next re-watch is refused
         * once (503), so after the reset below it is back only after its backoff
         * (0.8 s), long enough for syncs from a stale cache to follow the create. */
        Result fr = {};
        cJSON *fault = NULL;
        static const char fault_json[] =
                "{\"method\":\"GET\",\"path_regex\":\"/namespaces/default/configmaps\\\\?"
                ".*watch=\",\"code\":503,\"count\":1}";
        assert_int_equal(json_parse(fault_json, strlen(fault_json), &fault), 0);
        assert_int_equal(
                kube_call(client, "POST", "/sim/faults", fault, "application/json", on_result, &fr, NULL),
                0);
        cJSON_Delete(fault);
        wait_for(&fr);
        assert_int_equal(fr.error, 0);
        cJSON_Delete(fr.body);
        /* Reset every watch: resumed at once, and Creator's is refused. */
        Result d = {};
        cJSON *body = cJSON_CreateObject();
        cJSON_AddBoolToObject(body, "abort", true);
        assert_int_equal(kube_call(client, "POST", "/sim/drop-watches", body, "application/json", on_result,
                                   &d, NULL),
                         0);
        cJSON_Delete(body);
        wait_for(&d);
        assert_int_equal(d.error, 0);
        cJSON_Delete(d.body);
        creator_on = true;
        n_creates = 0;
        /* Ask again every millisecond for half a second: each sync that runs
         * between the create's answer and its watch event would create again. */
        usec_t end = now_usec(CLOCK_MONOTONIC) + 500 * USEC_PER_MSEC;
        while (now_usec(CLOCK_MONOTONIC) < end) {
                assert_int_equal(runtime_enqueue(rt, "Creator"), 0);
                assert_true(sd_event_run(loop_get_event(loop), USEC_PER_MSEC) >= 0);
        }
        run_for(2500 * USEC_PER_MSEC); /* past the expectation's deadline: the informer has caught up */
        creator_on = false;
        assert_int_equal(n_creates, 1);
        ControllerStats st = {};
        assert_int_equal(runtime_get_stats(rt, "Creator", &st), 0);
        assert_int_equal(st.failures, 0);
}

/* POSTs `body` to the fault proxy's `path` and checks it answered 2xx. */
static void proxy_post(const char *path, const char *body)
{
        Result r = {};
        cJSON *j = NULL;
        assert_int_equal(json_parse(body, strlen(body), &j), 0);
        assert_int_equal(kube_call(client, "POST", path, j, "application/json", on_result, &r, NULL), 0);
        cJSON_Delete(j);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        cJSON_Delete(r.body);
}

static bool cached(const KubeResource *res, const char *name, const char *state)
{
        const KubeObject *o =
                informer_get(informer_factory_find(informers, res, "default", NULL, NULL), "default", name);
        return o && (!state || streq_ptr(json_get_string(o->json, "metadata.annotations.state"), state));
}

/* A plan deletes an object and marks another done; the second one's informer stays blind
 * for seconds (its re-watch refused four times: 0 + 0.8 + 1.6 + 3.2 s of backoff at least).
 * The controller, enqueued again and again meanwhile, must wait for its own write to show
 * rather than plan from the stale copy and make the deleted object again. */
static void test_no_recreate_while_a_cache_lags(void **state)
{
        (void) state;
        Result r = {};
        cJSON *owner = NULL;
        static const char body[] = "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
                                   "\"purge-owner\",\"namespace\":\"default\",\"annotations\":{\"state\":"
                                   "\"pending\"}}}";
        assert_int_equal(json_parse(body, strlen(body), &owner), 0);
        assert_int_equal(kube_create(client, &KUBE_SECRETS, "default", owner, on_result, &r), 0);
        cJSON_Delete(owner);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        cJSON_Delete(r.body);
        for (int i = 0; i < 200 && !cached(&KUBE_SECRETS, "purge-owner", "pending"); i++)
                run_for(20 * USEC_PER_MSEC);
        assert_true(cached(&KUBE_SECRETS, "purge-owner", "pending"));

        /* The owner's informer goes blind first, so the job's create is seen but not what follows. */
        proxy_post("/sim/faults", "{\"method\":\"GET\",\"path_regex\":\"/namespaces/default/secrets\\\\?"
                                  ".*watch=\",\"code\":503,\"count\":4}");
        proxy_post("/sim/drop-watches", "{\"abort\":true}");
        purger_on = true;
        n_purge_creates = 0;
        assert_int_equal(runtime_enqueue(rt, "Purger"), 0);
        for (int i = 0; i < 200 && !cached(&KUBE_CONFIGMAPS, "purge-job", NULL); i++)
                run_for(20 * USEC_PER_MSEC);
        assert_true(cached(&KUBE_CONFIGMAPS, "purge-job", NULL));
        assert_int_equal(n_purge_creates, 1);
        /* The job's event makes Purger delete it and mark the owner done; ask again every 10 ms
         * until the owner's informer shows "done". */
        usec_t start = now_usec(CLOCK_MONOTONIC), end = start + 20 * USEC_PER_SEC;
        while (!cached(&KUBE_SECRETS, "purge-owner", "done") && now_usec(CLOCK_MONOTONIC) < end) {
                assert_int_equal(runtime_enqueue(rt, "Purger"), 0);
                run_for(10 * USEC_PER_MSEC);
        }
        usec_t blind = now_usec(CLOCK_MONOTONIC) - start;
        assert_true(cached(&KUBE_SECRETS, "purge-owner", "done"));
        assert_true(blind > 2500 * USEC_PER_MSEC); /* the cache did lag past the old 2 s deadline */
        run_for(500 * USEC_PER_MSEC);
        purger_on = false;
        assert_int_equal(n_purge_creates, 1);
        assert_false(cached(&KUBE_CONFIGMAPS, "purge-job", NULL));
        ControllerStats st = {};
        assert_int_equal(runtime_get_stats(rt, "Purger", &st), 0);
        assert_int_equal(st.failures, 0);
}

static void set_management_state(const char *state)
{
        Result r = {};
        _cleanup_free_ char *txt = strdup_printf("{\"spec\":{\"managementState\":\"%s\"}}", state);
        cJSON *patch = NULL;
        assert_int_equal(json_parse(txt, strlen(txt), &patch), 0);
        assert_int_equal(kube_patch(client, &KUBE_ETCDS, NULL, "cluster", NULL, KUBE_PATCH_MERGE, patch,
                                    NULL, false, on_result, &r),
                         0);
        cJSON_Delete(patch);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        uint64_t rv = 0;
        (void) json_get_uint64(r.body, "metadata.resourceVersion", &rv);
        cJSON_Delete(r.body);
        wait_cached_rv(rv);
}

/* spec.managementState Unmanaged (and Removed): every controller stops acting
 * but those that run unmanaged (the status reporter); Managed again, they
 * act again. */
static void test_unmanaged_stops_controllers(void **state)
{
        (void) state;
        probe_status = "True";
        wait_live("True");
        set_management_state("Unmanaged");
        run_for(500 * USEC_PER_MSEC); /* syncs already running finish */
        unsigned syncs = n_syncs, reports = n_reports;
        probe_status = "False";
        assert_int_equal(runtime_enqueue(rt, "Probe"), 0);
        run_for(2 * USEC_PER_SEC);
        assert_int_equal(n_syncs, syncs); /* Probe did not sync */
        assert_true(n_reports > reports); /* Reporter did */
        _cleanup_free_ char *s = live_status(NULL);
        assert_string_equal(s, "True");
        set_management_state("Removed");
        run_for(USEC_PER_SEC);
        assert_int_equal(n_syncs, syncs);
        set_management_state("Managed");
        wait_live("False"); /* within UNMANAGED_POLL */
        assert_true(n_syncs > syncs);
        probe_status = "True";
        assert_int_equal(runtime_enqueue(rt, "Probe"), 0);
        wait_live("True");
}

static int setup(void **state)
{
        _cleanup_free_ char *err = NULL;
        KubeConfig *cfg = NULL;
        Result r = {};

        (void) state;
        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        if (kube_config_load(NULL, NULL, &cfg, &err) < 0) {
                fprintf(stderr, "KUBECONFIG: %s (run through test/integration/with-kube.sh)\n", err);
                return -1;
        }
        loop = loop_new();
        client = kube_client_new(loop, cfg);
        cJSON *etcd = NULL;
        static const char body[] =
                "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"Etcd\","
                "\"metadata\":{\"name\":\"cluster\"},\"spec\":{\"managementState\":\"Managed\"}}";
        assert_int_equal(json_parse(body, strlen(body), &etcd), 0);
        assert_int_equal(kube_create(client, &KUBE_ETCDS, NULL, etcd, on_result, &r), 0);
        cJSON_Delete(etcd);
        wait_for(&r);
        cJSON_Delete(r.body);
        if (r.error < 0 && r.error != -EEXIST)
                return -1;

        informers = informer_factory_new(client);
        RuntimeConfig rc = {.status_res = &KUBE_ETCDS, .status_name = "cluster"};
        rt = runtime_new(client, informers, NULL, &rc);
        if (!rt || runtime_add(rt, &probe) < 0 || runtime_add(rt, &quiet) < 0 ||
            runtime_add(rt, &writer) < 0 || runtime_add(rt, &creator) < 0 ||
            runtime_add(rt, &reporter) < 0 || runtime_add(rt, &purger) < 0)
                return -1;
        if (informer_factory_start(informers) < 0 || runtime_start(rt) < 0)
                return -1;
        return 0;
}

static int teardown(void **state)
{
        (void) state;
        rt = runtime_free(rt);
        informers = informer_factory_free(informers);
        client = kube_client_free(client);
        loop = loop_unref(loop);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unchanged_conditions_send_nothing),
                cmocka_unit_test(test_change_right_after_a_write),
                cmocka_unit_test(test_degraded_message_from_server),
                cmocka_unit_test(test_no_second_create_from_a_stale_cache),
                cmocka_unit_test(test_no_recreate_while_a_cache_lags),
                cmocka_unit_test(test_undoes_another_writer),
                cmocka_unit_test(test_unmanaged_stops_controllers),
                cmocka_unit_test(test_observed_generation),
        };
        json_hooks_install(); /* API responses through the scratch arena, as in the operator */
        return cmocka_run_group_tests(tests, setup, teardown);
}
