/* Data-path calls against real TLS etcd: a ~50 MB snapshot through the
 * gateway, verified and restored with etcdutl into a new single-member
 * cluster that serves the data back; truncated and corrupted snapshots
 * rejected before any restore; defragmentation shrinking dbSize after
 * deletes and compaction; and a NOSPACE alarm listed and disarmed after
 * compaction and defragmentation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/log.h"
#include "etcd-harness.h"
#include "etcd/snapshot.h"
#include "etcd/view.h"

#define VALUE_SIZE 10240

static Loop *loop;

static int load(EtcdClient *c, unsigned n)
{
        return etcd_test_load(loop, c, n, VALUE_SIZE);
}

static EtcdStatus status_of(EtcdClient *c, const char *url)
{
        EtcdTestResult r = {};
        EtcdStatus s = {};
        assert_int_equal(etcd_status(c, url, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        assert_int_equal(etcd_parse_status(r.body, &s), 0);
        etcd_test_result_done(&r);
        return s;
}

static int call(EtcdClient *c, const char *path, const char *body, EtcdTestResult *r)
{
        _cleanup_(cJSON_Deletep) cJSON *b = NULL;
        assert_int_equal(json_parse(body, strlen(body), &b), 0);
        *r = (EtcdTestResult){};
        assert_int_equal(etcd_call(c, NULL, path, b, 0, 60 * USEC_PER_SEC, etcd_test_result_cb, r), 0);
        assert_int_equal(etcd_test_wait(loop, r, 90 * USEC_PER_SEC), 0);
        return r->error;
}

typedef struct SnapDone {
        bool done;
        EtcdSnapshotResult res;
        uint64_t progress_calls;
} SnapDone;

static void on_snapshot(const EtcdSnapshotResult *res, void *userdata)
{
        SnapDone *d = userdata;
        d->done = true;
        d->res = *res;
        d->res.endpoint = NULL;
        d->res.message = NULL;
}

static void on_progress(uint64_t written, uint64_t total, void *userdata)
{
        SnapDone *d = userdata;
        d->progress_calls++;
        assert_true(written <= total + 32);
}

static int sh(const char *fmt, ...) _printf_(1, 2);
static int sh(const char *fmt, ...)
{
        va_list ap;
        _cleanup_free_ char *cmd = NULL;
        va_start(ap, fmt);
        assert_true(vasprintf(&cmd, fmt, ap) >= 0);
        va_end(ap);
        int r = system(cmd);
        return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static void copy_file(const char *from, const char *to, long truncate_to, long flip_at)
{
        assert_int_equal(sh("cp '%s' '%s'", from, to), 0);
        if (truncate_to >= 0)
                assert_int_equal(truncate(to, truncate_to), 0);
        if (flip_at >= 0) {
                FILE *f = fopen(to, "r+");
                assert_non_null(f);
                assert_int_equal(fseek(f, flip_at, SEEK_SET), 0);
                int ch = fgetc(f);
                assert_int_equal(fseek(f, flip_at, SEEK_SET), 0);
                assert_int_equal(fputc(ch ^ 0xff, f), ch ^ 0xff);
                assert_int_equal(fclose(f), 0);
        }
}

/* Runs a fresh etcd view until a snapshot lists `want` alarms (NOSPACE ones);
 * returns how many the last snapshot listed. */
static size_t view_alarms(EtcdTestCluster *c, size_t want)
{
        _cleanup_(etcd_view_freep) EtcdView *v = NULL;
        /* Its own client, freed first: that completes the view's requests while it exists. */
        _cleanup_(etcd_client_freep) EtcdClient *e = etcd_test_client(c, loop, 0x1);
        size_t n = SIZE_MAX;

        assert_non_null(e);
        v = etcd_view_new(e, 200 * USEC_PER_MSEC);
        assert_non_null(v);
        assert_int_equal(etcd_view_start(v), 0);
        for (int i = 0; i < 100; i++) {
                bool tick = false;
                (void) loop_run_until(loop, &tick, 100 * USEC_PER_MSEC);
                const EtcdViewSnapshot *s = etcd_view_get(v);
                if (!s || s->alarms_error < 0)
                        continue;
                n = s->n_alarms;
                if (n == want && (n == 0 || streq(s->alarms[0].alarm, "NOSPACE")))
                        break;
        }
        return n;
}

