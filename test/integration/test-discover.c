/* The etcd pod's node commands as the real binary (CEO_BIN, set by CMake;
 * else ../../cluster-etcd-operator next to this test binary) against a real
 * TLS etcd cluster from the harness:
 *   discover-etcd-initial-cluster: a started member with its data prints
 *   nothing; one not yet added waits, then prints the initial cluster once
 *   the test adds it, and that string really starts the member; the timeout
 *   exits 1; a started member without data fails; a removed member's data is
 *   moved aside (nothing deleted) and it joins again once re-added; local
 *   data of another cluster is never started on;
 *   rev: revision.json written, parseable, and used by discover;
 *   readyz: 200 while the member serves, 503 (and /healthz too) while it is
 *   frozen, and once it is killed;
 *   member-remove: refuses an unknown member, a healthy voter without
 *   --force, and any removal that leaves too few healthy voters for quorum
 *   or that no quorum read confirms; removes an unhealthy voter and a
 *   never-started learner (by hex ID). */
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "etcd-harness.h"
#include "node/node-etcd.h"

static EtcdTestCluster cluster;
static Loop *loop;
static EtcdClient *client;
static char bin[4096];

/* ---- running the binary ---- */

typedef struct Child {
        pid_t pid;
        int out; /* its stdout */
} Child;

/* The child's stdout (and its stderr too, with `with_logs`) comes through `out`. */
static Child spawn_with(char *const argv[], bool with_logs)
{
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                (void) dup2(p[1], STDOUT_FILENO);
                if (with_logs)
                        (void) dup2(p[1], STDERR_FILENO);
                execv(bin, argv);
                _exit(127);
        }
        (void) close(p[1]);
        return (Child){.pid = pid, .out = p[0]};
}

static Child spawn(char *const argv[])
{
        return spawn_with(argv, false);
}

/* Reads the child's stdout to EOF and reaps it; -ETIMEDOUT (and a kill) past `timeout`. */
static int finish(Child *c, usec_t timeout, char *out, size_t n)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + timeout;
        size_t len = 0;
        int status = 0;

        for (;;) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (now >= end) {
                        (void) kill(c->pid, SIGKILL);
                        (void) waitpid(c->pid, &status, 0);
                        (void) close(c->out);
                        return -ETIMEDOUT;
                }
                struct pollfd pfd = {.fd = c->out, .events = POLLIN};
                if (poll(&pfd, 1, (int) ((end - now) / USEC_PER_MSEC) + 1) <= 0)
                        continue;
                ssize_t k = read(c->out, out + len, n - 1 - len);
                if (k <= 0)
                        break;
                len += (size_t) k;
                assert_true(len < n - 1);
        }
        out[len] = 0;
        (void) close(c->out);
        assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

static bool still_running(const Child *c)
{
        int status = 0;
        return waitpid(c->pid, &status, WNOHANG) == 0;
}

/* Stops a sidecar with SIGTERM; returns its exit code. */
static int stop(Child *c)
{
        char out[64];
        assert_int_equal(kill(c->pid, SIGTERM), 0);
        return finish(c, 10 * USEC_PER_SEC, out, sizeof out);
}

typedef struct Args {
        char a[24][640];
        char *argv[26];
        size_t n;
} Args;

static void arg(Args *a, const char *fmt, ...) _printf_(2, 3);
static void arg(Args *a, const char *fmt, ...)
{
        va_list ap;
        assert_true(a->n < ELEMENTSOF(a->a));
        va_start(ap, fmt);
        (void) vsnprintf(a->a[a->n], sizeof a->a[a->n], fmt, ap);
        va_end(ap);
        a->argv[a->n] = a->a[a->n];
        a->argv[++a->n] = NULL;
}

/* The TLS flags: the member's own peer certificate, as the etcd pod uses. */
static void tls_args(Args *a, size_t i)
{
        arg(a, "--cacert=%s", cluster.ca_file);
        arg(a, "--cert=%s/peer.crt", cluster.members[i].dir);
        arg(a, "--key=%s/peer.key", cluster.members[i].dir);
}

