/* The runtime's conditions writes against the API simulator (run by
 * with-sim.sh). Each sync ends by writing its conditions on etcds/cluster;
 * they are compared with the informer's copy, so a sync that changes nothing
 * sends no request at all, while a change, including one undoing another
 * writer's edit or our own write the cache has not seen yet, still lands. */
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

static const ControllerSpec quiet = {.name = "Quiet", .sync = sync_quiet};

static const WatchSpec probe_watches[] = {{.res = &KUBE_ETCDS}};
static const ControllerSpec probe = {
        .name = "Probe", .watches = probe_watches, .n_watches = 1, .sync = sync_probe};

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
        Informer *inf = informer_factory_get(informers, &KUBE_ETCDS, NULL, NULL);
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
        run_for(300 * USEC_PER_MSEC); /* let the watch event of our own write settle */

        uint64_t before = requests();
        unsigned syncs = n_syncs;
        for (int i = 0; i < 20; i++) {
                assert_int_equal(runtime_enqueue(rt, "Probe"), 0);
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

static int setup(void **state)
{
        _cleanup_free_ char *err = NULL;
        KubeConfig *cfg = NULL;
        Result r = {};

        (void) state;
        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        if (kube_config_load(NULL, NULL, &cfg, &err) < 0) {
                fprintf(stderr, "KUBECONFIG: %s (run through test/integration/with-sim.sh)\n", err);
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
        if (!rt || runtime_add(rt, &probe) < 0 || runtime_add(rt, &quiet) < 0)
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
                cmocka_unit_test(test_undoes_another_writer),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
