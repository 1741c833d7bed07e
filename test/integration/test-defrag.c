/* DefragController end to end on real etcd: a three-member TLS cluster from
 * the harness, the operator's own etcd view, runtime and maintenance log,
 * and kube-apiserver (run by with-kube.sh) for etcds/cluster.
 *
 * test_fragmented_200mb: 200 MiB written, deleted and compacted; the
 * controller defragments each member exactly once, never the leader while it
 * leads, with the leader killed (SIGKILL) and restarted after the first
 * member; sizes before and after are printed and checked.
 *
 * test_nospace: a 40 MB backend quota filled by rewriting a few keys (a
 * history that outgrows the quota, as an apiserver without compaction makes);
 * writes are refused with NOSPACE, the controller compacts, defragments each
 * member and disarms, NoSpaceDegraded goes True then False, and writes
 * succeed again without a human.
 *
 * test_liveness_during_defrag: a member with 350 MiB in use defragments for
 * seconds, answering no read meanwhile; the readyz sidecar's /readyz says
 * not ready, and its /healthz (the etcd container's liveness probe) stays
 * 200 throughout, so the kubelet would not restart it mid-defragmentation. */
#include <libgen.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers/common.h"
#include "controllers/controllers.h"
#include "etcd-harness.h"
#include "runtime/conditions.h"

static Loop *loop;
static KubeClient *client;
static InformerFactory *informers;
static Runtime *rt;
static EventRecorder *recorder;
static EtcdClient *etcd, *probe;
static EtcdView *view;
static OperatorState op;
static EtcdTestCluster cluster;
static uint64_t view_digest;
static bool view_seen;

/* The leader each snapshot showed, when it arrived (CLOCK_REALTIME). */
typedef struct LeaderSample {
        usec_t at;
        uint64_t leader;
} LeaderSample;
static LeaderSample samples[4096];
static size_t n_samples;

static void on_view(EtcdView *v, const EtcdViewSnapshot *snap, void *userdata)
{
        (void) v;
        (void) userdata;
        if (snap->leader && n_samples < ELEMENTSOF(samples))
                samples[n_samples++] = (LeaderSample){now_usec(CLOCK_REALTIME), snap->leader};
        uint64_t d = etcd_view_digest(snap);
        if (view_seen && d == view_digest)
                return;
        view_seen = true;
        view_digest = d;
        runtime_kick_etcd_readers(rt);
}

static void on_etcd_change(void *userdata)
{
        (void) userdata;
        etcd_view_refresh(view);
}

static const EtcdViewSnapshot *snapshot(void *userdata)
{
        (void) userdata;
        return etcd_view_get(view);
}

static bool view_fresh(void *userdata, usec_t since)
{
        const EtcdViewSnapshot *s = etcd_view_get(view);
        (void) userdata;
        return s && s->error >= 0 && s->started_at > since;
}

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

static void run_for(usec_t d)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + d;
        while (now_usec(CLOCK_MONOTONIC) < end)
                assert_true(sd_event_run(loop_get_event(loop), 10 * USEC_PER_MSEC) >= 0);
}

