/* etcd client benchmark, on one 3-member TLS cluster in one run:
 *  - snapshot save throughput of a ~200 MB database, ours (gateway) against
 *    `etcdctl snapshot save` (gRPC);
 *  - member list and status: our per-call latency on a reused connection,
 *    and whole-command times of `etcdctl member list` / `endpoint status`;
 *  - certificates issued per second, RSA 2048 against ECDSA P-256.
 * Prints the figures and the ratios. Usage: etcd-bench [DB_MB] */
#include <math.h>
#include <sys/stat.h>

#include "../test/integration/etcd-harness.h"
#include "base/log.h"
#include "etcd/snapshot.h"

static Loop *loop;

static double secs(usec_t u)
{
        return (double) u / 1e6;
}

static int cmp_usec(const void *a, const void *b)
{
        usec_t x = *(const usec_t *) a, y = *(const usec_t *) b;
        return x < y ? -1 : x > y;
}

static usec_t pct(usec_t *v, size_t n, double p)
{
        qsort(v, n, sizeof *v, cmp_usec);
        size_t i = (size_t) ceil(p * (double) n) - 1;
        return v[MIN(i, n - 1)];
}

typedef struct Snap {
        bool done;
        int error;
        uint64_t size;
} Snap;

static void on_snap(const EtcdSnapshotResult *res, void *userdata)
{
        Snap *s = userdata;
        s->done = true;
        s->error = res->error;
        s->size = res->db_size;
}

static usec_t run_cmd(const char *cmd)
{
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        int r = system(cmd);
        if (r != 0) {
                fprintf(stderr, "command failed (%d): %s\n", r, cmd);
                exit(1);
        }
        return now_usec(CLOCK_MONOTONIC) - t0;
}

static void latency(EtcdClient *e, const char *what, int (*call)(EtcdClient *, const char *),
                    const char *url, const char *etcdctl_cmd)
{
        enum { N = 300, M = 10 };
        usec_t ours[N], theirs[M];

        for (size_t i = 0; i < N; i++) {
                usec_t t0 = now_usec(CLOCK_MONOTONIC);
                if (call(e, url) < 0) {
                        fprintf(stderr, "%s failed\n", what);
                        exit(1);
                }
                ours[i] = now_usec(CLOCK_MONOTONIC) - t0;
        }
        for (size_t i = 0; i < M; i++)
                theirs[i] = run_cmd(etcdctl_cmd);
        usec_t o50 = pct(ours, N, 0.5), o99 = pct(ours, N, 0.99), t50 = pct(theirs, M, 0.5);
        printf("%-12s ours per call (reused connection): p50 %.2f ms p99 %.2f ms | etcdctl whole command: "
               "p50 %.1f ms "
               "| ratio etcdctl/ours p50 %.0fx\n",
               what, (double) o50 / 1000, (double) o99 / 1000, (double) t50 / 1000,
               (double) t50 / (double) o50);
}

static int sync_call(EtcdClient *e, const char *url, bool status)
{
        EtcdTestResult r = {};
        int k = status ? etcd_status(e, url, etcd_test_result_cb, &r)
                       : etcd_member_list(e, etcd_test_result_cb, &r);
        if (k < 0)
                return k;
        k = etcd_test_wait(loop, &r, 10 * USEC_PER_SEC);
        int err = k < 0 ? k : r.error;
        etcd_test_result_done(&r);
        return err;
}

static int call_list(EtcdClient *e, const char *url)
{
        return sync_call(e, url, false);
}

static int call_status(EtcdClient *e, const char *url)
{
        return sync_call(e, url, true);
}

static void certs_per_second(const PkiPair *ca, PkiKeyType type, unsigned n, double *ret)
{
        const char *ips[] = {"10.0.0.1", "127.0.0.1", NULL};
        const char *dns[] = {"localhost", "etcd.openshift-etcd.svc", NULL};
        usec_t now = now_usec(CLOCK_REALTIME), t0 = now_usec(CLOCK_MONOTONIC);
        for (unsigned i = 0; i < n; i++) {
                PkiPair *p = NULL;
                PkiCertRequest req = {.profile = PKI_PROFILE_SERVER_CLIENT,
                                      .cn = "system:etcd-peer:master-0",
                                      .dns = dns,
                                      .ips = ips,
                                      .validity = PKI_LEAF_VALIDITY,
                                      .key_type = type};
                if (pki_cert_issue(ca, &req, now, &p) < 0)
                        exit(1);
                pki_pair_free(p);
        }
        *ret = n / secs(now_usec(CLOCK_MONOTONIC) - t0);
}

