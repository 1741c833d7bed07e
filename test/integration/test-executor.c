/* The runtime's plan executor on its own (operator/runtime/executor.c),
 * against kube-apiserver through the fault proxy (run by with-kube.sh
 * --fault-proxy, whose /sim/writes logs every write) and a real etcd from the
 * harness: membership intents that are already done or not yet possible,
 * the requeue that follows "not yet", the gate that holds a second
 * membership change until the view is newer than the first, APPLY
 * through a burst of 409 Conflicts, and the growing delay of conflicts
 * that repeat, and writes whose outcome is unknown (a 504 after the write
 * was carried out, or before it; a read-back that fails too): never sent
 * again before a read settles them. One test controller plans whatever the
 * test sets up; the outcome is read from etcd, the API, the proxy and the
 * controller's Degraded condition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/log.h"
#include "etcd-harness.h"
#include "etcd/view.h"
#include "kube/client.h"
#include "runtime/conditions.h"
#include "runtime/controller.h"

static Loop *loop;
static KubeClient *client;
static InformerFactory *informers;
static Runtime *rt;
static EtcdClient *etcd;
static EtcdTestCluster cluster;

typedef enum Action { NOTHING, REMOVE_MISSING, PROMOTE, ADD, UPDATE_PEER, APPLY, UPDATE_STALE } Action;
static Action action;
static uint64_t member_id;      /* PROMOTE, UPDATE_PEER */
static const char *peer_url;    /* ADD, UPDATE_PEER */
static const char *apply_value; /* APPLY */
static unsigned n_syncs, n_etcd_changes;
static bool view_fresh = true;
/* The view's snapshot as the runtime reads it: NULL, or one that sees a split brain. */
static EtcdViewSnapshot split_snapshot = {.n_ref = 1,
                                          .split_brain = true,
                                          .split_brain_detail =
                                                  (char *) "members report 2 cluster IDs: (test)"};
static bool split;