static void discover_args_endpoints(Args *a, size_t i, const char *data_dir, const char *timeout,
                                    const char *endpoints)
{
        EtcdTestMember *m = &cluster.members[i];
        a->n = 0;
        arg(a, "%s", bin);
        arg(a, "discover-etcd-initial-cluster");
        tls_args(a, i);
        arg(a, "--endpoints=%s", endpoints);
        arg(a, "--data-dir=%s", data_dir);
        arg(a, "--target-peer-url-host=%s", m->ip);
        arg(a, "--target-peer-url-port=%u", m->peer_port);
        arg(a, "--target-name=%s", m->name);
        arg(a, "--timeout=%s", timeout);
        arg(a, "--interval=300ms");
}

static void discover_args(Args *a, size_t i, const char *data_dir, const char *timeout)
{
        char all[512];
        /* Every member's client URL, as ALL_ETCD_ENDPOINTS; ours refuses (not running). */
        (void) snprintf(all, sizeof all, "%s,%s,%s", cluster.members[0].client_url,
                        cluster.members[1].client_url, cluster.members[2].client_url);
        discover_args_endpoints(a, i, data_dir, timeout, all);
}

static int discover(size_t i, const char *data_dir, const char *timeout, char *out, size_t n)
{
        Args a;
        discover_args(&a, i, data_dir, timeout);
        Child c = spawn(a.argv);
        return finish(&c, 60 * USEC_PER_SEC, out, n);
}

static char *data_dir(size_t i)
{
        char *p = strdup_printf("%s/data", cluster.members[i].dir);
        assert_non_null(p);
        return p;
}

/* ---- etcd helpers ---- */

