/* Defragmentation benchmark, on one 3-member TLS cluster in one run: the same
 * fragmented database (LIVE_MB in use, as much again freed) defragmented
 *  - by the operator's DefragController (followers first, leadership handed
 *    over before the leader's turn), in-process with its etcd view and
 *    runtime as in integration/test-defrag;
 *  - by `etcdctl defrag`, member by member in member-list order (what
 *    `--cluster` does: the leader in place).
 * Meanwhile three writers, one per member (as three kube-apiservers each on
 * its local member), put 1 KiB values one after the other. Printed: each
 * member's defragmentation time, and the writers' latency p50/p99/max and
 * count over the whole run of each method. Usage: defrag-bench [LIVE_MB] */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>

#include "../test/integration/etcd-harness.h"
#include "base/base64.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers/common.h"
#include "controllers/controllers.h"

static Loop *loop;
static EtcdTestCluster c;
static EtcdView *view;
static Runtime *rt;

/* ---- writers ---- */

#define MAX_SAMPLES 200000
typedef struct Writer {
        EtcdClient *client;
        unsigned index;
        unsigned n;
        bool running, in_flight;
        usec_t sent;
        char value[1024];
} Writer;
static Writer writers[3];
static usec_t samples[MAX_SAMPLES];
static size_t n_samples;
static unsigned write_errors;

static void write_next(Writer *w);

static void on_written(EtcdClient *e, const EtcdResponse *resp, void *userdata)
{
        Writer *w = userdata;
        (void) e;
        if (resp->error == -ECANCELED)
                return;
        w->in_flight = false;
        if (resp->error < 0)
                write_errors++;
        else if (n_samples < MAX_SAMPLES)
                samples[n_samples++] = now_usec(CLOCK_MONOTONIC) - w->sent;
        if (w->running)
                write_next(w);
}

static void write_next(Writer *w)
{
        char key[64];
        (void) snprintf(key, sizeof key, "/writer/%u/%u", w->index, w->n++ % 64);
        w->sent = now_usec(CLOCK_MONOTONIC);
        if (etcd_kv_put(w->client, key, strlen(key), w->value, sizeof w->value, on_written, w) == 0)
                w->in_flight = true;
}

static void writers_start(void)
{
        n_samples = 0;
        write_errors = 0;
        for (unsigned i = 0; i < 3; i++) {
                writers[i].running = true;
                write_next(&writers[i]);
        }
}

static void writers_stop(void)
{
        for (unsigned i = 0; i < 3; i++)
                writers[i].running = false;
        for (unsigned i = 0; i < 3; i++)
                while (writers[i].in_flight)
                        (void) sd_event_run(loop_get_event(loop), 10 * USEC_PER_MSEC);
}

static int cmp_usec(const void *a, const void *b)
{
        usec_t x = *(const usec_t *) a, y = *(const usec_t *) b;
        return x < y ? -1 : x > y;
}

static void report_writes(const char *what, usec_t took)
{
        qsort(samples, n_samples, sizeof *samples, cmp_usec);
        if (!n_samples) {
                printf("%-8s writes: none completed\n", what);
                return;
        }
        size_t p50 = (size_t) ceil(0.5 * (double) n_samples) - 1,
               p99 = (size_t) ceil(0.99 * (double) n_samples) - 1;
        printf("%-8s writes during the whole run (%.1f s): %zu done, %u failed, latency p50 %.1f ms, p99 "
               "%.1f "
               "ms, max %.1f ms\n",
               what, (double) took / 1e6, n_samples, write_errors, (double) samples[p50] / 1e3,
               (double) samples[p99] / 1e3, (double) samples[n_samples - 1] / 1e3);
}

static void run_for(usec_t d)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + d;
        while (now_usec(CLOCK_MONOTONIC) < end)
                (void) sd_event_run(loop_get_event(loop), 10 * USEC_PER_MSEC);
}

/* ---- setup ---- */