/* How many events with this reason the operator recorded (count included). */
static unsigned events(const char *reason)
{
        Result r = {};
        unsigned n = 0;
        cJSON *e;
        assert_int_equal(kube_list(client, &KUBE_EVENTS, "openshift-etcd-operator", NULL, on_result, &r), 0);
        assert_int_equal(loop_run_until(loop, &r.done, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        JSON_ARRAY_FOREACH (e, json_get_array(r.body, "items")) {
                int64_t c = 1;
                if (!streq_ptr(json_get_string(e, "reason"), reason))
                        continue;
                (void) json_get_int64(e, "count", &c);
                n += (unsigned) c;
        }
        cJSON_Delete(r.body);
        return n;
}

/* The status of condition `type` on etcds/cluster ("" when absent). */
static char *condition(const char *type)
{
        Result r = {};
        assert_int_equal(kube_get(client, &KUBE_ETCDS, NULL, "cluster", on_result, &r), 0);
        assert_int_equal(loop_run_until(loop, &r.done, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        cJSON *c = conditions_find(json_get(r.body, "status.conditions"), type);
        char *s = strdup(c ? strempty(json_get_string(c, "status")) : "");
        cJSON_Delete(r.body);
        return s;
}

static int etcd_sync(int r, EtcdTestResult *res)
{
        if (r < 0)
                return r;
        r = etcd_test_wait(loop, res, 60 * USEC_PER_SEC);
        return r < 0 ? r : res->error;
}

static EtcdStatus member_status(size_t i)
{
        EtcdTestResult r = {};
        EtcdStatus st = {};
        assert_int_equal(
                etcd_sync(etcd_status(probe, cluster.members[i].client_url, etcd_test_result_cb, &r), &r),
                0);
        assert_int_equal(etcd_parse_status(r.body, &st), 0);
        etcd_test_result_done(&r);
        return st;
}

static size_t member_index(uint64_t id)
{
        for (size_t i = 0; i < cluster.n; i++) {
                EtcdStatus st = member_status(i);
                uint64_t mid = st.member_id;
                etcd_status_done(&st);
                if (mid == id)
                        return i;
        }
        fail_msg("no member %llx", (unsigned long long) id);
        return 0;
}

static void start(const char *extra)
{
        assert_int_equal(etcd_test_cluster_init(&cluster, 3, extra), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&cluster, 3), 0);
        etcd = etcd_test_client(&cluster, loop, 0x7);
        probe = etcd_test_client(&cluster, loop, 0x7);
        assert_non_null(etcd);
        assert_non_null(probe);
        etcd_client_set_timeout(probe, 60 * USEC_PER_SEC);
        view = etcd_view_new(etcd, 300 * USEC_PER_MSEC);
        assert_non_null(view);
        etcd_view_set_listener(view, on_view, NULL);
        op = (OperatorState){.view = view, .maint = etcd_maint_log_new()};
        assert_non_null(op.maint);
        n_samples = 0;
        view_seen = false;

        informers = informer_factory_new(client);
        RuntimeConfig rc = {.status_res = &KUBE_ETCDS,
                            .status_name = "cluster",
                            .state = &op,
                            .etcd_snapshot = snapshot,
                            .etcd = etcd,
                            .on_etcd_change = on_etcd_change,
                            .maint_log = op.maint,
                            .etcd_view_fresh = view_fresh};
        EventSource src = {.component = "openshift-cluster-etcd-operator",
                           .api_version = "apps/v1",
                           .kind = "Deployment",
                           .namespace = "openshift-etcd-operator",
                           .name = "etcd-operator"};
        recorder = event_recorder_new(client, &src);
        assert_non_null(recorder);
        rt = runtime_new(client, informers, recorder, &rc);
        assert_non_null(rt);
        assert_int_equal(runtime_add(rt, &controller_defrag), 0);
}

static void go(void)
{
        assert_int_equal(etcd_view_start(view), 0);
        assert_int_equal(informer_factory_start(informers), 0);
        assert_int_equal(runtime_start(rt), 0);
}

static void stop(void)
{
        rt = runtime_free(rt);
        recorder = event_recorder_free(recorder);
        informers = informer_factory_free(informers);
        probe = etcd_client_free(probe);
        etcd = etcd_client_free(etcd);
        view = etcd_view_free(view);
        op.maint = etcd_maint_log_free(op.maint);
        etcd_test_cluster_destroy(&cluster);
}

static size_t count(EtcdMaintKind kind, uint64_t id, bool ok_only)
{
        size_t n = 0;
        for (size_t i = 0; i < etcd_maint_log_size(op.maint); i++) {
                const EtcdMaintRecord *r = etcd_maint_log_at(op.maint, i);
                n += r->kind == kind && (!id || r->member_id == id) && (!ok_only || r->error == 0);
        }
        return n;
}

/* Runs the loop until `n` members were defragmented (each once), or fails. */
static void wait_defragmented(size_t n, usec_t timeout)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + timeout;
        while (count(ETCD_MAINT_DEFRAG, 0, true) < n) {
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                run_for(100 * USEC_PER_MSEC);
        }
}

static int delete_prefix(const char *prefix)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        _cleanup_free_ char *end = strdup(prefix);
        EtcdTestResult r = {};
        end[strlen(end) - 1]++;
        _cleanup_free_ char *k = base64_encode(prefix, strlen(prefix)), *e = base64_encode(end, strlen(end));
        assert_non_null(cJSON_AddStringToObject(b, "key", k));
        assert_non_null(cJSON_AddStringToObject(b, "range_end", e));
        int x = etcd_sync(etcd_call(probe, NULL, "/v3/kv/deleterange", b, 0, 0, etcd_test_result_cb, &r),
                          &r);
        etcd_test_result_done(&r);
        return x;
}

static int put(const char *key, const char *value, size_t n)
{
        EtcdTestResult r = {};
        int e = etcd_sync(etcd_kv_put(probe, key, strlen(key), value, n, etcd_test_result_cb, &r), &r);
        etcd_test_result_done(&r);
        return e;
}

static void test_fragmented_200mb(void **state)
{
        EtcdStatus before[3], after[3];
        EtcdTestResult r = {};

        (void) state;
        start(NULL);
        /* 200 MiB of values, then gone and compacted away: the files keep their size. */
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(etcd_test_load(loop, probe, 200, 1024 * 1024), 0);
        assert_int_equal(delete_prefix("/load/"), 0);
        EtcdStatus s0 = member_status(0);
        assert_int_equal(etcd_sync(etcd_kv_compact(probe, s0.revision, true, etcd_test_result_cb, &r), &r),
                         0);
        etcd_test_result_done(&r);
        etcd_status_done(&s0);
        /* bbolt counts the freed pages at its next commit: a few writes, as a live cluster makes. */
        for (unsigned i = 0; i < 5; i++) {
                assert_int_equal(put("/tick", "x", 1), 0);
                run_for(200 * USEC_PER_MSEC);
        }
        (void) fprintf(stderr, "filled, deleted and compacted 200 MiB in %.1f s\n",
                       (double) (now_usec(CLOCK_MONOTONIC) - t0) / USEC_PER_SEC);
        for (size_t i = 0; i < 3; i++) {
                before[i] = member_status(i);
                (void) fprintf(stderr, "before: %s db %.1f MiB, in use %.1f MiB\n", cluster.members[i].name,
                               (double) before[i].db_size / 1048576.0,
                               (double) before[i].db_size_in_use / 1048576.0);
                assert_true(before[i].db_size >= 200ULL * 1024 * 1024);
        }

        go();
        /* The first member done is a follower; then the leader dies and comes back. */
        wait_defragmented(1, 120 * USEC_PER_SEC);
        const EtcdViewSnapshot *s = etcd_view_get(view);
        assert_non_null(s);
        uint64_t leader = s->leader;
        size_t li = member_index(leader);
        assert_int_not_equal(etcd_maint_log_last(op.maint, ETCD_MAINT_DEFRAG, 0, true)->member_id, leader);
        (void) fprintf(stderr, "killing the leader %s mid-run\n", cluster.members[li].name);
        assert_int_equal(etcd_test_member_kill(&cluster, li, SIGKILL), 0);
        run_for(3 * USEC_PER_SEC);
        _cleanup_free_ char *ic = etcd_test_initial_cluster(&cluster, 0x7);
        assert_int_equal(etcd_test_member_start(&cluster, li, ic, true), 0);

        wait_defragmented(3, 180 * USEC_PER_SEC);
        run_for(3 * USEC_PER_SEC); /* no loop: nothing more to do */
        for (size_t i = 0; i < 3; i++) {
                after[i] = member_status(i);
                (void) fprintf(stderr, "after: %s db %.1f MiB, in use %.1f MiB\n", cluster.members[i].name,
                               (double) after[i].db_size / 1048576.0,
                               (double) after[i].db_size_in_use / 1048576.0);
                assert_true(after[i].db_size * 4 < before[i].db_size);
                /* Each member exactly once, none failed. */
                assert_int_equal(count(ETCD_MAINT_DEFRAG, after[i].member_id, false), 1);
        }
        /* No member was defragmented while the last view before it named it leader. */
        for (size_t k = 0; k < etcd_maint_log_size(op.maint); k++) {
                const EtcdMaintRecord *rec = etcd_maint_log_at(op.maint, k);
                uint64_t last_leader = 0;
                if (rec->kind != ETCD_MAINT_DEFRAG)
                        continue;
                for (size_t j = 0; j < n_samples && samples[j].at <= rec->started; j++)
                        last_leader = samples[j].leader;
                (void) fprintf(stderr, "defragmented %016llx in %.1f s (leader before: %016llx)\n",
                               (unsigned long long) rec->member_id,
                               (double) (rec->finished - rec->started) / USEC_PER_SEC,
                               (unsigned long long) last_leader);
                assert_int_not_equal(rec->member_id, last_leader);
        }
        _cleanup_free_ char *degraded = condition("DefragControllerDegraded");
        _cleanup_free_ char *disabled = condition("DefragControllerDisabled");
        assert_string_equal(degraded, "False");
        assert_string_equal(disabled, "False");
        for (size_t i = 0; i < 3; i++) {
                etcd_status_done(&before[i]);
                etcd_status_done(&after[i]);
        }
        stop();
}

static bool nospace_alarm(void)
{
        EtcdTestResult r = {};
        _cleanup_free_ EtcdAlarm *a = NULL;
        size_t n = 0;
        assert_int_equal(etcd_sync(etcd_alarm_list(probe, etcd_test_result_cb, &r), &r), 0);
        assert_int_equal(etcd_parse_alarms(r.body, &a, &n), 0);
        etcd_test_result_done(&r);
        return n > 0;
}

static void test_nospace(void **state)
{
        const size_t size = 1024 * 1024;
        _cleanup_free_ char *value = malloc(size);
        int e = 0;

        (void) state;
        assert_non_null(value);
        for (size_t i = 0; i < size; i++)
                value[i] = (char) ('a' + (i * 7919 + i / 13) % 26);
        start("--quota-backend-bytes=41943040");
        /* Four keys rewritten until etcd refuses: the history fills the quota. */
        unsigned n = 0;
        for (; n < 200 && e == 0; n++) {
                char key[32];
                (void) snprintf(key, sizeof key, "/churn/%u", n % 4);
                value[0] = (char) ('a' + n % 26);
                e = put(key, value, size);
        }
        (void) fprintf(stderr, "NOSPACE after %u writes of 1 MiB: %s\n", n, etcd_strerror(e));
        assert_int_equal(e, ETCD_ERR_NOSPACE);
        assert_true(nospace_alarm());

        go();
        bool seen_degraded = false;
        usec_t end = now_usec(CLOCK_MONOTONIC) + 120 * USEC_PER_SEC;
        while (nospace_alarm()) {
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                run_for(500 * USEC_PER_MSEC);
                _cleanup_free_ char *c = condition("NoSpaceDegraded");
                seen_degraded |= streq(c, "True");
        }
        /* Compacted, every member defragmented after it, then disarmed. */
        const EtcdMaintRecord *compact = etcd_maint_log_last(op.maint, ETCD_MAINT_COMPACT, 0, true);
        assert_non_null(compact);
        assert_int_equal(count(ETCD_MAINT_DEFRAG, 0, true), 3);
        for (size_t k = 0; k < etcd_maint_log_size(op.maint); k++) {
                const EtcdMaintRecord *rec = etcd_maint_log_at(op.maint, k);
                if (rec->kind == ETCD_MAINT_DEFRAG)
                        assert_true(rec->started >= compact->finished);
        }
        assert_true(count(ETCD_MAINT_DISARM, 0, true) >= 1);
        assert_int_equal(put("/after", "ok", 2), 0);
        /* It was said as it happened, and the condition clears. */
        run_for(2 * USEC_PER_SEC); /* events are written off the loop's critical path */
        assert_true(events("NoSpaceAlarm") >= 1);
        assert_true(events("EtcdCompacted") >= 1);
        assert_true(events("DefragControllerDefragmentSuccess") >= 3);
        assert_true(events("EtcdAlarmDisarmed") >= 1);
        end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        for (;;) {
                _cleanup_free_ char *c = condition("NoSpaceDegraded");
                seen_degraded |= streq(c, "True");
                if (streq(c, "False"))
                        break;
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                run_for(300 * USEC_PER_MSEC);
        }
        (void) fprintf(stderr, "NoSpaceDegraded=True %s by the test's polls\n",
                       seen_degraded ? "seen" : "not seen (too quick)");
        stop();
}

/* ---- the readyz sidecar while its member defragments ---- */

static pid_t spawn_readyz(const char *addr, unsigned port)
{
        char self[4096], bin[4096], target[128], cert[600], key[600], ca[600], la[64], lp[32];
        const char *env = getenv("CEO_BIN");
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        assert_true(n > 0);
        self[n] = 0;
        (void) snprintf(bin, sizeof bin, "%s", env ? env : "");
        if (!env)
                (void) snprintf(bin, sizeof bin, "%s/../../cluster-etcd-operator", dirname(self));
        (void) snprintf(target, sizeof target, "--target=%s", cluster.members[0].client_url);
        (void) snprintf(ca, sizeof ca, "--cacert=%s", cluster.ca_file);
        (void) snprintf(cert, sizeof cert, "--cert=%s/peer.crt", cluster.members[0].dir);
        (void) snprintf(key, sizeof key, "--key=%s/peer.key", cluster.members[0].dir);
        (void) snprintf(la, sizeof la, "--listen-address=%s", addr);
        (void) snprintf(lp, sizeof lp, "--listen-port=%u", port);
        char *argv[] = {bin, "readyz", target, ca, cert, key, la, lp, "--interval=200ms", "--timeout=500ms",
                        NULL};
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                execv(bin, argv);
                _exit(127);
        }
        return pid;
}

