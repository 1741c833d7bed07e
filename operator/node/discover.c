/* `cluster-etcd-operator discover-etcd-initial-cluster`: run by the etcd
 * container before etcd itself; its stdout becomes ETCD_INITIAL_CLUSTER. It
 * asks the running members for the member list every --interval until
 * --timeout, finds this node by its peer URL (https://HOST:PORT), looks at
 * the data dir and the local cluster ID (<data-dir>/revision.json, written
 * by `rev`), and follows the decision table in node-etcd.c:
 *   - added but not started, no data: print every started member plus itself;
 *   - started with its data: print nothing (etcd restarts on its data);
 *   - started, but revision.json names another cluster: never start on that
 *     data; wait (rev may rewrite a stale file) and exit 1 at the timeout;
 *   - started but the data is gone: exit 1 (the member must be re-added);
 *   - not in the list (removed) or added-not-started, with data: move
 *     <data-dir>/member aside to member-removed-archive-<timestamp>, then
 *     carry on (usually: wait to be added again);
 *   - not in the list, no data: wait for the operator to add it;
 *   - no endpoint answers: start on existing data, or wait when there is none.
 *
 * Member lists are serializable (no quorum needed), as upstream's: a member
 * restarting while its peers have no leader must still learn it may start.
 * Such a list can be stale, and a stale list must never make us move good
 * data aside: before any archive the decision is confirmed on a list read
 * from a member right after a linearizable (quorum) read on it, which makes
 * that member catch up with every committed membership change first. If no
 * quorum read succeeds, nothing is moved. Nothing is ever deleted.
 *
 * The peer URL is https://HOST:2380 as upstream's; --target-peer-url-port
 * exists for test clusters on random ports. Only the initial-cluster string
 * goes to stdout; logs go to stderr. */
#include <getopt.h>
#include <inttypes.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/strlist.h"
#include "etcd-flags.h"
#include "etcd/client.h"
#include "etcd/sync.h"
#include "node-etcd.h"
#include "node-util.h"
#include "node.h"

#define CALL_TIMEOUT (5 * USEC_PER_SEC)

#define ETCD_FLAGS NODECMD_ETCD_ENDPOINTS

typedef struct Flags {
        const char *data_dir, *host, *name;
        NodeCmdEtcdFlags etcd;
        unsigned port;
        usec_t timeout, interval;
} Flags;

typedef struct Discover {
        const Flags *f;
        Loop *loop;
        EtcdClient *client;
        char *peer_url;
        usec_t deadline;
        char *last_members; /* what was last logged at info, so that waiting stays quiet */
        int last_unreachable;
} Discover;

static usec_t remaining(const Discover *d)
{
        usec_t now = now_usec(CLOCK_MONOTONIC);
        return now < d->deadline ? d->deadline - now : 0;
}

/* A serializable member list from `endpoint` (NULL: the first that answers),
 * within what is left of --timeout. */
static int member_list(Discover *d, const char *endpoint, EtcdMemberList **ret)
{
        if (remaining(d) < USEC_PER_MSEC)
                return -ETIMEDOUT; /* a timeout of 0 would mean the client's default */
        int r = etcd_sync_member_list(d->client, endpoint, MIN(remaining(d), CALL_TIMEOUT), ret);
        if (r < 0)
                log_debug("member list: %s", etcd_strerror(r));
        return r;
}

/* Errors that mean no endpoint answered at all (the client already tried them all). */
static bool is_unreachable(int e)
{
        return e == -ECONNREFUSED || e == -EHOSTUNREACH || e == -ETIMEDOUT || e == -ECONNRESET ||
               e == -EPROTO || e == -EIO;
}

static int load_local_cluster_id(const Flags *f, uint64_t *ret)
{
        int r = nodecmd_revision_read_cluster_id(f->data_dir, ret);
        if (r == -ENOENT || r == -ENOTDIR) {
                *ret = 0;
                return 0;
        }
        if (r < 0) {
                log_warning("cannot read %s/revision.json (%s); treating the local cluster ID as unknown",
                            f->data_dir, strerror(-r));
                *ret = 0;
        }
        return 0;
}

/* A linearizable read on `endpoint`: it succeeds only once that member has
 * applied everything committed before it. */
static int quorum_read(Discover *d, const char *endpoint)
{
        if (remaining(d) < USEC_PER_MSEC)
                return -ETIMEDOUT;
        int r = etcd_sync_quorum_read(d->client, endpoint, MIN(remaining(d), CALL_TIMEOUT));
        if (r < 0)
                log_info("no quorum read on %s: %s", endpoint, etcd_strerror(r));
        return r;
}

