/* `cluster-etcd-operator bump-revision`: the revision bump of a restore, for
 * an etcd that has no `etcdutl snapshot restore --bump-revision
 * --mark-compacted` (etcd 3.4) or no --force-new-cluster-bump-amount (every
 * etcd but OpenShift's). The guarantee both give: every resourceVersion a
 * client saw before the disaster is compacted in the restored cluster, so a
 * watch or list from it gets 410 Gone and the client relists, instead of
 * silently missing changes or seeing other objects under numbers it knows.
 *
 * How, before the member serves anyone: etcd runs privately on the data
 * dir with every listener on a unix socket in a private temporary dir; one key
 * outside the Kubernetes prefixes is written (each put is one revision)
 * until the revision passes the highest one any member reported in
 * revision.json (maxRevision, written every 10 s by the etcd pod's rev
 * container) plus a margin for the writes after that report; the key is
 * deleted, everything up to there compacted, and etcd stopped. Idempotent:
 * after a restart it continues from the revision it finds.
 *
 * When that cannot give the guarantee (no revision.json with maxRevision,
 * or a gap over --max-writes), it says so plainly, compacts at the current
 * revision anyway (clients older than the snapshot relist), and exits 0:
 * a restore at 3 a.m. must not stop on what it cannot improve. The outcome
 * is written to --status-file as JSON ("path": "writes", "none-needed" or
 * "unavailable", with the reason). */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/strlist.h"
#include "dr/bump.h"
#include "loop/loop.h"
#include "node-etcd.h"
#include "node-util.h"
#include "node.h"

extern char **environ;

#define BUMP_KEY "/openshift-etcd-restore/revision-bump"

typedef struct Flags {
        const char *data_dir, *name, *status_file;
        StrList revision_json;
        bool force_new_cluster;
        uint64_t margin, max_writes;
        unsigned parallel;
        usec_t timeout;
} Flags;

typedef struct Bump {
        const Flags *f;
        Loop *loop;
        char *dir, *sock;
        pid_t etcd;
        /* the writer */
        uint64_t to_issue, issued, acked, failed;
        unsigned in_flight;
        int error;
        bool done;
        char *put_body;
} Bump;

static int safe_atou64(const char *s, uint64_t *ret)
{
        char *end = NULL;
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || !end || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* ---- one request to the private etcd ---- */

typedef struct Call {
        bool done;
        int error;
        long status;
        cJSON *body;
} Call;

static void on_call(HttpRequest *req, int error, void *userdata)
{
        Call *c = userdata;
        size_t len = 0;
        const char *body = http_request_get_body(req, &len);
        c->done = true;
        c->error = error;
        c->status = http_request_get_status(req);
        if (error >= 0 && body && json_parse(body, len, &c->body) < 0)
                c->body = NULL;
}

/* Request bodies for etcd's gateway, built with cJSON: {"key":K} or {"key":K,"value":V}
 * (base64), and a physical compaction at a revision (a uint64, hence a JSON string). */
static char *kv_body(const char *key64, const char *val64)
{
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "key", key64) ||
            (val64 && !cJSON_AddStringToObject(o, "value", val64)))
                return NULL;
        return json_print(o);
}

static char *compaction_body(uint64_t rev)
{
        char buf[24]; /* 20 digits of a uint64 and the NUL */
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        (void) snprintf(buf, sizeof buf, "%" PRIu64, rev);
        if (!o || !cJSON_AddStringToObject(o, "revision", buf) || !cJSON_AddTrueToObject(o, "physical"))
                return NULL;
        return json_print(o);
}