static int sync_call(int r, EtcdTestResult *res)
{
        if (r < 0)
                return r;
        r = etcd_test_wait(loop, res, 300 * USEC_PER_SEC);
        int e = r < 0 ? r : res->error;
        etcd_test_result_done(res);
        return e;
}

static void die(const char *what, int r)
{
        fprintf(stderr, "%s: %s\n", what, etcd_strerror(r));
        exit(1);
}

/* LIVE_MB in use and as much freed: write 2x, delete every other key, compact. */
static void fragment(EtcdClient *e, unsigned live_mb, unsigned round)
{
        char key[64], prefix[32];
        EtcdTestResult res = {};
        int r;

        /* Whatever an earlier round left goes first: the same data in use each round. */
        {
                _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
                _cleanup_free_ char *k = base64_encode("/frag", 5), *end = base64_encode("/frah", 5);
                (void) cJSON_AddStringToObject(b, "key", k);
                (void) cJSON_AddStringToObject(b, "range_end", end);
                if ((r = sync_call(
                             etcd_call(e, NULL, "/v3/kv/deleterange", b, 0, 0, etcd_test_result_cb, &res),
                             &res)) < 0)
                        die("delete", r);
        }
        (void) snprintf(prefix, sizeof prefix, "/frag%u/", round);
        _cleanup_free_ char *value = malloc(256 * 1024);
        for (size_t i = 0; i < 256 * 1024; i++)
                value[i] = (char) ('a' + (i * 7919 + i / 13 + round) % 26);
        for (unsigned i = 0; i < live_mb * 8; i++) {
                (void) snprintf(key, sizeof key, "%s%06u", prefix, i);
                if ((r = sync_call(
                             etcd_kv_put(e, key, strlen(key), value, 256 * 1024, etcd_test_result_cb, &res),
                             &res)) < 0)
                        die("put", r);
        }
        for (unsigned i = 0; i < live_mb * 8; i += 2) {
                (void) snprintf(key, sizeof key, "%s%06u", prefix, i);
                _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
                _cleanup_free_ char *k = base64_encode(key, strlen(key));
                (void) cJSON_AddStringToObject(b, "key", k);
                if ((r = sync_call(
                             etcd_call(e, NULL, "/v3/kv/deleterange", b, 0, 0, etcd_test_result_cb, &res),
                             &res)) < 0)
                        die("delete", r);
        }
        if ((r = etcd_status(e, c.members[0].client_url, etcd_test_result_cb, &res)) < 0 ||
            (r = etcd_test_wait(loop, &res, 30 * USEC_PER_SEC)) < 0)
                die("status", r);
        EtcdStatus st = {};
        if (etcd_parse_status(res.body, &st) < 0)
                die("status", -EBADMSG);
        etcd_test_result_done(&res);
        if ((r = sync_call(etcd_kv_compact(e, st.revision, true, etcd_test_result_cb, &res), &res)) < 0)
                die("compact", r);
        etcd_status_done(&st);
        /* bbolt counts freed pages at its next commits. */
        for (unsigned i = 0; i < 5; i++) {
                if ((r = sync_call(etcd_kv_put(e, "/tick", 5, "x", 1, etcd_test_result_cb, &res), &res)) < 0)
                        die("put", r);
                run_for(200 * USEC_PER_MSEC);
        }
}

static void print_sizes(EtcdClient *e, const char *when)
{
        for (size_t i = 0; i < c.n; i++) {
                EtcdTestResult res = {};
                EtcdStatus st = {};
                if (etcd_status(e, c.members[i].client_url, etcd_test_result_cb, &res) < 0 ||
                    etcd_test_wait(loop, &res, 30 * USEC_PER_SEC) < 0 ||
                    etcd_parse_status(res.body, &st) < 0)
                        die("status", -EIO);
                printf("  %s %s: db %.0f MiB, %.0f MiB in use%s\n", when, c.members[i].name,
                       (double) st.db_size / 1048576.0, (double) st.db_size_in_use / 1048576.0,
                       st.leader == st.member_id ? " (leader)" : "");
                etcd_status_done(&st);
                etcd_test_result_done(&res);
        }
}

/* ---- the operator's way ---- */