static void test_snapshot_restore(void **state)
{
        EtcdTestCluster c;
        SnapDone d = {};
        char snap[600], bad[600];

        assert_int_equal(etcd_test_cluster_init(&c, 2, NULL), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&c, 1), 0);
        _cleanup_(etcd_client_freep) EtcdClient *e = etcd_test_client(&c, loop, 0x1);
        /* ~50 MB of data. */
        assert_int_equal(load(e, 5000), 0);
        EtcdStatus st = status_of(e, c.members[0].client_url);
        printf("loaded: dbSize %llu bytes at revision %llu\n", (unsigned long long) st.db_size,
               (unsigned long long) st.revision);
        assert_true(st.db_size > 45u << 20);

        (void) snprintf(snap, sizeof snap, "%s/snap.db", c.dir);
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(etcd_snapshot_save(e, c.members[0].client_url, snap, ETCD_SNAPSHOT_GRPC, 0,
                                            on_progress, on_snapshot, &d),
                         0);
        assert_int_equal(loop_run_until(loop, &d.done, 120 * USEC_PER_SEC), 0);
        assert_int_equal(d.res.error, 0);
        printf("snapshot: %llu bytes in %llu chunks, %llu ms\n", (unsigned long long) d.res.db_size,
               (unsigned long long) d.res.chunks,
               (unsigned long long) ((now_usec(CLOCK_MONOTONIC) - t0) / 1000));
        assert_true(d.progress_calls > 0);
        uint64_t size = 0;
        assert_int_equal(etcd_snapshot_verify_file(snap, &size), 0);
        assert_int_equal(size, d.res.db_size);
        /* Never overwrite an existing file. */
        SnapDone d2 = {};
        assert_int_equal(etcd_snapshot_save(e, c.members[0].client_url, snap, ETCD_SNAPSHOT_GRPC, 0, NULL,
                                            on_snapshot, &d2),
                         -EEXIST);

        /* The gateway path gives the same snapshot. */
        char gw[600];
        SnapDone d3 = {};
        (void) snprintf(gw, sizeof gw, "%s/gateway.db", c.dir);
        assert_int_equal(etcd_snapshot_save(e, c.members[0].client_url, gw, ETCD_SNAPSHOT_GATEWAY, 0, NULL,
                                            on_snapshot, &d3),
                         0);
        assert_int_equal(loop_run_until(loop, &d3.done, 120 * USEC_PER_SEC), 0);
        assert_int_equal(d3.res.error, 0);
        /* The same database: etcd's own hash over every bucket, revision and key count agree
         * (etcd 3.5's bbolt writes each snapshot's transaction ID into its meta pages, so
         * two snapshots of one state differ in those bytes). */
        assert_int_equal(
                sh("a=$(etcdutl snapshot status '%s' -w json) && b=$(etcdutl snapshot status '%s' -w json) "
                   "&& [ \"$a\" = \"$b\" ] && echo \"$a\" | grep -q '\"totalKey\"'",
                   snap, gw),
                0);

        /* Truncated or corrupted copies are refused by our check before any restore. */
        (void) snprintf(bad, sizeof bad, "%s/truncated.db", c.dir);
        copy_file(snap, bad, (long) (size / 2), -1);
        assert_int_equal(etcd_snapshot_verify_file(bad, NULL), -EBADMSG);
        (void) snprintf(bad, sizeof bad, "%s/corrupt.db", c.dir);
        copy_file(snap, bad, -1, (long) (size / 3));
        assert_int_equal(etcd_snapshot_verify_file(bad, NULL), -EBADMSG);

        /* etcdutl (independent; etcd 3.6's etcdctl has no snapshot commands left) accepts ours
         * and restores it into a new one-member cluster. */
        EtcdTestMember *m = &c.members[1];
        assert_int_equal(sh("etcdutl snapshot status '%s' >/dev/null", snap), 0);
        assert_int_equal(
                sh("cd '%s' && etcdutl snapshot restore '%s' --name %s --data-dir '%s/data' "
                   "--initial-cluster %s=%s --initial-advertise-peer-urls %s --initial-cluster-token "
                   "restored "
                   ">/dev/null 2>&1",
                   c.dir, snap, m->name, m->dir, m->name, m->peer_url, m->peer_url),
                0);
        _cleanup_free_ char *ic = strdup_printf("%s=%s", m->name, m->peer_url);
        assert_int_equal(etcd_test_member_start(&c, 1, ic, false), 0);
        _cleanup_(etcd_client_freep) EtcdClient *re = etcd_test_client(&c, loop, 0x2);
        EtcdTestResult r = {};
        usec_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        for (;;) {
                assert_int_equal(
                        etcd_kv_range(re, NULL, "/load/004999", 12, NULL, 0, false, etcd_test_result_cb, &r),
                        0);
                assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
                if (r.error == 0)
                        break;
                etcd_test_result_done(&r);
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                (void) usleep(200000);
        }
        const char *v64 = json_get_string(cJSON_GetArrayItem(json_get_array(r.body, "kvs"), 0), "value");
        _cleanup_free_ char *v = NULL;
        size_t vn = 0;
        assert_non_null(v64);
        assert_int_equal(base64_decode(v64, &v, &vn), 0);
        assert_int_equal(vn, VALUE_SIZE);
        etcd_test_result_done(&r);
        /* The restored cluster is a new cluster with the same data. */
        EtcdStatus rst = status_of(re, m->client_url);
        assert_true(rst.cluster_id != st.cluster_id);
        assert_int_equal(rst.revision, st.revision);
        /* And etcdctl reads it too. */
        assert_int_equal(sh("ETCDCTL_API=3 etcdctl --endpoints=%s --cacert='%s' --cert='%s/serving.crt' "
                            "--key='%s/serving.key' get /load/000000 --keys-only | grep -q /load/000000",
                            m->client_url, c.ca_file, m->dir, m->dir),
                         0);
        etcd_status_done(&st);
        etcd_status_done(&rst);
        e = etcd_client_free(e);
        re = etcd_client_free(re);
        etcd_test_cluster_destroy(&c);
}