static void on_defrag_done(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        EtcdTestResult *r = userdata;
        etcd_test_result_cb(c, resp, r);
}

static void test_liveness_during_defrag(void **state)
{
        EtcdTestResult r = {};
        char addr[32], url[128], hurl[128], body[1024];

        (void) state;
        assert_int_equal(etcd_test_cluster_init(&cluster, 1, NULL), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&cluster, 1), 0);
        probe = etcd_test_client(&cluster, loop, 0x1);
        assert_non_null(probe);
        etcd_client_set_timeout(probe, 120 * USEC_PER_SEC);
        /* Live data: defragmentation copies it all, and blocks the member meanwhile. */
        assert_int_equal(etcd_test_load(loop, probe, 350, 1024 * 1024), 0);

        const EtcdTestMember *m = &cluster.members[0];
        (void) snprintf(addr, sizeof addr, "%.*s.250", (int) (strrchr(m->ip, '.') - m->ip), m->ip);
        unsigned port = m->client_port + 9;
        (void) snprintf(url, sizeof url, "http://%s:%u/readyz", addr, port);
        (void) snprintf(hurl, sizeof hurl, "http://%s:%u/healthz", addr, port);
        pid_t pid = spawn_readyz(addr, port);
        usec_t end = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        while (etcd_test_http_get(loop, url, NULL, 0) != 200) {
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                run_for(100 * USEC_PER_MSEC);
        }

        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(etcd_defragment(probe, m->client_url, 120 * USEC_PER_SEC, on_defrag_done, &r), 0);
        unsigned not_ready = 0, polls = 0;
        while (!r.done) {
                long ready = etcd_test_http_get(loop, url, NULL, 0);
                long live = etcd_test_http_get(loop, hurl, body, sizeof body);
                polls++;
                not_ready += ready == 503;
                if (live != 200)
                        fail_msg("/healthz said %ld during the defragmentation: %s", live, body);
                run_for(100 * USEC_PER_MSEC);
        }
        (void) fprintf(stderr,
                       "defragmented 350 MiB in use in %.1f s: /readyz 503 in %u of %u polls, "
                       "/healthz 200 in all\n",
                       (double) (now_usec(CLOCK_MONOTONIC) - t0) / USEC_PER_SEC, not_ready, polls);
        assert_int_equal(r.error, 0);
        etcd_test_result_done(&r);
        /* The test means something only if the member was seen busy. */
        assert_true(not_ready > 0);

        /* A dead member is not alive: /healthz is no constant 200. */
        assert_int_equal(etcd_test_member_kill(&cluster, 0, SIGKILL), 0);
        end = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        while (etcd_test_http_get(loop, hurl, NULL, 0) != 503) {
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                run_for(100 * USEC_PER_MSEC);
        }
        (void) kill(pid, SIGTERM);
        (void) waitpid(pid, NULL, 0);
        probe = etcd_client_free(probe);
        etcd_test_cluster_destroy(&cluster);
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
                (void) fprintf(stderr, "KUBECONFIG: %s (run through test/integration/with-kube.sh)\n", err);
                return -1;
        }
        loop = loop_new();
        client = kube_client_new(loop, cfg);
        if (!loop || !client)
                return -1;
        cJSON *obj = NULL;
        static const char ns[] = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                                 "\"metadata\":{\"name\":\"openshift-etcd-operator\"}}";
        assert_int_equal(json_parse(ns, strlen(ns), &obj), 0);
        assert_int_equal(kube_create(client, &KUBE_NAMESPACES, NULL, obj, on_result, &r), 0);
        cJSON_Delete(obj);
        assert_int_equal(loop_run_until(loop, &r.done, 30 * USEC_PER_SEC), 0);
        cJSON_Delete(r.body);
        if (r.error < 0 && r.error != -EEXIST)
                return -1;
        r = (Result){};
        static const char body[] =
                "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"Etcd\","
                "\"metadata\":{\"name\":\"cluster\"},\"spec\":{\"managementState\":\"Managed\"}}";
        assert_int_equal(json_parse(body, strlen(body), &obj), 0);
        assert_int_equal(kube_create(client, &KUBE_ETCDS, NULL, obj, on_result, &r), 0);
        cJSON_Delete(obj);
        assert_int_equal(loop_run_until(loop, &r.done, 30 * USEC_PER_SEC), 0);
        cJSON_Delete(r.body);
        return r.error < 0 && r.error != -EEXIST ? -1 : 0;
}

static int teardown(void **state)
{
        (void) state;
        stop();
        client = kube_client_free(client);
        loop = loop_unref(loop);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_nospace),
                cmocka_unit_test(test_fragmented_200mb),
                cmocka_unit_test(test_liveness_during_defrag),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