static int sync_member(const SyncContext *ctx, Plan *p)
{
        (void) ctx;
        n_syncs++;
        switch (action) {
        case REMOVE_MISSING:
                plan_etcd_remove(p, "ghost", 0x1234567890abcdefULL);
                break;
        case PROMOTE:
                plan_etcd_promote(p, "m2", member_id);
                break;
        case ADD:
                plan_etcd_add_learner(p, "m3", peer_url);
                break;
        case UPDATE_PEER:
                plan_etcd_update_peer(p, "m3", member_id, peer_url);
                break;
        case APPLY: {
                _cleanup_(cJSON_Deletep) cJSON *cm = NULL;
                _cleanup_free_ char *body = strdup_printf(
                        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"applied\","
                        "\"namespace\":\"default\"},\"data\":{\"v\":\"%s\"}}",
                        apply_value);
                if (!body || json_parse(body, strlen(body), &cm) < 0)
                        return -ENOMEM;
                plan_apply(p, &KUBE_CONFIGMAPS, cm);
                break;
        }
        case UPDATE_STALE: {
                /* An update from a cache that is behind: resourceVersion 1 always conflicts. */
                _cleanup_(cJSON_Deletep) cJSON *cm = NULL;
                static const char body[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                                           "\"name\":\"applied\",\"namespace\":\"default\","
                                           "\"resourceVersion\":\"1\"},\"data\":{\"v\":\"stale\"}}";
                if (json_parse(body, strlen(body), &cm) < 0)
                        return -ENOMEM;
                plan_update(p, &KUBE_CONFIGMAPS, cm);
                break;
        }
        case NOTHING:
                break;
        }
        return 0;
}

static const ControllerSpec member = {
        .name = "Member", .degraded_condition = "MemberDegraded", .sync = sync_member};

/* Writer: merge-patches default/patched's data.v to `patch_value` while its
 * cache (a watch of default's ConfigMaps) shows otherwise. A patch carries no
 * resourceVersion: sent again after it landed, the server would take it again. */
static const char *patch_value; /* NULL: plans nothing */
static unsigned n_writer_syncs;
static const WatchSpec default_configmaps = {.res = &KUBE_CONFIGMAPS, .namespace = "default"};
static const WatchSpec *const writer_watches[] = {&default_configmaps};

static int sync_writer(const SyncContext *ctx, Plan *p)
{
        n_writer_syncs++;
        if (!patch_value)
                return 0;
        Informer *inf = informer_factory_find(ctx->informers, &KUBE_CONFIGMAPS, "default", NULL, NULL);
        const KubeObject *o = inf ? informer_get(inf, "default", "patched") : NULL;
        if (o && streq_ptr(json_get_string(o->json, "data.v"), patch_value))
                return 0;
        _cleanup_(cJSON_Deletep) cJSON *patch = NULL;
        _cleanup_free_ char *body = strdup_printf("{\"data\":{\"v\":\"%s\"}}", patch_value);
        if (!body || json_parse(body, strlen(body), &patch) < 0)
                return -ENOMEM;
        plan_patch(p, &KUBE_CONFIGMAPS, "default", "patched", KUBE_PATCH_MERGE, patch);
        return 0;
}

static const ControllerSpec writer = {.name = "Writer",
                                      .degraded_condition = "WriterDegraded",
                                      .sync = sync_writer,
                                      .watches = writer_watches,
                                      .n_watches = 1};

static void on_etcd_change(void *userdata)
{
        (void) userdata;
        n_etcd_changes++;
}

static const EtcdViewSnapshot *etcd_snapshot(void *userdata)
{
        (void) userdata;
        return split ? &split_snapshot : NULL;
}

static bool etcd_view_fresh(void *userdata, usec_t since)
{
        (void) userdata;
        (void) since;
        return view_fresh;
}

/* ---- helpers ---- */

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

static void run_for(usec_t d)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + d;
        while (now_usec(CLOCK_MONOTONIC) < end)
                assert_true(sd_event_run(loop_get_event(loop), 10 * USEC_PER_MSEC) >= 0);
}

/* Runs the controller once and the loop until its sync count moved and `d` passed (on a
 * loaded machine the sync may come later than `d`: up to 20 s more). */
static void sync_and_run(usec_t d)
{
        unsigned before = n_syncs;
        assert_int_equal(runtime_enqueue(rt, "Member"), 0);
        run_for(d);
        for (int i = 0; i < 200 && n_syncs <= before; i++)
                run_for(100 * USEC_PER_MSEC);
        assert_true(n_syncs > before);
        run_for(d / 2); /* what the sync set off (a view refresh) lands too */
}

static ControllerStats stats(void)
{
        ControllerStats st = {};
        assert_int_equal(runtime_get_stats(rt, "Member", &st), 0);
        return st;
}

