/* `cluster-etcd-operator rev`: the etcd pod's sidecar that remembers how far
 * the cluster got. Every --interval it asks every endpoint for its status
 * (in parallel, each with a timeout) and, when at least one answered, writes
 * <data-dir>/revision.json atomically: the cluster ID, the raft index per
 * endpoint and their maximum, and when. Restores use maxRaftIndex to bump
 * revisions past anything a client saw; discover-etcd-initial-cluster reads
 * clusterId as the cluster the local data belongs to. Rounds never overlap;
 * an endpoint whose cluster ID differs from the first answer is left out.
 * SIGTERM/SIGINT exit 0. See node-etcd.h for the file's format. */
#include <getopt.h>
#include <inttypes.h>

#include "base/fileio.h"
#include "base/log.h"
#include "etcd-flags.h"
#include "etcd/client.h"
#include "host/process.h"
#include "node-etcd.h"
#include "node-util.h"
#include "node.h"

#define ETCD_FLAGS (NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_TLS_ALIASES)

typedef struct Flags {
        const char *data_dir, *output;
        NodeCmdEtcdFlags etcd;
        usec_t interval;
} Flags;

typedef struct Rev Rev;

typedef struct Answer {
        Rev *rev;
        size_t index;
        bool done;
        int error;
        EtcdStatus status;
} Answer;

struct Rev {
        const Flags *f;
        Loop *loop;
        EtcdClient *client;
        sd_event_source *timer;
        char *output;
        Answer *answers; /* one per endpoint while a round runs, else NULL */
        size_t pending;
        int *last_error; /* per endpoint, so that a down member is reported once */
        bool stopping;
        unsigned written;
};

static void round_finish(Rev *rv)
{
        const Flags *f = rv->f;
        NodeCmdRevision out = {.created = now_usec(CLOCK_REALTIME)};
        _cleanup_free_ char *json = NULL;
        bool have_id = false;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < f->etcd.endpoints.n; i++) {
                Answer *a = &rv->answers[i];
                if (!rv->stopping && a->error != rv->last_error[i]) {
                        if (a->error < 0)
                                log_warning("status of %s: %s", f->etcd.endpoints.v[i],
                                            etcd_strerror(a->error));
                        else if (rv->last_error[i] < 0)
                                log_info("status of %s: answering again", f->etcd.endpoints.v[i]);
                        rv->last_error[i] = a->error;
                }
                if (a->error < 0)
                        continue;
                if (have_id && a->status.cluster_id != out.cluster_id) {
                        char x[17], y[17];
                        log_warning("%s answers for cluster %s, %s for cluster %s; leaving %s out",
                                    f->etcd.endpoints.v[i], etcd_id_to_hex(a->status.cluster_id, x),
                                    out.endpoints[0].endpoint, etcd_id_to_hex(out.cluster_id, y),
                                    f->etcd.endpoints.v[i]);
                        continue;
                }
                out.cluster_id = a->status.cluster_id;
                have_id = true;
                r = nodecmd_revision_add(&out, f->etcd.endpoints.v[i], a->status.raft_index);
                out.max_revision = MAX(out.max_revision, a->status.revision);
        }
        for (size_t i = 0; i < f->etcd.endpoints.n; i++)
                etcd_status_done(&rv->answers[i].status);
        rv->answers = mfree(rv->answers);
        if (rv->stopping) {
                nodecmd_revision_done(&out);
                return;
        }
        if (r >= 0 && out.n_endpoints == 0) {
                log_error("no endpoint answered; %s left as it was", rv->output);
                nodecmd_revision_done(&out);
                return;
        }
        if (r >= 0)
                r = nodecmd_revision_encode(&out, &json);
        if (r >= 0)
                r = write_file_atomic(rv->output, json, strlen(json), 0644);
        if (r < 0)
                log_error_errno(r, "cannot write %s", rv->output);
        else {
                rv->written++;
                log_debug("wrote %s: maxRaftIndex %" PRIu64 " from %zu of %zu endpoints", rv->output,
                          out.max_raft_index, out.n_endpoints, f->etcd.endpoints.n);
                if (rv->written == 1)
                        log_info("wrote %s (maxRaftIndex %" PRIu64 "); refreshing every %" PRIu64 " ms",
                                 rv->output, out.max_raft_index, f->interval / USEC_PER_MSEC);
        }
        nodecmd_revision_done(&out);
}

static void on_status(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        Answer *a = userdata;
        Rev *rv = a->rev;
        (void) c;
        a->done = true;
        a->error = resp->error;
        if (resp->error >= 0)
                a->error = etcd_parse_status(resp->body, &a->status);
        if (--rv->pending == 0)
                round_finish(rv);
}