int main(int argc, char *argv[])
{
        unsigned db_mb = argc > 1 ? (unsigned) atoi(argv[1]) : 200;
        EtcdTestCluster c;
        char cmd[4096], tls[2048], ours[600], theirs[600];
        Snap s = {};

        loop = loop_new();
        if (etcd_test_cluster_init(&c, 3, "--quota-backend-bytes=4294967296") < 0 ||
            etcd_test_cluster_bootstrap(&c, 3) < 0) {
                fprintf(stderr, "cannot start the etcd cluster\n");
                return 1;
        }
        EtcdClient *e = etcd_test_client(&c, loop, 0x7);
        const char *url = c.members[0].client_url;
        (void) snprintf(tls, sizeof tls, "--cacert='%s' --cert='%s/serving.crt' --key='%s/serving.key'",
                        c.ca_file, c.members[0].dir, c.members[0].dir);

        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        if (etcd_test_load(loop, e, db_mb * 100, 10240) < 0) {
                fprintf(stderr, "loading data failed\n");
                return 1;
        }
        printf("loaded %u MB of values in %.1f s\n", db_mb, secs(now_usec(CLOCK_MONOTONIC) - t0));

        /* Snapshots from the same member: ours over gRPC, ours over the gateway, etcdctl; best of two. */
        double best[2] = {}, best_theirs = 0;
        for (int round = 0; round < 2; round++) {
                for (int t = 0; t < 2; t++) {
                        (void) snprintf(ours, sizeof ours, "%s/ours-%d-%d.db", c.dir, t, round);
                        s = (Snap){};
                        t0 = now_usec(CLOCK_MONOTONIC);
                        if (etcd_snapshot_save(e, url, ours,
                                               t == 0 ? ETCD_SNAPSHOT_GRPC : ETCD_SNAPSHOT_GATEWAY, 0, NULL,
                                               on_snap, &s) < 0 ||
                            loop_run_until(loop, &s.done, 600 * USEC_PER_SEC) < 0 || s.error < 0) {
                                fprintf(stderr, "snapshot failed: %s\n", etcd_strerror(s.error));
                                return 1;
                        }
                        best[t] = MAX(best[t], (double) s.size / 1e6 / secs(now_usec(CLOCK_MONOTONIC) - t0));
                        (void) unlink(ours);
                }
                (void) snprintf(theirs, sizeof theirs, "%s/etcdctl-%d.db", c.dir, round);
                (void) snprintf(cmd, sizeof cmd,
                                "ETCDCTL_API=3 etcdctl --endpoints=%s %s snapshot save '%s' >/dev/null 2>&1",
                                url, tls, theirs);
                best_theirs = MAX(best_theirs, (double) s.size / 1e6 / secs(run_cmd(cmd)));
                (void) unlink(theirs);
        }
        printf("snapshot     %.0f MB database: ours gRPC %.1f MB/s (%.2fx etcdctl, target >= 0.80x) | ours "
               "gateway "
               "%.1f MB/s (%.2fx) | etcdctl %.1f MB/s\n",
               (double) s.size / 1e6, best[0], best[0] / best_theirs, best[1], best[1] / best_theirs,
               best_theirs);

        (void) snprintf(cmd, sizeof cmd, "ETCDCTL_API=3 etcdctl --endpoints=%s %s member list >/dev/null",
                        url, tls);
        latency(e, "member list", call_list, url, cmd);
        (void) snprintf(cmd, sizeof cmd,
                        "ETCDCTL_API=3 etcdctl --endpoints=%s %s endpoint status >/dev/null", url, tls);
        latency(e, "status", call_status, url, cmd);

        double rsa = 0, ec = 0;
        certs_per_second(c.ca, PKI_KEY_RSA_2048, 40, &rsa);
        certs_per_second(c.ca, PKI_KEY_ECDSA_P256, 400, &ec);
        printf("certificates issued per second (key generation + signing): RSA 2048 %.1f/s | ECDSA P-256 "
               "%.1f/s | "
               "ratio %.1fx\n",
               rsa, ec, ec / rsa);

        etcd_client_free(e);
        etcd_test_cluster_destroy(&c);
        loop_unref(loop);
        return 0;
}