/* Reads the member list again from a member that just served a quorum read
 * (so it has applied every committed membership change) and decides again. */
static int confirm(Discover *d, const NodeCmdDiscoverInput *first, NodeCmdDiscoverResult *ret)
{
        const StrList *eps = &d->f->etcd.endpoints;

        for (size_t i = 0; i < eps->n && remaining(d) > 0; i++) {
                _cleanup_(etcd_member_list_freep) EtcdMemberList *l = NULL;
                if (quorum_read(d, eps->v[i]) < 0)
                        continue;
                int r = member_list(d, eps->v[i], &l);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        log_info("cannot list members on %s after the quorum read: %s", eps->v[i],
                                 etcd_strerror(r));
                        continue;
                }
                NodeCmdDiscoverInput in = *first;
                in.members = l;
                log_info("confirming on %s, right after a quorum read there", eps->v[i]);
                return nodecmd_discover_decide(&in, ret);
        }
        log_warning("no member served a quorum read; not moving anything");
        return -ENOLINK;
}

/* The member list at info when it differs from the last one logged, else at debug. */
static void log_members(Discover *d, const EtcdMemberList *l)
{
        char hex[17], id[17];
        Buf b = BUF_INIT(64 * 1024);

        (void) buf_append(&b, "", 0);
        for (size_t i = 0; i < l->n_members; i++) {
                const EtcdMember *m = &l->members[i];
                _cleanup_free_ char *line = strdup_printf(
                        "; %s name=%s peerURLs=%s%s%s", etcd_id_to_hex(m->id, id),
                        m->name ? m->name : "(unstarted)", m->n_peer_urls ? m->peer_urls[0] : "",
                        m->n_peer_urls > 1 ? ",..." : "", m->is_learner ? " learner" : "");
                if (line)
                        (void) buf_append(&b, line, strlen(line));
        }
        _cleanup_free_ char *summary = buf_steal(&b);
        bool changed = !streq_ptr(summary, d->last_members);
        (void) log_internal(changed ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG, 0, __FILE__, __LINE__,
                            "cluster %s has %zu members (answered by %s)%s",
                            etcd_id_to_hex(l->cluster_id, hex), l->n_members,
                            etcd_id_to_hex(l->responder_id, id), strempty(summary));
        if (changed) {
                free(d->last_members);
                d->last_members = TAKE_PTR(summary);
        }
}

/* Moves the data aside after confirming; returns 1 when it moved it. */
static int archive(Discover *d, const NodeCmdDiscoverInput *in, const NodeCmdDiscoverResult *first)
{
        NodeCmdDiscoverResult again = {};
        _cleanup_free_ char *path = NULL;
        int r;

        r = confirm(d, in, &again);
        if (r < 0)
                return 0;
        bool same = again.action == NODECMD_DISCOVER_ARCHIVE;
        if (!same)
                log_warning("a current member list says %s, not archive (%s); not moving anything",
                            nodecmd_discover_action_to_string(again.action), again.reason);
        nodecmd_discover_result_done(&again);
        if (!same)
                return 0;
        log_warning("moving %s/member aside: %s", d->f->data_dir, first->reason);
        r = nodecmd_data_dir_archive(d->f->data_dir, now_usec(CLOCK_REALTIME), &path);
        if (r < 0)
                return log_error_errno(r, "cannot move %s/member aside", d->f->data_dir);
        log_warning("moved %s/member to %s (nothing was deleted)", d->f->data_dir, path);
        return 1;
}

enum {
        STEP_WAIT = -1,  /* ask again after --interval */
        STEP_AGAIN = -2, /* the data dir moved: ask again at once */
};

static void set_last(char **last, char *reason)
{
        free(*last);
        *last = reason;
}