static void round_start(Rev *rv)
{
        const Flags *f = rv->f;

        if (rv->answers) {
                log_warning("the previous status round has not finished; skipping this one");
                return;
        }
        rv->answers = calloc(f->etcd.endpoints.n, sizeof *rv->answers);
        if (!rv->answers) {
                log_error("out of memory");
                return;
        }
        /* Count first: a call may fail synchronously, and the round ends when the count hits 0. */
        rv->pending = f->etcd.endpoints.n + 1;
        for (size_t i = 0; i < f->etcd.endpoints.n; i++) {
                Answer *a = &rv->answers[i];
                *a = (Answer){.rev = rv, .index = i};
                int r = etcd_status(rv->client, f->etcd.endpoints.v[i], on_status, a);
                if (r < 0) {
                        a->error = r;
                        rv->pending--;
                }
        }
        if (--rv->pending == 0)
                round_finish(rv);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Rev *rv = userdata;
        round_start(rv);
        int r = sd_event_source_set_time(s, usec + rv->f->interval);
        return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int rev_run(const Flags *f)
{
        Rev rv = {.f = f};
        int r;

        rv.output = f->output ? strdup(f->output) : nodecmd_revision_path(f->data_dir);
        rv.last_error = calloc(f->etcd.endpoints.n, sizeof *rv.last_error);
        rv.loop = rv.output && rv.last_error ? nodecmd_loop_new() : NULL;
        rv.client = rv.loop ? etcd_client_new(rv.loop, &f->etcd.tls) : NULL;
        if (!rv.client) {
                log_error("out of memory");
                r = EXIT_RUNTIME;
        } else if (etcd_client_set_endpoints(rv.client, f->etcd.endpoints.v, f->etcd.endpoints.n) < 0) {
                log_error("--endpoints: not a list of client URLs such as https://10.0.0.1:2379: %s",
                          f->etcd.endpoints.v[0]);
                r = EXIT_USAGE;
        } else {
                /* Each status gets at most one interval (and 10 s), so rounds end before the next. */
                etcd_client_set_timeout(rv.client, MIN(f->interval, 10 * USEC_PER_SEC));
                r = host_exit_on_signals(rv.loop);
                if (r >= 0)
                        r = sd_event_add_time(loop_get_event(rv.loop), &rv.timer, CLOCK_MONOTONIC,
                                              now_usec(CLOCK_MONOTONIC), USEC_PER_MSEC, on_timer, &rv);
                if (r < 0) {
                        log_error_errno(r, "cannot set up the loop");
                        r = EXIT_RUNTIME;
                } else {
                        log_info("writing %s every %" PRIu64 " ms from %zu endpoints", rv.output,
                                 f->interval / USEC_PER_MSEC, f->etcd.endpoints.n);
                        r = loop_run(rv.loop);
                        if (r < 0)
                                log_error_errno(r, "event loop failed");
                        r = r < 0 ? EXIT_RUNTIME : EXIT_OK;
                }
        }
        rv.stopping = true;
        rv.timer = sd_event_source_disable_unref(rv.timer);
        rv.client = etcd_client_free(rv.client); /* completes a round in flight with -ECANCELED */
        rv.loop = loop_unref(rv.loop);
        free(rv.output);
        free(rv.last_error);
        return r;
}

static void help(FILE *out)
{
        (void) fprintf(out,
                       "Usage: cluster-etcd-operator rev [FLAGS]\n"
                       "\n"
                       "Every --interval, asks every endpoint for its status and writes\n"
                       "<data-dir>/revision.json atomically:\n"
                       "  {\"clusterId\":\"<decimal>\",\"raftIndex\":{\"<endpoint>\":N},\"maxRaftIndex\":N,"
                       "\"created\":\"<RFC 3339>\"}\n"
                       "\n");
        nodecmd_etcd_flags_help(out, ETCD_FLAGS, 26);
        (void) fprintf(out,
                       "  --data-dir DIR          where revision.json goes (default: /var/lib/etcd)\n"
                       "  --output-file PATH      write here instead of <data-dir>/revision.json\n"
                       "  --interval D            between rounds (default: 10s; alias --poll-interval)\n"
                       "  -v=N                    log verbosity (4 and up: debug)\n"
                       "  -h, --help              this text\n"
                       "\n"
                       "Exit codes: 0 stopped by SIGTERM/SIGINT, 1 runtime failure, 2 usage error.\n");
}

static int rev_main(int argc, char *argv[])
{
        enum { ARG_DATA = 0x100, ARG_OUTPUT, ARG_INTERVAL };
        static const struct option options[] = {
                NODECMD_ETCD_OPTIONS_ENDPOINTS,
                NODECMD_ETCD_OPTIONS_TLS,
                NODECMD_ETCD_OPTIONS_TLS_ALIASES,
                {"data-dir", required_argument, NULL, ARG_DATA},
                {"output-file", required_argument, NULL, ARG_OUTPUT},
                {"interval", required_argument, NULL, ARG_INTERVAL},
                {"poll-interval", required_argument, NULL, ARG_INTERVAL},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        Flags f = {.data_dir = "/var/lib/etcd",
                   .etcd = {.command = "rev", .features = ETCD_FLAGS},
                   .interval = 10 * USEC_PER_SEC};
        int c, e, r = -1;

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
                case ARG_OUTPUT:
                        f.output = optarg;
                        break;
                case ARG_INTERVAL:
                        if (parse_duration(optarg, &f.interval) < 0 || f.interval < 100 * USEC_PER_MSEC) {
                                log_error(
                                        "--interval: \"%s\" is not a duration of at least 100ms (e.g. 10s)",
                                        optarg);
                                r = EXIT_USAGE;
                        }
                        break;
                default:
                        if (nodecmd_etcd_flags_take(&f.etcd, c, optarg))
                                break;
                        nodecmd_flag_error("rev", c, argv);
                        r = EXIT_USAGE;
                }
        if (r < 0 && optind < argc) {
                log_error("rev: unexpected argument \"%s\"; see --help", argv[optind]);
                r = EXIT_USAGE;
        }
        if (r < 0 && (!f.data_dir || !*f.data_dir)) {
                log_error("--data-dir must not be empty (e.g. /var/lib/etcd)");
                r = EXIT_USAGE;
        }
        if (r < 0 && (e = nodecmd_etcd_flags_check(&f.etcd)) < 0)
                r = nodecmd_etcd_flags_exit(e, EXIT_USAGE);
        if (r < 0)
                r = rev_run(&f);
        nodecmd_etcd_flags_done(&f.etcd);
        return r;
}

const Command cmd_rev = {
        .name = "rev",
        .summary = "write revision.json (cluster ID, raft indexes) every 10 s (etcd pod sidecar)",
        .run = rev_main,
};