static int call(Bump *b, const char *path, const char *body, usec_t timeout, cJSON **ret)
{
        _cleanup_free_ char *url = strdup_printf("http://localhost%s", path);
        _cleanup_(http_request_unrefp) HttpRequest *req = url ? http_request_new("POST", url) : NULL;
        Call c = {};
        int r;

        if (!req)
                return -ENOMEM;
        if ((r = http_request_set_unix_socket(req, b->sock)) < 0 ||
            (r = http_request_set_body(req, "application/json", body, strlen(body))) < 0)
                return r;
        http_request_set_timeout(req, timeout);
        if ((r = loop_http_start(b->loop, req, on_call, &c)) < 0)
                return r;
        r = loop_run_until(b->loop, &c.done, timeout + USEC_PER_SEC);
        if (!c.done) {
                http_request_cancel(req);
                return r < 0 ? r : -ETIMEDOUT;
        }
        if (c.error < 0 || c.status != 200) {
                const char *msg = json_get_string(c.body, "message");
                r = c.error < 0 ? c.error : msg && strstr(msg, "has been compacted") ? -ESTALE : -EIO;
                cJSON_Delete(c.body);
                return r;
        }
        if (ret)
                *ret = c.body;
        else
                cJSON_Delete(c.body);
        return 0;
}

static int current_revision(Bump *b, uint64_t *ret)
{
        _cleanup_(cJSON_Deletep) cJSON *st = NULL;
        int r = call(b, "/v3/maintenance/status", "{}", 5 * USEC_PER_SEC, &st);
        if (r < 0)
                return r;
        const char *rev = json_get_string(json_get_object(st, "header"), "revision");
        if (!rev || safe_atou64(rev, ret) < 0)
                return -EBADMSG;
        return 0;
}

/* ---- the private etcd ---- */

static int start_etcd(Bump *b, const char *data_dir)
{
        const Flags *f = b->f;
        const char *argv[] = {"etcd",
                              "--name",
                              f->name,
                              "--data-dir",
                              data_dir, /* absolute: etcd runs in the socket dir */
                              "--listen-client-urls",
                              "unix://localhost:1",
                              "--advertise-client-urls",
                              "unix://localhost:1",
                              "--listen-peer-urls",
                              "unix://localhost:2",
                              "--logger=zap",
                              "--log-level=warn",
                              f->force_new_cluster ? "--force-new-cluster" : NULL,
                              NULL};

        /* The pod's ETCD_* settings name the real listeners and data dir: the private
         * etcd gets none of them but its quota (a large db must not hit the default). */
        size_t n = 0;
        for (char **e = environ; *e; e++)
                n++;
        _cleanup_free_ char **envp = calloc(n + 1, sizeof *envp);
        if (!envp)
                return -ENOMEM;
        n = 0;
        for (char **e = environ; *e; e++)
                if (!startswith(*e, "ETCD_") || startswith(*e, "ETCD_QUOTA_BACKEND_BYTES=") ||
                    startswith(*e, "ETCD_UNSUPPORTED_ARCH="))
                        envp[n++] = *e;
        /* fork, not posix_spawn: the child asks to die with us first (review L8). A bump
         * killed outside a container (SIGKILL included) must not leave an etcd behind that
         * holds the data dir's bbolt lock. */
        pid_t parent = getpid(), pid = fork();
        if (pid < 0)
                return log_error_errno(-errno, "cannot fork");
        if (pid == 0) {
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent || chdir(b->dir) < 0)
                        _exit(127);
                (void) execvpe("etcd", (char *const *) argv, envp);
                _exit(127);
        }
        b->etcd = pid;
        log_info("started a private etcd (pid %d) on %s%s, listening only on unix sockets in %s",
                 (int) b->etcd, data_dir, f->force_new_cluster ? " with --force-new-cluster" : "", b->dir);
        usec_t start = now_usec(CLOCK_MONOTONIC);
        for (;;) {
                uint64_t rev;
                int status;
                if (current_revision(b, &rev) >= 0)
                        return 0;
                if (waitpid(b->etcd, &status, WNOHANG) == b->etcd) {
                        b->etcd = 0;
                        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
                                return log_error_errno(-ENOENT, "cannot run etcd (it must be on PATH)");
                        return log_error_errno(-EIO, "the private etcd exited (status %d) before it served",
                                               WIFEXITED(status) ? WEXITSTATUS(status)
                                                                 : 128 + WTERMSIG(status));
                }
                if (now_usec(CLOCK_MONOTONIC) - start > 120 * USEC_PER_SEC)
                        return log_error_errno(-ETIMEDOUT, "the private etcd did not serve within 120 s");
                (void) usleep(200 * 1000);
        }
}