/* One member list and what follows from it: an exit code, or STEP_*. */
static int step(Discover *d, unsigned attempt, char **last)
{
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = NULL;
        const Flags *f = d->f;
        NodeCmdDiscoverInput in = {.target_peer_url = d->peer_url, .target_name = f->name};
        _cleanup_(nodecmd_discover_result_done) NodeCmdDiscoverResult res = {};
        int r;

        if ((r = nodecmd_data_dir_present(f->data_dir, &in.data_present)) < 0)
                return log_error_errno(r, "cannot inspect %s/member", f->data_dir), EXIT_RUNTIME;
        (void) load_local_cluster_id(f, &in.local_cluster_id);
        r = member_list(d, NULL, &l);
        if (r == -ENOMEM)
                return log_error_errno(r, "out of memory"), EXIT_RUNTIME;
        if (r < 0 && (!is_unreachable(r) || remaining(d) == 0)) {
                /* An answer we cannot use, or our own deadline: neither says the cluster is down. */
                set_last(last, strdup_printf("member list failed: %s", etcd_strerror(r)));
                log_warning("attempt %u: %s", attempt, strempty(*last));
                return STEP_WAIT;
        }
        if (r < 0) {
                bool changed = d->last_unreachable != r;
                d->last_unreachable = r;
                (void) log_internal(changed ? LOG_LEVEL_WARNING : LOG_LEVEL_DEBUG, 0, __FILE__, __LINE__,
                                    "attempt %u: no etcd endpoint answered (%s)", attempt, etcd_strerror(r));
        } else {
                d->last_unreachable = 0;
                in.members = l;
                log_members(d, l);
        }

        if ((r = nodecmd_discover_decide(&in, &res)) < 0)
                return log_error_errno(r, "out of memory"), EXIT_RUNTIME;
        switch (res.action) {
        case NODECMD_DISCOVER_PRINT:
                log_info("%s", res.reason);
                if (*res.initial_cluster) {
                        log_info("initial cluster: %s", res.initial_cluster);
                        printf("%s\n", res.initial_cluster);
                }
                return fflush(stdout) == 0 && !ferror(stdout) ? EXIT_OK : EXIT_RUNTIME;
        case NODECMD_DISCOVER_FAIL:
                log_error("%s", res.reason);
                return EXIT_RUNTIME;
        case NODECMD_DISCOVER_ARCHIVE:
                r = archive(d, &in, &res);
                if (r < 0)
                        return EXIT_RUNTIME;
                if (r > 0)
                        return STEP_AGAIN;
                set_last(last, strdup_printf("%s, but that could not be confirmed", res.reason));
                return STEP_WAIT;
        default:
                (void) log_internal(streq_ptr(*last, res.reason) ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO, 0,
                                    __FILE__, __LINE__, "attempt %u: %s", attempt, res.reason);
                set_last(last, TAKE_PTR(res.reason));
                return STEP_WAIT;
        }
}

static int discover_loop(Discover *d)
{
        _cleanup_free_ char *last = NULL;

        for (unsigned attempt = 1;; attempt++) {
                int r = step(d, attempt, &last);
                if (r == STEP_AGAIN)
                        continue;
                if (r != STEP_WAIT)
                        return r;
                if (remaining(d) <= d->f->interval)
                        break;
                bool never = false;
                (void) loop_run_until(d->loop, &never, d->f->interval);
        }
        log_error("timed out after %" PRIu64 " s: %s", d->f->timeout / USEC_PER_SEC,
                  last ? last : "no answer");
        return EXIT_RUNTIME;
}

static int discover_run(const Flags *f)
{
        _cleanup_free_ char *peer_url = NULL;
        Discover d = {.f = f};
        int r;

        peer_url = etcd_peer_url(f->host, f->port);
        if (!peer_url)
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        d.peer_url = peer_url;
        d.loop = nodecmd_loop_new();
        d.client = d.loop ? etcd_client_new(d.loop, &f->etcd.tls) : NULL;
        if (!d.client) {
                d.loop = loop_unref(d.loop);
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        }
        r = etcd_client_set_endpoints(d.client, f->etcd.endpoints.v, f->etcd.endpoints.n);
        if (r < 0) {
                log_error("--endpoints: not a list of client URLs such as https://10.0.0.1:2379: %s",
                          f->etcd.endpoints.v[0]);
                r = EXIT_USAGE;
        } else {
                d.deadline = now_usec(CLOCK_MONOTONIC) + f->timeout;
                log_info("looking for %s (%s) in the member list at %s, for up to %" PRIu64 " s", f->name,
                         peer_url, f->etcd.endpoints.v[0], f->timeout / USEC_PER_SEC);
                r = discover_loop(&d);
        }
        d.client = etcd_client_free(d.client); /* completes abandoned calls */
        free(d.last_members);
        d.loop = loop_unref(d.loop);
        return r;
}

static void help(FILE *out)
{
        (void) fprintf(out,
                       "Usage: cluster-etcd-operator discover-etcd-initial-cluster [FLAGS]\n"
                       "\n"
                       "Prints ETCD_INITIAL_CLUSTER for this member on stdout (nothing when etcd should\n"
                       "restart on its existing data), after waiting for it to be added to the cluster.\n"
                       "Moves <data-dir>/member aside to <data-dir>/member-removed-archive-<time> when the\n"
                       "member was removed or never started; never deletes anything.\n"
                       "\n");
        nodecmd_etcd_flags_help(out, ETCD_FLAGS, 31);
        (void) fprintf(out,
                       "  --data-dir DIR               this member's data dir (required)\n"
                       "  --target-peer-url-host HOST  this member's peer host, IP or name (required)\n"
                       "  --target-peer-url-port N     its peer port (default: 2380)\n"
                       "  --target-name NAME           its member name (required)\n"
                       "  --timeout D                  give up after D (default: 135s)\n"
                       "  --interval D                 between member lists (default: 1s)\n"
                       "  -v=N                         log verbosity (4 and up: debug)\n"
                       "  -h, --help                   this text\n"
                       "\n"
                       "Exit codes: 0 printed (possibly nothing), 1 failure or timeout, 2 usage error.\n");
}