static EtcdMemberList *list_members(void)
{
        EtcdTestResult r = {};
        EtcdMemberList *l = NULL;
        assert_int_equal(etcd_member_list(client, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        assert_int_equal(etcd_parse_member_list(r.body, &l), 0);
        etcd_test_result_done(&r);
        return l;
}

static uint64_t add_learner(size_t i)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        uint64_t id = 0;
        for (;;) {
                EtcdTestResult r = {};
                assert_int_equal(
                        etcd_member_add(client, cluster.members[i].peer_url, true, etcd_test_result_cb, &r),
                        0);
                assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
                int e = r.error;
                if (e == 0)
                        assert_int_equal(etcd_parse_added_member(r.body, &id), 0);
                etcd_test_result_done(&r);
                if (e == 0)
                        return id;
                /* Right after a membership change etcd may call the cluster unhealthy for a while. */
                if (e != ETCD_ERR_UNHEALTHY || now_usec(CLOCK_MONOTONIC) > end)
                        fail_msg("member add %s: %s", cluster.members[i].peer_url, etcd_strerror(e));
                (void) usleep(300000);
        }
}

static void remove_member(uint64_t id)
{
        EtcdTestResult r = {};
        assert_int_equal(etcd_member_remove(client, id, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        etcd_test_result_done(&r);
}

static void wait_started(const char *name)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + 60 * USEC_PER_SEC;
        for (;;) {
                _cleanup_(etcd_member_list_freep) EtcdMemberList *l = list_members();
                if (etcd_member_is_started(etcd_member_list_find_by_name(l, name)))
                        return;
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                (void) usleep(200000);
        }
}

static char *expected_initial_cluster(unsigned mask)
{
        _cleanup_free_ char *ic = etcd_test_initial_cluster(&cluster, mask);
        char *s = strdup_printf("%s\n", ic);
        assert_non_null(s);
        return s;
}

/* "find DIR -type f" with sizes, sorted, relative to DIR. */
static char *tree(const char *dir)
{
        _cleanup_free_ char *cmd =
                strdup_printf("cd '%s' && find . -type f -printf '%%p %%s\\n' | sort", dir);
        FILE *f = popen(cmd, "r");
        char buf[16384];
        size_t n = 0;
        assert_non_null(f);
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        assert_int_equal(pclose(f), 0);
        return strdup(buf);
}

/* The single member-removed-archive-* entry of `dir`, or NULL. */
static char *find_archive(const char *dir)
{
        _cleanup_(closedirp) DIR *d = opendir(dir);
        char *found = NULL;
        struct dirent *de;
        assert_non_null(d);
        while ((de = readdir(d)))
                if (startswith(de->d_name, "member-removed-archive-")) {
                        assert_null(found);
                        found = strdup_printf("%s/%s", dir, de->d_name);
                }
        return found;
}

/* ---- setup ---- */

static void find_binary(void)
{
        const char *env = getenv("CEO_BIN");
        char self[4096];

        if (env) {
                (void) snprintf(bin, sizeof bin, "%s", env);
                return;
        }
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        assert_true(n > 0);
        self[n] = 0;
        (void) snprintf(bin, sizeof bin, "%s/../../cluster-etcd-operator", dirname(self));
}

static int setup(void **state)
{
        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        find_binary();
        if (access(bin, X_OK) < 0) {
                fprintf(stderr, "%s: %s (build the cluster-etcd-operator target, or set CEO_BIN)\n", bin,
                        strerror(errno));
                return -1;
        }
        if (etcd_test_cluster_init(&cluster, 3, NULL) < 0 || etcd_test_cluster_bootstrap(&cluster, 1) < 0)
                return -1;
        loop = loop_new();
        client = etcd_test_client(&cluster, loop, 0x1);
        return client ? 0 : -1;
}

static int teardown(void **state)
{
        client = etcd_client_free(client);
        if (loop)
                assert_int_equal(loop_http_in_flight(loop), 0);
        loop = loop_unref(loop);
        etcd_test_cluster_destroy(&cluster);
        return 0;
}

/* ---- discover ---- */

static void test_started_member_prints_nothing(void **state)
{
        _cleanup_free_ char *d1 = data_dir(0);
        char out[4096];
        assert_int_equal(discover(0, d1, "20s", out, sizeof out), 0);
        assert_string_equal(out, "");
}

static void test_timeout(void **state)
{
        _cleanup_free_ char *d2 = data_dir(1);
        char out[4096];
        usec_t start = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(discover(1, d2, "3s", out, sizeof out), 1);
        usec_t took = now_usec(CLOCK_MONOTONIC) - start;
        assert_string_equal(out, "");
        assert_true(took >= 2 * USEC_PER_SEC);
        assert_true(took < 6 * USEC_PER_SEC);
        assert_int_not_equal(access(d2, F_OK), 0); /* nothing created */
}

/* No endpoint answers (only m3's, which never ran): a member with data starts
 * on it at once; one without data waits and times out. */
static void test_unreachable(void **state)
{
        _cleanup_free_ char *d1 = data_dir(0), *d3 = data_dir(2);
        char out[4096];
        Args a;

        discover_args_endpoints(&a, 0, d1, "20s", cluster.members[2].client_url);
        Child c = spawn(a.argv);
        usec_t start = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(finish(&c, 30 * USEC_PER_SEC, out, sizeof out), 0);
        assert_string_equal(out, "");
        assert_true(now_usec(CLOCK_MONOTONIC) - start < 10 * USEC_PER_SEC);

        discover_args_endpoints(&a, 2, d3, "2s", cluster.members[2].client_url);
        c = spawn(a.argv);
        assert_int_equal(finish(&c, 30 * USEC_PER_SEC, out, sizeof out), 1);
        assert_string_equal(out, "");
}

/* Waits while m2 is not a member, prints once it is added (a learner, not
 * started), and the printed string starts m2 for real. */
static void test_waits_then_joins(void **state)
{
        _cleanup_free_ char *d2 = data_dir(1), *want = expected_initial_cluster(0x3);
        char out[4096];
        Args a;

        discover_args(&a, 1, d2, "60s");
        Child c = spawn(a.argv);
        (void) usleep(2 * USEC_PER_SEC);
        assert_true(still_running(&c));
        (void) add_learner(1);
        assert_int_equal(finish(&c, 30 * USEC_PER_SEC, out, sizeof out), 0);
        assert_string_equal(out, want);

        /* Asked again while still unstarted and without data: the same answer at once. */
        assert_int_equal(discover(1, d2, "10s", out, sizeof out), 0);
        assert_string_equal(out, want);

        /* Unstarted but with a data dir left from an earlier life: moved aside, then the same answer. */
        _cleanup_free_ char *member = strdup_printf("%s/member", d2), *wal = strdup_printf("%s/wal", member);
        _cleanup_free_ char *f = strdup_printf("%s/0.wal", wal);
        assert_int_equal(mkdir(d2, 0700), 0);
        assert_int_equal(mkdir(member, 0700), 0);
        assert_int_equal(mkdir(wal, 0700), 0);
        assert_int_equal(write_file_atomic(f, "old", 3, 0600), 0);
        assert_int_equal(discover(1, d2, "10s", out, sizeof out), 0);
        assert_string_equal(out, want);
        _cleanup_free_ char *archive = find_archive(d2), *moved = NULL;
        assert_non_null(archive);
        moved = strdup_printf("%s/wal/0.wal", archive);
        assert_int_equal(access(moved, F_OK), 0);
        _cleanup_free_ char *rm = strdup_printf("rm -rf '%s'", archive); /* the test's own junk */
        assert_int_equal(system(rm), 0);

        out[strlen(out) - 1] = 0;
        assert_int_equal(etcd_test_member_start(&cluster, 1, out, true), 0);
        wait_started("m2");
        /* Now started with its data: restart on the data. */
        assert_int_equal(discover(1, d2, "10s", out, sizeof out), 0);
        assert_string_equal(out, "");
}

static void test_started_without_data_fails(void **state)
{
        _cleanup_free_ char *d2 = data_dir(1), *hidden = strdup_printf("%s.hidden", d2);
        char out[4096];

        assert_int_equal(etcd_test_member_kill(&cluster, 1, SIGTERM), 0);
        assert_int_equal(rename(d2, hidden), 0);
        usec_t start = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(discover(1, d2, "20s", out, sizeof out), 1);
        assert_true(now_usec(CLOCK_MONOTONIC) - start < 10 * USEC_PER_SEC); /* at once, not at the timeout */
        assert_string_equal(out, "");
        assert_int_not_equal(access(d2, F_OK), 0);
        assert_int_equal(rename(hidden, d2), 0);
}

/* Removed with its data on disk: the data is moved aside, intact; discover
 * then waits to be added again and prints the initial cluster when it is. */
static void test_removed_member_archived(void **state)
{
        _cleanup_free_ char *d2 = data_dir(1), *member = strdup_printf("%s/member", d2);
        _cleanup_free_ char *before = tree(member), *want = expected_initial_cluster(0x3);
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = list_members();
        const EtcdMember *m2 = etcd_member_list_find_by_name(l, "m2");
        char out[4096];
        Args a;

        assert_non_null(m2);
        assert_true(strstr(before, "wal/") != NULL);
        remove_member(m2->id);

        discover_args(&a, 1, d2, "60s");
        Child c = spawn(a.argv);
        usec_t end = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        _cleanup_free_ char *archive = NULL;
        while (!(archive = find_archive(d2))) {
                assert_true(still_running(&c));
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                (void) usleep(100000);
        }
        assert_int_not_equal(access(member, F_OK), 0);
        _cleanup_free_ char *after = tree(archive);
        assert_string_equal(before, after); /* every file moved, none lost */
        /* It keeps waiting to be added again. */
        (void) usleep(1500000);
        assert_true(still_running(&c));
        (void) add_learner(1);
        assert_int_equal(finish(&c, 30 * USEC_PER_SEC, out, sizeof out), 0);
        assert_string_equal(out, want);

        /* And it joins with an empty data dir next to the archive. */
        out[strlen(out) - 1] = 0;
        assert_int_equal(etcd_test_member_start(&cluster, 1, out, true), 0);
        wait_started("m2");
        _cleanup_free_ char *still = tree(archive);
        assert_string_equal(before, still);
}

static void test_foreign_data_never_started(void **state)
{
        _cleanup_free_ char *d1 = data_dir(0), *rev = nodecmd_revision_path(d1);
        _cleanup_free_ char *member = strdup_printf("%s/member", d1);
        char out[4096];

        /* revision.json says the local data belongs to another cluster. */
        assert_int_equal(write_file_atomic(rev, "{\"clusterId\":\"42\"}", 18, 0644), 0);
        assert_int_equal(discover(0, d1, "2s", out, sizeof out), 1);
        assert_string_equal(out, "");
        assert_int_equal(access(member, F_OK), 0); /* untouched */
        assert_null(find_archive(d1));
        assert_int_equal(unlink(rev), 0);
}

/* ---- rev ---- */

static void test_rev(void **state)
{
        _cleanup_free_ char *d1 = data_dir(0), *path = nodecmd_revision_path(d1), *text = NULL;
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = list_members();
        NodeCmdRevision r = {};
        size_t len = 0;
        Args a = {};

        arg(&a, "%s", bin);
        arg(&a, "rev");
        tls_args(&a, 0);
        /* m3 was never started: it must not stop the others from being recorded. */
        arg(&a, "--endpoints=%s,%s,%s", cluster.members[0].client_url, cluster.members[1].client_url,
            cluster.members[2].client_url);
        arg(&a, "--data-dir=%s", d1);
        arg(&a, "--interval=500ms");
        Child c = spawn(a.argv);
        usec_t end = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        while (access(path, F_OK) < 0) {
                assert_true(still_running(&c));
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                (void) usleep(100000);
        }
        assert_int_equal(read_full_file(path, 1 << 20, &text, &len), 0);
        assert_int_equal(nodecmd_revision_decode(text, len, &r), 0);
        assert_true(r.cluster_id == l->cluster_id);
        assert_int_equal(r.n_endpoints, 2);
        assert_string_equal(r.endpoints[0].endpoint, cluster.members[0].client_url);
        assert_string_equal(r.endpoints[1].endpoint, cluster.members[1].client_url);
        assert_true(r.endpoints[0].raft_index > 0);
        assert_true(r.max_raft_index >= r.endpoints[0].raft_index);
        assert_true(r.created > 0);
        /* clusterId is a decimal string. */
        assert_non_null(strstr(text, "\"clusterId\":\""));
        nodecmd_revision_done(&r);

        /* It keeps refreshing: the file is replaced (atomically) within a few intervals. */
        struct stat st0, st1;
        assert_int_equal(stat(path, &st0), 0);
        end = now_usec(CLOCK_MONOTONIC) + 10 * USEC_PER_SEC;
        do {
                (void) usleep(200000);
                assert_int_equal(stat(path, &st1), 0);
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
        } while (st1.st_ino == st0.st_ino);
        assert_int_equal(stop(&c), 0);

        /* discover reads it: the IDs agree, so the started member restarts on its data. */
        char out[4096];
        assert_int_equal(discover(0, d1, "10s", out, sizeof out), 0);
        assert_string_equal(out, "");
        assert_int_equal(unlink(path), 0);
}

/* ---- member-remove ---- */

/* member-remove TARGET as a master's etcd-member-remove.sh runs it; `out` gets its logs. */
static int member_remove(const char *target, bool force, char *out, size_t n)
{
        Args a = {};
        arg(&a, "%s", bin);
        arg(&a, "member-remove");
        tls_args(&a, 0);
        arg(&a, "--endpoints=%s,%s,%s", cluster.members[0].client_url, cluster.members[1].client_url,
            cluster.members[2].client_url);
        if (force)
                arg(&a, "--force");
        arg(&a, "%s", target);
        Child c = spawn_with(a.argv, true);
        int r = finish(&c, 90 * USEC_PER_SEC, out, n);
        fprintf(stderr, "member-remove %s%s -> %d:\n%s", target, force ? " --force" : "", r, out);
        return r;
}

static void promote(uint64_t id)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + 60 * USEC_PER_SEC;
        for (;;) {
                EtcdTestResult r = {};
                assert_int_equal(etcd_member_promote(client, id, etcd_test_result_cb, &r), 0);
                assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
                int e = r.error;
                etcd_test_result_done(&r);
                if (e == 0 || e == ETCD_ERR_NOT_LEARNER)
                        return;
                if ((e != ETCD_ERR_LEARNER_NOT_READY && e != ETCD_ERR_UNHEALTHY) ||
                    now_usec(CLOCK_MONOTONIC) > end)
                        fail_msg("promote %016" PRIx64 ": %s", id, etcd_strerror(e));
                (void) usleep(300000);
        }
}

static size_t count_members(void)
{
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = list_members();
        return l->n_members;
}

/* Removed only when the rest keeps quorum with healthy voters; a healthy
 * voter only with --force; a name or a hex ID; nothing changed when refused. */
static void test_member_remove(void **state)
{
        char out[16384];

        /* Three voters: m2 (a learner since test_removed_member_archived) promoted, m3 added. */
        {
                _cleanup_(etcd_member_list_freep) EtcdMemberList *l = list_members();
                const EtcdMember *m2 = etcd_member_list_find_by_name(l, "m2");
                assert_non_null(m2);
                promote(m2->id);
        }
        _cleanup_free_ char *ic = etcd_test_initial_cluster(&cluster, 0x7);
        uint64_t id3 = add_learner(2);
        assert_int_equal(etcd_test_member_start(&cluster, 2, ic, true), 0);
        wait_started("m3");
        promote(id3);
        assert_int_equal(count_members(), 3);

        assert_int_equal(member_remove("nosuch", false, out, sizeof out), 1);
        assert_non_null(strstr(out, "no member is named \"nosuch\""));

        /* A healthy voter: refused without --force. */
        assert_int_equal(member_remove("m2", false, out, sizeof out), 1);
        assert_non_null(strstr(out, "m2 is a healthy voting member"));
        assert_non_null(strstr(out, "nothing was changed"));
        assert_int_equal(count_members(), 3);

        /* m3 frozen: removing m2 would leave m1 and m3 with one healthy, even with --force. */
        assert_int_equal(kill(cluster.members[2].pid, SIGSTOP), 0);
        assert_int_equal(member_remove("m2", true, out, sizeof out), 1);
        assert_non_null(strstr(out, "2 voters, 1 of them healthy"));
        assert_non_null(strstr(out, "UNHEALTHY"));
        assert_int_equal(count_members(), 3);

        /* The frozen one itself goes: two healthy voters remain. */
        assert_int_equal(member_remove("m3", false, out, sizeof out), 0);
        assert_non_null(strstr(out, "removing member m3"));
        assert_non_null(strstr(out, "removed m3"));
        assert_int_equal(count_members(), 2);
        assert_int_equal(kill(cluster.members[2].pid, SIGCONT), 0);
        assert_int_equal(etcd_test_member_kill(&cluster, 2, SIGKILL), 0);
        /* Run again: it says so, and changes nothing. */
        assert_int_equal(member_remove("m3", false, out, sizeof out), 1);
        assert_non_null(strstr(out, "If you removed it already"));

        /* No quorum (m2 frozen, two voters): nothing can be removed. */
        assert_int_equal(kill(cluster.members[1].pid, SIGSTOP), 0);
        int r = member_remove("m2", true, out, sizeof out);
        assert_int_equal(kill(cluster.members[1].pid, SIGCONT), 0);
        assert_int_equal(r, 1);
        assert_non_null(strstr(out, "no member served a quorum read"));

        /* A member that never started, by its hex ID: a learner costs no quorum. */
        uint64_t id = add_learner(2);
        char hex[17];
        assert_int_equal(count_members(), 3);
        assert_int_equal(member_remove(etcd_id_to_hex(id, hex), false, out, sizeof out), 0);
        assert_int_equal(count_members(), 2);
        _cleanup_free_ char *d3 = data_dir(2), *rm = strdup_printf("rm -rf '%s'", d3);
        assert_int_equal(system(rm), 0); /* the test's own member: m3 may be used again */
}

/* ---- readyz ---- */

static long http_get(const char *url, char *body, size_t n)
{
        return etcd_test_http_get(loop, url, body, n);
}

static long wait_status(const char *url, long want, char *body, size_t n)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        long s;
        while ((s = http_get(url, body, n)) != want) {
                if (now_usec(CLOCK_MONOTONIC) > end)
                        return s;
                (void) usleep(200000);
        }
        return s;
}