static void stop_etcd(Bump *b)
{
        int status;
        if (b->etcd > 0)
                (void) kill(b->etcd, SIGTERM);
        for (int i = 0; b->etcd > 0 && i < 300; i++) {
                if (waitpid(b->etcd, &status, WNOHANG) == b->etcd) {
                        b->etcd = 0;
                        break;
                }
                (void) usleep(100 * 1000);
        }
        if (b->etcd > 0) {
                log_warning("the private etcd (pid %d) did not stop within 30 s; SIGKILL", (int) b->etcd);
                (void) kill(b->etcd, SIGKILL);
                (void) waitpid(b->etcd, &status, 0);
                b->etcd = 0;
        }
        /* Our own sockets and their dir. */
        _cleanup_free_ char *peer = strdup_printf("%s/localhost:2", b->dir);
        if (b->sock)
                (void) unlink(b->sock);
        if (peer)
                (void) unlink(peer);
        (void) rmdir(b->dir);
}

/* ---- the writes ---- */

static int issue(Bump *b);

static void on_put(HttpRequest *req, int error, void *userdata)
{
        Bump *b = userdata;
        b->in_flight--;
        if (error < 0 || http_request_get_status(req) != 200) {
                if (++b->failed > 100 && b->error == 0)
                        b->error = error < 0 ? error : -EIO;
        } else
                b->acked++;
        http_request_unref(req);
        if (b->error == 0 && b->issued < b->to_issue)
                (void) issue(b);
        if (b->in_flight == 0 && (b->issued >= b->to_issue || b->error))
                b->done = true;
}

static int issue(Bump *b)
{
        HttpRequest *req = http_request_new("POST", "http://localhost/v3/kv/put");
        int r;
        if (!req)
                return -ENOMEM;
        if ((r = http_request_set_unix_socket(req, b->sock)) < 0 ||
            (r = http_request_set_body(req, "application/json", b->put_body, strlen(b->put_body))) < 0) {
                http_request_unref(req);
                return r;
        }
        http_request_set_timeout(req, 30 * USEC_PER_SEC);
        if ((r = loop_http_start(b->loop, req, on_put, b)) < 0) {
                http_request_unref(req);
                return r;
        }
        b->issued++;
        b->in_flight++;
        return 0;
}

/* Puts until the revision reaches `target`. */
static int write_up_to(Bump *b, uint64_t target)
{
        const Flags *f = b->f;
        usec_t start = now_usec(CLOCK_MONOTONIC), last = start;
        uint64_t rev = 0, first = 0;
        int r;

        if ((r = current_revision(b, &first)) < 0)
                return log_error_errno(r, "cannot read the revision of the private etcd");
        rev = first;
        while (rev < target) {
                b->to_issue = b->issued + MIN(target - rev, (uint64_t) 20000);
                b->done = false;
                for (unsigned i = 0; i < f->parallel && b->issued < b->to_issue; i++)
                        if ((r = issue(b)) < 0)
                                return log_error_errno(r, "cannot send a put");
                while (!b->done) {
                        r = loop_run_until(b->loop, &b->done, USEC_PER_SEC);
                        if (r < 0 && r != -ETIMEDOUT)
                                return log_error_errno(r, "the event loop failed");
                        if (now_usec(CLOCK_MONOTONIC) - start > f->timeout)
                                return log_error_errno(-ETIMEDOUT,
                                                       "the bump did not finish within --timeout");
                }
                if (b->error)
                        return log_error_errno(
                                b->error, "puts to the private etcd fail (%" PRIu64 " failed)", b->failed);
                if ((r = current_revision(b, &rev)) < 0)
                        return log_error_errno(r, "cannot read the revision of the private etcd");
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (now - last >= 2 * USEC_PER_SEC || rev >= target) {
                        double s = (double) (now - start) / USEC_PER_SEC;
                        last = now;
                        log_info("bump: revision %" PRIu64 " of %" PRIu64 " after %.1f s (%.0f writes/s)",
                                 rev, target, s, s > 0 ? (double) (rev - first) / s : 0.0);
                }
        }
        return 0;
}