static int parse_flags(int argc, char *argv[], Flags *f)
{
        enum { ARG_DATA = 0x100, ARG_HOST, ARG_PORT, ARG_NAME, ARG_TIMEOUT, ARG_INTERVAL };
        static const struct option options[] = {
                NODECMD_ETCD_OPTIONS_ENDPOINTS,
                NODECMD_ETCD_OPTIONS_TLS,
                {"data-dir", required_argument, NULL, ARG_DATA},
                {"target-peer-url-host", required_argument, NULL, ARG_HOST},
                {"target-peer-url-port", required_argument, NULL, ARG_PORT},
                {"target-name", required_argument, NULL, ARG_NAME},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"interval", required_argument, NULL, ARG_INTERVAL},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                usec_t *dst = NULL;
                switch (c) {
                case 'h':
                        help(stdout);
                        return 0;
                case ARG_DATA:
                        f->data_dir = optarg;
                        break;
                case ARG_HOST:
                        f->host = optarg;
                        break;
                case ARG_NAME:
                        f->name = optarg;
                        break;
                case ARG_PORT: {
                        char *end = NULL;
                        unsigned long p = strtoul(optarg, &end, 10);
                        if (!*optarg || *end || p == 0 || p > 65535) {
                                log_error("--target-peer-url-port: \"%s\" is not a port (1-65535)", optarg);
                                return -EXIT_USAGE;
                        }
                        f->port = (unsigned) p;
                        break;
                }
                case ARG_TIMEOUT:
                        dst = &f->timeout;
                        break;
                case ARG_INTERVAL:
                        dst = &f->interval;
                        break;
                default:
                        if (nodecmd_etcd_flags_take(&f->etcd, c, optarg))
                                break;
                        nodecmd_flag_error("discover-etcd-initial-cluster", c, argv);
                        return -EXIT_USAGE;
                }
                if (dst && (parse_duration(optarg, dst) < 0 || *dst == 0)) {
                        log_error("--%s: \"%s\" is not a duration such as 135s or 1s",
                                  c == ARG_TIMEOUT ? "timeout" : "interval", optarg);
                        return -EXIT_USAGE;
                }
        }
        if (optind < argc) {
                log_error("discover-etcd-initial-cluster: unexpected argument \"%s\"; see --help",
                          argv[optind]);
                return -EXIT_USAGE;
        }
        int r = nodecmd_etcd_flags_check(&f->etcd);
        if (r < 0)
                return -nodecmd_etcd_flags_exit(r, EXIT_USAGE);
        const struct {
                const char *value, *flag, *example;
        } required[] = {
                {f->data_dir, "data-dir", "/var/lib/etcd"},
                {f->host, "target-peer-url-host", "this node's IP, as in its peer URL"},
                {f->name, "target-name", "the node name, which is the member name"},
        };
        for (size_t i = 0; i < ELEMENTSOF(required); i++)
                if (!required[i].value || !*required[i].value) {
                        log_error("--%s is required (%s)", required[i].flag, required[i].example);
                        return -EXIT_USAGE;
                }
        if (strchr(f->host, '/') || strchr(f->host, '@')) {
                log_error("--target-peer-url-host: \"%s\" is a host, not a URL (e.g. 10.0.0.1 or [fd00::1])",
                          f->host);
                return -EXIT_USAGE;
        }
        return 1;
}

static int discover_main(int argc, char *argv[])
{
        Flags f = {.port = 2380,
                   .timeout = 135 * USEC_PER_SEC,
                   .interval = USEC_PER_SEC,
                   .etcd = {.command = "discover-etcd-initial-cluster", .features = ETCD_FLAGS}};
        int r;

        argc = cmd_take_verbosity(argc, argv);
        r = parse_flags(argc, argv, &f);
        if (r > 0)
                r = discover_run(&f);
        else
                r = -r;
        nodecmd_etcd_flags_done(&f.etcd);
        return r;
}

const Command cmd_discover_etcd_initial_cluster = {
        .name = "discover-etcd-initial-cluster",
        .summary = "print ETCD_INITIAL_CLUSTER for this member once it is added (etcd pod)",
        .run = discover_main,
};