/* MemberDegraded's status on the server ("" when absent); its message into *ret_message. */
static char *degraded(char **ret_message)
{
        Result r = {};
        assert_int_equal(kube_get(client, &KUBE_ETCDS, NULL, "cluster", on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        cJSON *c = conditions_find(json_get(r.body, "status.conditions"), "MemberDegraded");
        char *s = strdup(c ? strempty(json_get_string(c, "status")) : "");
        if (ret_message)
                *ret_message =
                        c && json_get_string(c, "message") ? strdup(json_get_string(c, "message")) : NULL;
        cJSON_Delete(r.body);
        return s;
}

static EtcdMemberList *member_list(void)
{
        EtcdTestResult r = {};
        EtcdMemberList *l = NULL;
        assert_int_equal(etcd_member_list(etcd, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
        assert_int_equal(etcd_parse_member_list(r.body, &l), 0);
        etcd_test_result_done(&r);
        return l;
}

static size_t etcd_members(bool *ret_learner_present)
{
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = member_list();
        if (ret_learner_present) {
                *ret_learner_present = false;
                for (size_t i = 0; i < l->n_members; i++)
                        *ret_learner_present |= l->members[i].is_learner;
        }
        return l->n_members;
}

static void sim_fault(const char *json)
{
        _cleanup_(cJSON_Deletep) cJSON *b = NULL;
        Result r = {};
        assert_int_equal(json_parse(json, strlen(json), &b), 0);
        assert_int_equal(
                kube_call(client, "POST", "/sim/faults", b, "application/json", on_result, &r, NULL), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        cJSON_Delete(r.body);
}

/* ---- tests ---- */

/* etcd says the member is not there: the removal is already done. */
static void test_already_done(void **state)
{
        (void) state;
        unsigned changes = n_etcd_changes;
        uint64_t failures = stats().failures;
        action = REMOVE_MISSING;
        sync_and_run(500 * USEC_PER_MSEC);
        action = NOTHING;
        assert_int_equal(stats().failures, failures);
        assert_int_equal(n_etcd_changes, changes + 1); /* the view is refreshed as after a change */
        _cleanup_free_ char *d = degraded(NULL);
        assert_string_equal(d, "False");
        assert_int_equal(etcd_members(NULL), 1);
}

/* A learner that has not started cannot be promoted yet: no failure, a
 * short requeue that runs the sync again by itself. */
static void test_not_yet_and_requeue(void **state)
{
        (void) state;
        EtcdTestResult r = {};
        assert_int_equal(etcd_member_add(etcd, cluster.members[1].peer_url, true, etcd_test_result_cb, &r),
                         0);
        assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        assert_int_equal(etcd_parse_added_member(r.body, &member_id), 0);
        etcd_test_result_done(&r);

        uint64_t failures = stats().failures;
        action = PROMOTE;
        sync_and_run(300 * USEC_PER_MSEC);
        unsigned after_first = n_syncs;
        run_for(3 * USEC_PER_SEC); /* the requeue after etcd's "not yet" (2 s) */
        action = NOTHING;
        assert_true(n_syncs > after_first);
        assert_int_equal(stats().failures, failures);
        _cleanup_free_ char *d = degraded(NULL);
        assert_string_equal(d, "False");
        bool learner = false;
        assert_int_equal(etcd_members(&learner), 2);
        assert_true(learner); /* still a learner: nothing was forced */
}

/* After a membership change, the next one waits for a view newer than it. */
static void test_freshness_gate(void **state)
{
        (void) state;
        /* Remove the learner of the previous test: a change carried out. */
        EtcdTestResult r = {};
        assert_int_equal(etcd_member_remove(etcd, member_id, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
        etcd_test_result_done(&r);
        action = REMOVE_MISSING; /* "already done" still counts as a change the view must see */
        sync_and_run(500 * USEC_PER_MSEC);

        view_fresh = false;
        peer_url = cluster.members[2].peer_url;
        action = ADD;
        sync_and_run(1500 * USEC_PER_MSEC);
        assert_int_equal(etcd_members(NULL), 1); /* held back: the view predates the last change */
        view_fresh = true;
        run_for(1500 * USEC_PER_MSEC); /* the gate's own short requeue brings it back */
        action = NOTHING;
        bool learner = false;
        assert_int_equal(etcd_members(&learner), 2);
        assert_true(learner);
        _cleanup_free_ char *d = degraded(NULL);
        assert_string_equal(d, "False");
}

/* A member's peer URL updated in place (the learner of the last test, which never started:
 * harmless to move): the member list has the new URL, and it is a change the view must see. */
static void test_update_peer(void **state)
{
        (void) state;
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = member_list();
        member_id = 0;
        for (size_t i = 0; i < l->n_members; i++)
                if (l->members[i].is_learner)
                        member_id = l->members[i].id;
        assert_true(member_id != 0);

        unsigned changes = n_etcd_changes;
        uint64_t failures = stats().failures;
        peer_url = cluster.members[1].peer_url;
        action = UPDATE_PEER;
        sync_and_run(500 * USEC_PER_MSEC);
        action = NOTHING;
        assert_int_equal(stats().failures, failures);
        assert_int_equal(n_etcd_changes, changes + 1);

        _cleanup_(etcd_member_list_freep) EtcdMemberList *after = member_list();
        bool found = false;
        for (size_t i = 0; i < after->n_members; i++)
                if (after->members[i].id == member_id) {
                        assert_int_equal(after->members[i].n_peer_urls, 1);
                        assert_string_equal(after->members[i].peer_urls[0], cluster.members[1].peer_url);
                        found = true;
                }
        assert_true(found);
}

/* While the view sees a split brain, no etcd intent is carried out, whatever the plan was
 * made from: a promotion of the member of the last test is refused, a failure the
 * controller's Degraded condition names; the member list is as it was. */
static void test_split_brain_refused(void **state)
{
        (void) state;
        uint64_t failures = stats().failures;
        unsigned changes = n_etcd_changes;
        bool learner_before = false;
        size_t members_before = etcd_members(&learner_before);
        split = true;
        action = PROMOTE;
        sync_and_run(500 * USEC_PER_MSEC);
        action = NOTHING;
        split = false;
        assert_true(stats().failures > failures); /* refused, and refused again on each retry */
        assert_int_equal(n_etcd_changes, changes);
        _cleanup_free_ char *message = NULL;
        _cleanup_free_ char *d = degraded(&message);
        assert_string_equal(d, "True");
        assert_non_null(message);
        assert_non_null(strstr(message, "split brain"));
        bool learner = false;
        assert_int_equal(etcd_members(&learner), members_before);
        assert_int_equal(learner, learner_before);
        sync_and_run(500 * USEC_PER_MSEC);
        _cleanup_free_ char *after = degraded(NULL);
        assert_string_equal(after, "False");
}

/* APPLY through 409s: re-read and merge again, then sync again; it lands. */
static void test_apply_through_conflicts(void **state)
{
        (void) state;
        action = APPLY;
        apply_value = "one";
        sync_and_run(500 * USEC_PER_MSEC);
        sim_fault("{\"method\":\"PUT\",\"path_regex\":\"/namespaces/default/configmaps/applied$\","
                  "\"code\":409,\"count\":5}");
        apply_value = "two";
        sync_and_run(3 * USEC_PER_SEC);
        action = NOTHING;
        Result r = {};
        assert_int_equal(kube_get(client, &KUBE_CONFIGMAPS, "default", "applied", on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        assert_string_equal(json_get_string(r.body, "data.v"), "two");
        cJSON_Delete(r.body);
        _cleanup_free_ char *msg = NULL;
        _cleanup_free_ char *d = degraded(&msg);
        assert_string_equal(d, "False"); /* a conflict is a stale cache, not a failure */
}

/* Conflicts that repeat (a cache that stays behind): no Degraded, and each
 * sync waits longer than the last (200 ms doubling), instead of a retry every
 * 200 ms; a plan without a conflict ends the streak. */
static void test_conflicts_back_off(void **state)
{
        (void) state;
        action = UPDATE_STALE;
        unsigned before = n_syncs;
        assert_int_equal(runtime_enqueue(rt, "Member"), 0);
        run_for(6200 * USEC_PER_MSEC);
        unsigned n = n_syncs - before;
        fprintf(stderr, "%u syncs in 6.2 s of conflicts\n", n);
        assert_true(n >= 4 && n <= 7); /* 0, 0.2, 0.6, 1.4, 3.0, 6.2 s; a fixed 200 ms would be ~30 */
        _cleanup_free_ char *d = degraded(NULL);
        assert_string_equal(d, "False");
        /* A plan without a conflict resets it: the next conflict is retried after 200 ms again. */
        action = NOTHING;
        sync_and_run(300 * USEC_PER_MSEC);
        action = UPDATE_STALE;
        before = n_syncs;
        assert_int_equal(runtime_enqueue(rt, "Member"), 0);
        run_for(700 * USEC_PER_MSEC);
        action = NOTHING;
        assert_true(n_syncs - before >= 2);
        run_for(USEC_PER_SEC);
}

/* The PATCHes of default/patched the fault proxy logged from sequence `since` on, as
 * "code/served" pairs ("504/200": carried out, its answer lost). */
static char *patches_since(uint64_t since)
{
        Result r = {};
        _cleanup_free_ char *path = strdup_printf("/sim/writes?since=%" PRIu64, since);
        assert_int_equal(kube_call(client, "GET", path, NULL, NULL, on_result, &r, NULL), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        char out[1024] = "";
        size_t n = 0;
        cJSON *w;
        cJSON_ArrayForEach(w, json_get(r.body, "writes"))
        {
                const char *wpath = strempty(json_get_string(w, "path"));
                const char *at = strstr(wpath, "/namespaces/default/configmaps/patched");
                if (!streq_ptr(json_get_string(w, "method"), "PATCH") || !at ||
                    !strchr("?", at[strlen("/namespaces/default/configmaps/patched")]))
                        continue;
                uint64_t code = 0, served = 0;
                (void) json_get_uint64(w, "code", &code);
                (void) json_get_uint64(w, "served", &served);
                n += (size_t) snprintf(out + n, sizeof out - MIN(n, sizeof out), "%s%" PRIu64 "/%" PRIu64,
                                       n ? " " : "", code, served);
                assert_true(n < sizeof out);
        }
        cJSON_Delete(r.body);
        return strdup(out);
}

static uint64_t last_write_seq(void)
{
        Result r = {};
        uint64_t seq = 0;
        assert_int_equal(kube_call(client, "GET", "/sim/writes", NULL, NULL, on_result, &r, NULL), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        cJSON *last = cJSON_GetArrayItem(json_get(r.body, "writes"),
                                         cJSON_GetArraySize(json_get(r.body, "writes")) - 1);
        if (last)
                (void) json_get_uint64(last, "seq", &seq);
        cJSON_Delete(r.body);
        return seq;
}

static char *patched_value(void)
{
        Result r = {};
        assert_int_equal(kube_get(client, &KUBE_CONFIGMAPS, "default", "patched", on_result, &r), 0);
        wait_for(&r);
        assert_int_equal(r.error, 0);
        char *v = strdup(strempty(json_get_string(r.body, "data.v")));
        cJSON_Delete(r.body);
        return v;
}

/* A patch carried out whose answer was lost (504 Timeout): the executor reads the object
 * back and plans again from there; the same patch is never sent twice. */
static void test_lost_answer_is_not_resent(void **state)
{
        (void) state;
        uint64_t since = last_write_seq() + 1;
        sim_fault("{\"method\":\"PATCH\",\"path_regex\":\"/namespaces/default/configmaps/patched([?]|$)\","
                  "\"code\":504,\"count\":1,\"after\":true}");
        patch_value = "landed";
        assert_int_equal(runtime_enqueue(rt, "Writer"), 0);
        run_for(3 * USEC_PER_SEC);
        _cleanup_free_ char *got = patches_since(since);
        _cleanup_free_ char *v = patched_value();
        fprintf(stderr, "PATCHes (code/served): %s; data.v=%s\n", got, v);
        assert_string_equal(v, "landed");
        assert_string_equal(got, "504/200"); /* once: carried out; never sent again */
}

/* A patch refused with 504 (not carried out) and a read-back that fails too: the outcome
 * stays unknown, so the next syncs send nothing while reads fail; once a read works
 * (the object unchanged, as the cache has it) the patch goes out, once. */
static void test_unsettled_write_waits_for_a_read(void **state)
{
        (void) state;
        uint64_t since = last_write_seq() + 1;
        sim_fault("{\"method\":\"PATCH\",\"path_regex\":\"/namespaces/default/configmaps/patched([?]|$)\","
                  "\"code\":504,\"count\":1}");
        sim_fault("{\"method\":\"GET\",\"path_regex\":\"/namespaces/default/configmaps/patched([?]|$)\","
                  "\"code\":500,\"count\":3}");
        patch_value = "second";
        unsigned before = n_writer_syncs;
        assert_int_equal(runtime_enqueue(rt, "Writer"), 0);
        run_for(8 * USEC_PER_SEC);
        patch_value = NULL;
        _cleanup_free_ char *got = patches_since(since);
        _cleanup_free_ char *v = patched_value();
        fprintf(stderr, "PATCHes (code/served): %s; data.v=%s; %u syncs\n", got, v, n_writer_syncs - before);
        assert_true(n_writer_syncs - before >= 3); /* it kept trying: each sync read first */
        assert_string_equal(got, "504/504 200/200");
        assert_string_equal(v, "second");
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
        if (etcd_test_cluster_init(&cluster, 3, NULL) < 0 || etcd_test_cluster_bootstrap(&cluster, 1) < 0)
                return -1;
        loop = loop_new();
        client = kube_client_new(loop, cfg);
        etcd = etcd_test_client(&cluster, loop, 0x1);
        if (!loop || !client || !etcd)
                return -1;
        cJSON *obj = NULL;
        static const char body[] =
                "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"Etcd\","
                "\"metadata\":{\"name\":\"cluster\"},\"spec\":{\"managementState\":\"Managed\"}}";
        assert_int_equal(json_parse(body, strlen(body), &obj), 0);
        assert_int_equal(kube_create(client, &KUBE_ETCDS, NULL, obj, on_result, &r), 0);
        cJSON_Delete(obj);
        wait_for(&r);
        cJSON_Delete(r.body);
        if (r.error < 0 && r.error != -EEXIST)
                return -1;

        static const char patched[] =
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                "\"name\":\"patched\",\"namespace\":\"default\"},\"data\":{\"v\":\"0\"}}";
        assert_int_equal(json_parse(patched, strlen(patched), &obj), 0);
        r = (Result){};
        assert_int_equal(kube_create(client, &KUBE_CONFIGMAPS, "default", obj, on_result, &r), 0);
        cJSON_Delete(obj);
        wait_for(&r);
        cJSON_Delete(r.body);

        informers = informer_factory_new(client);
        RuntimeConfig rc = {.status_res = &KUBE_ETCDS,
                            .status_name = "cluster",
                            .etcd = etcd,
                            .on_etcd_change = on_etcd_change,
                            .etcd_snapshot = etcd_snapshot,
                            .etcd_view_fresh = etcd_view_fresh};
        rt = runtime_new(client, informers, NULL, &rc);
        if (!rt || runtime_add(rt, &member) < 0 || runtime_add(rt, &writer) < 0 ||
            informer_factory_start(informers) < 0 || runtime_start(rt) < 0)
                return -1;
        run_for(500 * USEC_PER_MSEC); /* informers synced */
        return 0;
}

static int teardown(void **state)
{
        (void) state;
        rt = runtime_free(rt);
        informers = informer_factory_free(informers);
        etcd = etcd_client_free(etcd);
        client = kube_client_free(client);
        loop = loop_unref(loop);
        etcd_test_cluster_destroy(&cluster);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_already_done),
                cmocka_unit_test(test_not_yet_and_requeue),
                cmocka_unit_test(test_freshness_gate),
                cmocka_unit_test(test_update_peer),
                cmocka_unit_test(test_split_brain_refused),
                cmocka_unit_test(test_apply_through_conflicts),
                cmocka_unit_test(test_conflicts_back_off),
                cmocka_unit_test(test_lost_answer_is_not_resent),
                cmocka_unit_test(test_unsettled_write_waits_for_a_read),
        };
        json_hooks_install(); /* API responses through the scratch arena, as in the operator */
        return cmocka_run_group_tests(tests, setup, teardown);
}