static void test_readyz(void **state)
{
        EtcdTestMember *m1 = &cluster.members[0];
        char addr[32], url[128], hurl[128], body[512];
        Args a = {};

        /* An address of the cluster's own /24 that no member uses. */
        (void) snprintf(addr, sizeof addr, "%.*s.250", (int) (strrchr(m1->ip, '.') - m1->ip), m1->ip);
        unsigned port = m1->client_port + 7;
        (void) snprintf(url, sizeof url, "http://%s:%u/readyz", addr, port);
        (void) snprintf(hurl, sizeof hurl, "http://%s:%u/healthz", addr, port);
        arg(&a, "%s", bin);
        arg(&a, "readyz");
        tls_args(&a, 0);
        arg(&a, "--target=%s", m1->client_url);
        arg(&a, "--listen-address=%s", addr);
        arg(&a, "--listen-port=%u", port);
        arg(&a, "--interval=200ms");
        arg(&a, "--timeout=1s");
        Child c = spawn(a.argv);

        assert_int_equal(wait_status(url, 200, body, sizeof body), 200);
        assert_string_equal(body, "ok");
        assert_int_equal(http_get(hurl, NULL, 0), 200);
        assert_true(still_running(&c));

        /* --target-certified-as: the certificate may name that address instead of the
         * target's (a master that moved): one it names (127.0.0.1) is ready; so is one it
         * does not name, as the certificate names the target itself (the alias is a second
         * way, not a replacement: test-etcd-tls); what is no address is refused at once. */
        static const struct {
                const char *as;
                long status;
        } certified[] = {{"127.0.0.1", 200}, {"127.254.254.254", 200}};
        for (size_t i = 0; i < ELEMENTSOF(certified); i++) {
                Args b = {};
                char curl[128];
                (void) snprintf(curl, sizeof curl, "http://%s:%u/readyz", addr, port + 1);
                arg(&b, "%s", bin);
                arg(&b, "readyz");
                tls_args(&b, 0);
                arg(&b, "--target=%s", m1->client_url);
                arg(&b, "--target-certified-as=%s", certified[i].as);
                arg(&b, "--listen-address=%s", addr);
                arg(&b, "--listen-port=%u", port + 1);
                arg(&b, "--interval=200ms");
                arg(&b, "--timeout=1s");
                Child cc = spawn(b.argv);
                long got = wait_status(curl, certified[i].status, body, sizeof body);
                assert_int_equal(stop(&cc), 0);
                printf("readyz --target-certified-as=%s: %ld %s\n", certified[i].as, got, body);
                assert_int_equal(got, certified[i].status);
        }
        {
                Args b = {};
                arg(&b, "%s", bin);
                arg(&b, "readyz");
                tls_args(&b, 0);
                arg(&b, "--target=%s", m1->client_url);
                arg(&b, "--target-certified-as=master-0");
                Child cc = spawn(b.argv);
                char out[256];
                assert_int_equal(finish(&cc, 10 * USEC_PER_SEC, out, sizeof out), 2);
        }

        /* A frozen member answers nothing, not even its member list: not ready, and not
         * alive either (/healthz, the etcd container's liveness probe). A member that is
         * only busy (defragmenting) stays alive: integration/test-defrag. */
        assert_int_equal(kill(m1->pid, SIGSTOP), 0); /* by PID; the harness kills it at exit either way */
        assert_int_equal(wait_status(url, 503, body, sizeof body), 503);
        assert_int_equal(wait_status(hurl, 503, body, sizeof body), 503);
        assert_non_null(strstr(body, "not alive"));
        assert_int_equal(kill(m1->pid, SIGCONT), 0);
        assert_int_equal(wait_status(url, 200, body, sizeof body), 200);
        assert_int_equal(http_get(hurl, NULL, 0), 200);

        /* The member goes away: not ready within a few checks, with the reason. */
        assert_int_equal(etcd_test_member_kill(&cluster, 0, SIGKILL), 0);
        usec_t start = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(wait_status(url, 503, body, sizeof body), 503);
        assert_true(now_usec(CLOCK_MONOTONIC) - start < 5 * USEC_PER_SEC);
        assert_non_null(strstr(body, "failed to get member health key"));
        assert_int_equal(stop(&c), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_started_member_prints_nothing),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_unreachable),
                cmocka_unit_test(test_waits_then_joins),
                cmocka_unit_test(test_started_without_data_fails),
                cmocka_unit_test(test_removed_member_archived),
                cmocka_unit_test(test_foreign_data_never_started),
                cmocka_unit_test(test_rev),
                cmocka_unit_test(test_member_remove),
                cmocka_unit_test(test_readyz), /* last: it kills m1 */
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