static int write_status(const Flags *f, const char *path, const char *reason, uint64_t from, uint64_t to,
                        uint64_t compacted, usec_t took)
{
        if (!f->status_file)
                return 0;
        /* Built with cJSON: the reason may hold any text (a path, etcd's own message). Revisions
         * stay exact as JSON numbers up to 2^53. */
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "path", path) ||
            !cJSON_AddStringToObject(o, "reason", reason) ||
            !cJSON_AddNumberToObject(o, "fromRevision", (double) from) ||
            !cJSON_AddNumberToObject(o, "toRevision", (double) to) ||
            !cJSON_AddNumberToObject(o, "compactedAt", (double) compacted) ||
            !cJSON_AddNumberToObject(o, "seconds",
                                     round((double) took / (double) USEC_PER_SEC * 10.0) / 10.0))
                return -ENOMEM;
        _cleanup_free_ char *json = json_print(o);
        _cleanup_free_ char *text = json ? strdup_printf("%s\n", json) : NULL;
        if (!text)
                return -ENOMEM;
        int r = write_file_atomic(f->status_file, text, strlen(text), 0644);
        if (r < 0)
                log_warning("cannot write %s: %s", f->status_file, strerror(-r));
        return 0;
}

static uint64_t read_max_revision(const Flags *f, const char **ret_from)
{
        uint64_t best = 0;
        *ret_from = NULL;
        for (size_t i = 0; i < f->revision_json.n; i++) {
                _cleanup_free_ char *text = NULL;
                NodeCmdRevision rev = {};
                size_t len = 0;
                if (read_full_file(f->revision_json.v[i], 1 << 20, &text, &len) < 0)
                        continue;
                if (nodecmd_revision_decode(text, len, &rev) >= 0 && rev.max_revision > best) {
                        best = rev.max_revision;
                        *ret_from = f->revision_json.v[i];
                }
                nodecmd_revision_done(&rev);
        }
        return best;
}

typedef struct Outcome {
        const char *path;
        char *reason;
        uint64_t from, rev;
} Outcome;

/* With the private etcd serving: the writes (when they can give the
 * guarantee), then the key's deletion and the compaction. */
static int bump_work(Bump *b, const char *key64, Outcome *o)
{
        const Flags *f = b->f;
        const char *rj = NULL;
        uint64_t max_rev = read_max_revision(f, &rj), target = 0;
        _cleanup_free_ char *del = kv_body(key64, NULL);
        _cleanup_free_ char *compact = NULL;
        int r;

        if (!del)
                return -ENOMEM;
        if ((r = current_revision(b, &o->from)) < 0)
                return log_error_errno(r, "cannot read the revision of the private etcd");
        BumpPath path = bump_decide(max_rev, rj, o->from, f->margin, f->max_writes, &target, &o->reason);
        o->path = bump_path_to_string(path);
        if (path == BUMP_WRITES) {
                log_info("bumping the revision from %" PRIu64 " to %" PRIu64 " (%s) with %" PRIu64
                         " writes, %u at a time",
                         o->from, target, strempty(o->reason), target - o->from, f->parallel);
                if ((r = write_up_to(b, target)) < 0)
                        return r;
        }
        /* The key goes (one more revision), then everything up to here is compacted. */
        if ((r = call(b, "/v3/kv/deleterange", del, 10 * USEC_PER_SEC, NULL)) < 0 ||
            (r = current_revision(b, &o->rev)) < 0)
                return log_error_errno(r, "cannot finish the bump");
        compact = compaction_body(o->rev);
        r = compact ? call(b, "/v3/kv/compaction", compact, 120 * USEC_PER_SEC, NULL) : -ENOMEM;
        if (r == -ESTALE) /* compacted there already: a run after a restart */
                r = 0;
        if (r < 0)
                return log_error_errno(r, "cannot compact at revision %" PRIu64, o->rev);
        return 0;
}