static void on_view(EtcdView *v, const EtcdViewSnapshot *snap, void *userdata)
{
        (void) v;
        (void) snap;
        (void) userdata;
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

static void by_operator(KubeClient *kube, EtcdClient *e)
{
        OperatorState op = {.maint = etcd_maint_log_new()};
        EtcdClient *oe = etcd_test_client(&c, loop, 0x7);
        view = etcd_view_new(oe, 300 * USEC_PER_MSEC);
        op.view = view;
        etcd_view_set_listener(view, on_view, NULL);
        InformerFactory *inf = informer_factory_new(kube);
        RuntimeConfig rc = {.status_res = &KUBE_ETCDS,
                            .status_name = "cluster",
                            .state = &op,
                            .etcd_snapshot = snapshot,
                            .etcd = oe,
                            .on_etcd_change = on_etcd_change,
                            .maint_log = op.maint,
                            .etcd_view_fresh = view_fresh};
        rt = runtime_new(kube, inf, NULL, &rc);
        if (!rt || runtime_add(rt, &controller_defrag) < 0)
                die("runtime", -ENOMEM);
        writers_start();
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        if (etcd_view_start(view) < 0 || informer_factory_start(inf) < 0 || runtime_start(rt) < 0)
                die("start", -EIO);
        for (;;) {
                size_t done = 0;
                for (size_t i = 0; i < etcd_maint_log_size(op.maint); i++)
                        done += etcd_maint_log_at(op.maint, i)->kind == ETCD_MAINT_DEFRAG &&
                                etcd_maint_log_at(op.maint, i)->error == 0;
                if (done >= 3)
                        break;
                if (now_usec(CLOCK_MONOTONIC) - t0 > 600 * USEC_PER_SEC)
                        die("the controller did not defragment every member in 10 min", -ETIMEDOUT);
                (void) sd_event_run(loop_get_event(loop), 10 * USEC_PER_MSEC);
        }
        usec_t took = now_usec(CLOCK_MONOTONIC) - t0;
        writers_stop();
        for (size_t i = 0; i < etcd_maint_log_size(op.maint); i++) {
                const EtcdMaintRecord *r = etcd_maint_log_at(op.maint, i);
                const EtcdMemberState *m = etcd_view_find(etcd_view_get(view), r->member_id);
                printf("  operator %s %s: %.2f s%s\n", etcd_maint_kind_to_string(r->kind),
                       m && m->name ? m->name : "?", (double) (r->finished - r->started) / 1e6,
                       r->error < 0 ? " (failed)" : "");
        }
        report_writes("operator", took);
        rt = runtime_free(rt);
        informer_factory_free(inf);
        etcd_client_free(oe);
        view = etcd_view_free(view);
        etcd_maint_log_free(op.maint);
        (void) e;
}

/* ---- etcdctl's way ---- */

static bool quiet;

static void etcdctl_each(void)
{
        for (size_t i = 0; i < c.n; i++) {
                char ep[128], ca[600], cert[600], key[600];
                (void) snprintf(ep, sizeof ep, "--endpoints=%s", c.members[i].client_url);
                (void) snprintf(ca, sizeof ca, "--cacert=%s", c.ca_file);
                (void) snprintf(cert, sizeof cert, "--cert=%s/serving.crt", c.members[i].dir);
                (void) snprintf(key, sizeof key, "--key=%s/serving.key", c.members[i].dir);
                char *argv[] = {"etcdctl", ep, ca, cert, key, "--command-timeout=300s", "defrag", NULL};
                usec_t s = now_usec(CLOCK_MONOTONIC);
                pid_t pid = fork();
                if (pid == 0) {
                        (void) setenv("ETCDCTL_API", "3", 1);
                        int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
                        (void) dup2(fd, STDOUT_FILENO);
                        execvp("etcdctl", argv);
                        _exit(127);
                }
                int status = 0;
                while (waitpid(pid, &status, WNOHANG) == 0)
                        (void) sd_event_run(loop_get_event(loop), 10 * USEC_PER_MSEC);
                if (!quiet)
                        printf("  etcdctl defragment %s: %.2f s%s\n", c.members[i].name,
                               (double) (now_usec(CLOCK_MONOTONIC) - s) / 1e6, status ? " (failed)" : "");
        }
}

static void by_etcdctl_quiet(void)
{
        quiet = true;
        etcdctl_each();
        quiet = false;
}

static void by_etcdctl(void)
{
        writers_start();
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        etcdctl_each();
        usec_t took = now_usec(CLOCK_MONOTONIC) - t0;
        writers_stop();
        report_writes("etcdctl", took);
}

typedef struct Created {
        bool done;
        int error;
} Created;

static void on_created(KubeClient *k, const KubeResponse *resp, void *userdata)
{
        Created *r = userdata;
        (void) k;
        r->done = true;
        r->error = resp->error;
}

/* What the DefragController needs in the API, as test-defrag creates it: the namespace of
 * its Events and the Etcd "cluster" whose status it writes (kube-apiserver starts without them). */
static void create_object(KubeClient *kube, const KubeResource *res, const char *text)
{
        cJSON *obj = NULL;
        Created r = {};
        if (json_parse(text, strlen(text), &obj) < 0 ||
            kube_create(kube, res, NULL, obj, on_created, &r) < 0)
                die("create", -EINVAL);
        cJSON_Delete(obj);
        if (loop_run_until(loop, &r.done, 30 * USEC_PER_SEC) < 0 || (r.error < 0 && r.error != -EEXIST))
                die("create", r.error < 0 ? r.error : -ETIMEDOUT);
}

int main(int argc, char *argv[])
{
        unsigned live_mb = argc > 1 ? (unsigned) atoi(argv[1]) : 200;
        _cleanup_free_ char *err = NULL;
        KubeConfig *cfg = NULL;

        loop = loop_new();
        if (kube_config_load(NULL, NULL, &cfg, &err) < 0) {
                fprintf(stderr, "KUBECONFIG: %s (run through bench/defrag-bench.sh)\n", err);
                return 1;
        }
        KubeClient *kube = kube_client_new(loop, cfg);
        create_object(kube, &KUBE_NAMESPACES,
                      "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"openshift-"
                      "etcd-operator\"}}");
        create_object(
                kube, &KUBE_ETCDS,
                "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"Etcd\",\"metadata\":{\"name\":"
                "\"cluster\"},\"spec\":{\"managementState\":\"Managed\"}}");
        if (etcd_test_cluster_init(&c, 3, "--quota-backend-bytes=8589934592") < 0 ||
            etcd_test_cluster_bootstrap(&c, 3) < 0) {
                fprintf(stderr, "cannot start the etcd cluster\n");
                return 1;
        }
        EtcdClient *e = etcd_test_client(&c, loop, 0x7);
        etcd_client_set_timeout(e, 300 * USEC_PER_SEC);
        for (unsigned i = 0; i < 3; i++) {
                writers[i].client = etcd_test_client(&c, loop, 1u << i);
                etcd_client_set_timeout(writers[i].client, 300 * USEC_PER_SEC);
                writers[i].index = i;
                memset(writers[i].value, 'w', sizeof writers[i].value);
        }
        printf("defrag-bench: %u MiB in use and as much freed, 3 members, 3 writers (1 KiB puts, one per "
               "member)\n",
               live_mb);

        /* A first round, unmeasured, so both measured rounds start from a defragmented file. */
        fragment(e, live_mb, 0);
        writers_start();
        by_etcdctl_quiet();
        writers_stop();

        fragment(e, live_mb, 1);
        print_sizes(e, "before");
        by_operator(kube, e);
        print_sizes(e, "after ");

        fragment(e, live_mb, 2);
        print_sizes(e, "before");
        by_etcdctl();
        print_sizes(e, "after ");

        for (unsigned i = 0; i < 3; i++)
                etcd_client_free(writers[i].client);
        etcd_client_free(e);
        kube_client_free(kube);
        etcd_test_cluster_destroy(&c);
        loop_unref(loop);
        return 0;
}