static void test_defrag_and_nospace(void **state)
{
        EtcdTestCluster c;
        EtcdTestResult r = {};

        /* A 16 MiB quota: NOSPACE after ~1,600 values of 10 KiB. */
        assert_int_equal(etcd_test_cluster_init(&c, 1, "--quota-backend-bytes=16777216"), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&c, 1), 0);
        _cleanup_(etcd_client_freep) EtcdClient *e = etcd_test_client(&c, loop, 0x1);
        const char *url = c.members[0].client_url;

        /* Create-if-absent through a txn: the first wins, the second reads the first's value. */
        assert_int_equal(etcd_kv_create(e, "/lock", 5, "first", 5, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        assert_true(json_get_bool(r.body, "succeeded", false));
        etcd_test_result_done(&r);
        assert_int_equal(etcd_kv_create(e, "/lock", 5, "second", 6, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        assert_false(json_get_bool(r.body, "succeeded", false)); /* absent when the compare failed */
        cJSON *kv =
                cJSON_GetArrayItem(json_get_array(cJSON_GetArrayItem(json_get_array(r.body, "responses"), 0),
                                                  "response_range.kvs"),
                                   0);
        assert_string_equal(json_get_string(kv, "value"), "Zmlyc3Q="); /* "first" */
        etcd_test_result_done(&r);

        assert_int_equal(load(e, 1000), 0);
        /* Defragmentation gives back the space of deleted, compacted keys. */
        assert_int_equal(
                call(e, "/v3/kv/deleterange", "{\"key\":\"L2xvYWQv\",\"range_end\":\"L2xvYWQw\"}", &r), 0);
        etcd_test_result_done(&r);
        EtcdStatus before = status_of(e, url);
        char body[128];
        (void) snprintf(body, sizeof body, "{\"revision\":\"%llu\",\"physical\":true}",
                        (unsigned long long) before.revision);
        assert_int_equal(call(e, "/v3/kv/compaction", body, &r), 0);
        etcd_test_result_done(&r);
        assert_int_equal(etcd_defragment(e, url, 0, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 120 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        etcd_test_result_done(&r);
        EtcdStatus after = status_of(e, url);
        printf("defragment: dbSize %llu -> %llu\n", (unsigned long long) before.db_size,
               (unsigned long long) after.db_size);
        assert_true(after.db_size < before.db_size / 2);

        /* Fill the quota: writes fail with NOSPACE and the alarm is listed. */
        int err = load(e, 3000);
        assert_int_equal(err, ETCD_ERR_NOSPACE);
        assert_int_equal(etcd_alarm_list(e, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        _cleanup_free_ EtcdAlarm *alarms = NULL;
        size_t n = 0;
        assert_int_equal(etcd_parse_alarms(r.body, &alarms, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(alarms[0].alarm, "NOSPACE");
        uint64_t member = alarms[0].member_id;
        etcd_test_result_done(&r);
        /* The view lists it too (fetched beside its rounds, carried into the next snapshot). */
        assert_true(view_alarms(&c, 1) == 1);
        assert_int_equal(etcd_health(e, url, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, -EAGAIN);
        etcd_test_result_done(&r);

        /* Recovery, in etcd's documented order: delete, compact, defragment, disarm. */
        assert_int_equal(
                call(e, "/v3/kv/deleterange", "{\"key\":\"L2xvYWQv\",\"range_end\":\"L2xvYWQw\"}", &r), 0);
        etcd_test_result_done(&r);
        EtcdStatus full = status_of(e, url);
        (void) snprintf(body, sizeof body, "{\"revision\":\"%llu\",\"physical\":true}",
                        (unsigned long long) full.revision);
        assert_int_equal(call(e, "/v3/kv/compaction", body, &r), 0);
        etcd_test_result_done(&r);
        assert_int_equal(etcd_defragment(e, url, 0, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 120 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        etcd_test_result_done(&r);
        /* Still refused until the alarm is disarmed. */
        assert_int_equal(etcd_kv_put(e, "k", 1, "v", 1, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, ETCD_ERR_NOSPACE);
        etcd_test_result_done(&r);
        assert_int_equal(etcd_alarm_disarm(e, member, "NOSPACE", etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        etcd_test_result_done(&r);
        assert_int_equal(etcd_kv_put(e, "k", 1, "v", 1, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        etcd_test_result_done(&r);
        assert_true(view_alarms(&c, 0) == 0);
        etcd_status_done(&before);
        etcd_status_done(&after);
        etcd_status_done(&full);
        e = etcd_client_free(e);
        etcd_test_cluster_destroy(&c);
}

static int setup(void **state)
{
        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        loop = loop_new();
        return loop ? 0 : -1;
}

static int teardown(void **state)
{
        assert_int_equal(loop_http_in_flight(loop), 0);
        loop = loop_unref(loop);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_snapshot_restore),
                cmocka_unit_test(test_defrag_and_nospace),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