static int bump_run(const Flags *f)
{
        _cleanup_(loop_unrefp) Loop *loop = nodecmd_loop_new();
        _cleanup_free_ char *data_dir = realpath(f->data_dir, NULL);
        /* The sockets live in a private temporary dir: short paths, nothing in the data dir. */
        const char *tmpdir = getenv("TMPDIR");
        _cleanup_free_ char *dir = strdup_printf("%s/etcd-bump-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
        _cleanup_free_ char *sock = NULL, *key64 = base64_encode(BUMP_KEY, strlen(BUMP_KEY));
        _cleanup_free_ char *val64 = base64_encode("x", 1), *put = NULL;
        usec_t start = now_usec(CLOCK_MONOTONIC);
        Outcome o = {.path = "unavailable"};
        int r;

        if (!data_dir)
                return log_error_errno(-errno, "cannot resolve --data-dir %s", f->data_dir), EXIT_RUNTIME;
        if (!loop || !dir || !key64 || !val64)
                return log_error_errno(-ENOMEM, "out of memory"), EXIT_RUNTIME;
        if (!mkdtemp(dir))
                return log_error_errno(-errno, "cannot create a private socket dir %s", dir), EXIT_RUNTIME;
        sock = strdup_printf("%s/localhost:1", dir);
        put = kv_body(key64, val64);
        Bump b = {.f = f, .loop = loop, .dir = dir, .sock = sock, .put_body = put};
        r = sock && put ? start_etcd(&b, data_dir) : -ENOMEM;
        if (r >= 0)
                r = bump_work(&b, key64, &o);
        stop_etcd(&b);
        if (r < 0) {
                free(o.reason);
                return EXIT_RUNTIME;
        }
        log_info("stopped the private etcd");
        if (streq(o.path, "unavailable"))
                log_warning(
                        "REVISION BUMP UNAVAILABLE: %s. Compacted at revision %" PRIu64
                        ": clients that saw a revision up to there relist; a client that saw a newer one "
                        "(from before the disaster) may miss changes until it relists: restart it.",
                        strempty(o.reason), o.rev);
        else
                log_info("revision bump done (%s): revision %" PRIu64 " -> %" PRIu64
                         ", compacted at %" PRIu64
                         ": every revision a client saw before the restore gets 410 Gone and relists",
                         o.path, o.from, o.rev, o.rev);
        write_status(f, o.path, strempty(o.reason), o.from, o.rev, o.rev, now_usec(CLOCK_MONOTONIC) - start);
        free(o.reason);
        return EXIT_OK;
}

static void help(FILE *out)
{
        (void) fprintf(
                out,
                "Usage: cluster-etcd-operator bump-revision --data-dir DIR --name NAME [FLAGS]\n"
                "\n"
                "Before a restored member serves: runs etcd privately on DIR (unix sockets only),\n"
                "writes until the revision passes maxRevision of the revision.json files plus a\n"
                "margin, then compacts there, so that every revision clients saw before the\n"
                "disaster answers 410 Gone. For etcd without etcdutl --bump-revision (3.4).\n"
                "\n"
                "  --data-dir DIR          the restored data dir (its member/ must exist)\n"
                "  --name NAME             the member's name\n"
                "  --revision-json FILE    where maxRevision comes from (repeatable; the highest wins)\n"
                "  --margin N              revisions added for writes after the last report (default: "
                "50000)\n"
                "  --max-writes N          refuse larger gaps: report the bump unavailable "
                "(default: 5000000)\n"
                "  --parallel N            puts in flight (default: 64)\n"
                "  --force-new-cluster     start the private etcd with it (a quorum restore)\n"
                "  --status-file FILE      the outcome as JSON\n"
                "  --timeout D             for the whole bump (default: 30m)\n"
                "\n"
                "Exit codes: 0 done (also when the bump is unavailable: it says so), 1 failed,\n"
                "2 usage error.\n");
}

static int parse_u64(const char *flag, const char *s, uint64_t min, uint64_t *ret)
{
        if (safe_atou64(s, ret) < 0 || *ret < min) {
                log_error("%s: \"%s\" is not a number of at least %" PRIu64, flag, s, min);
                return -EINVAL;
        }
        return 0;
}

static int bump_main(int argc, char *argv[])
{
        enum {
                ARG_DATA = 0x100,
                ARG_NAME,
                ARG_REVJSON,
                ARG_MARGIN,
                ARG_MAX,
                ARG_PARALLEL,
                ARG_FORCE,
                ARG_STATUS,
                ARG_TIMEOUT,
        };
        static const struct option options[] = {
                {"data-dir", required_argument, NULL, ARG_DATA},
                {"name", required_argument, NULL, ARG_NAME},
                {"revision-json", required_argument, NULL, ARG_REVJSON},
                {"margin", required_argument, NULL, ARG_MARGIN},
                {"max-writes", required_argument, NULL, ARG_MAX},
                {"parallel", required_argument, NULL, ARG_PARALLEL},
                {"force-new-cluster", no_argument, NULL, ARG_FORCE},
                {"status-file", required_argument, NULL, ARG_STATUS},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        Flags f = {
                .margin = 50000, .max_writes = 5000000, .parallel = 64, .timeout = 30 * 60 * USEC_PER_SEC};
        uint64_t v = 0;
        int c, r = -1;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while (r < 0 && (c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        r = EXIT_OK;
                        break;
                case ARG_DATA:
                        f.data_dir = optarg;
                        break;
                case ARG_NAME:
                        f.name = optarg;
                        break;
                case ARG_REVJSON:
                        if (strlist_add_csv(&f.revision_json, optarg) < 0)
                                r = EXIT_RUNTIME;
                        break;
                case ARG_MARGIN:
                        if (parse_u64("--margin", optarg, 0, &f.margin) < 0)
                                r = EXIT_USAGE;
                        break;
                case ARG_MAX:
                        if (parse_u64("--max-writes", optarg, 0, &f.max_writes) < 0)
                                r = EXIT_USAGE;
                        break;
                case ARG_PARALLEL:
                        if (parse_u64("--parallel", optarg, 1, &v) < 0 || v > 1024) {
                                log_error("--parallel: 1 to 1024");
                                r = EXIT_USAGE;
                        }
                        f.parallel = (unsigned) v;
                        break;
                case ARG_FORCE:
                        f.force_new_cluster = true;
                        break;
                case ARG_STATUS:
                        f.status_file = optarg;
                        break;
                case ARG_TIMEOUT:
                        if (parse_duration(optarg, &f.timeout) < 0 || f.timeout < USEC_PER_SEC) {
                                log_error("--timeout: \"%s\" is not a duration of at least 1s (e.g. 30m)",
                                          optarg);
                                r = EXIT_USAGE;
                        }
                        break;
                default:
                        nodecmd_flag_error("bump-revision", c, argv);
                        r = EXIT_USAGE;
                }
        if (r < 0 && optind < argc) {
                log_error("bump-revision takes no arguments; see --help");
                r = EXIT_USAGE;
        }
        if (r < 0 && (!f.data_dir || !*f.data_dir || !f.name || !*f.name)) {
                log_error("bump-revision: --data-dir and --name are required");
                r = EXIT_USAGE;
        }
        if (r < 0) {
                _cleanup_free_ char *member = strdup_printf("%s/member", f.data_dir);
                struct stat st;
                if (!member || stat(member, &st) < 0 || !S_ISDIR(st.st_mode)) {
                        log_error("bump-revision: %s/member does not exist: nothing to bump", f.data_dir);
                        r = EXIT_RUNTIME;
                } else
                        r = bump_run(&f);
        }
        strlist_done(&f.revision_json);
        return r;
}

const Command cmd_bump_revision = {
        .name = "bump-revision",
        .summary = "bump and compact a restored member's revisions before it serves (etcd 3.4)",
        .run = bump_main,
};
