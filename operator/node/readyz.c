/* `cluster-etcd-operator readyz`: the etcd pod's probe sidecar. It serves
 * /readyz (and /healthz) on --listen-port with the project's HTTP server,
 * and answers /readyz from a serializable range read of key "health" on the
 * local member (no quorum needed, as upstream: one member's readiness must
 * not depend on its peers), with a short timeout.
 *
 * The HTTP server answers on the loop and cannot wait for an etcd call, so
 * the check runs on a timer every --interval (one at a time) and /readyz
 * reports the latest result: 200 "ok", or 503 with the error. A result
 * older than three intervals plus the timeout is stale and answers 503, so
 * a wedged checker cannot keep a member ready. The first check starts at
 * once.
 *
 * /healthz is the etcd container's liveness probe. Upstream answers it with
 * the same read, so a member busy defragmenting a large database (which
 * blocks every read and status call for its duration) is restarted by its own
 * kubelet midway. Here each read goes with a member list, which etcd serves
 * from memory during a defragmentation: while that answers, the member
 * counts as alive for up to --busy-grace (5 min, beyond the operator's 4 min
 * defragmentation deadline) after its last good read. A member that answers
 * nothing, or no read for longer than that, is not alive. */
#include <arpa/inet.h>
#include <getopt.h>
#include <inttypes.h>

#include "base/fileio.h"
#include "base/log.h"
#include "etcd-flags.h"
#include "etcd/client.h"
#include "host/process.h"
#include "node-util.h"
#include "node.h"
#include "render/netutil.h"
#include "runtime/httpserver.h"

#define ETCD_FLAGS NODECMD_ETCD_TLS_ALIASES

typedef struct Flags {
        const char *target, *address, *serving_cert, *serving_key;
        const char *certified_as; /* the address the member's certificate names, if not --target's */
        unsigned port;
        usec_t timeout, interval, busy_grace;
        NodeCmdEtcdFlags etcd;
} Flags;

static void flags_done(Flags *f)
{
        nodecmd_etcd_flags_done(&f->etcd);
}

typedef struct Readyz {
        const Flags *f;
        Loop *loop;
        EtcdClient *client;
        HttpServer *http;
        sd_event_source *timer;
        bool in_flight;
        bool ok;
        usec_t checked_at; /* CLOCK_MONOTONIC of the last result; 0 = none yet */
        /* Liveness while reads fail: the member list answers (from memory, not the backend). */
        bool list_in_flight, list_ok;
        usec_t listed_at;     /* CLOCK_MONOTONIC of the last member list answer; 0 = none */
        usec_t reads_failing; /* CLOCK_MONOTONIC since when reads fail (0: the last one worked) */
        char live_body[600];
        char reason[512]; /* for the log */
        char body[514];   /* the 503 body: reason and a newline */
} Readyz;

static void on_check(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        Readyz *z = userdata;
        bool was_ok = z->ok, first = z->checked_at == 0;
        (void) c;

        z->in_flight = false;
        if (resp->error == -ECANCELED)
                return; /* shutting down */
        z->ok = resp->error >= 0;
        z->checked_at = now_usec(CLOCK_MONOTONIC);
        if (z->ok)
                z->reads_failing = 0;
        else if (!z->reads_failing)
                z->reads_failing = z->checked_at;
        if (z->ok)
                (void) snprintf(z->reason, sizeof z->reason, "ok");
        else
                (void) snprintf(z->reason, sizeof z->reason, "failed to get member health key: %s%s%s",
                                etcd_strerror(resp->error), resp->message ? ": " : "",
                                strempty(resp->message));
        if (first || was_ok != z->ok) {
                if (z->ok)
                        log_info("%s is ready", z->f->target);
                else
                        log_warning("%s is not ready: %s", z->f->target, z->reason);
        }
}

static void on_list(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        Readyz *z = userdata;
        (void) c;

        z->list_in_flight = false;
        if (resp->error == -ECANCELED)
                return; /* shutting down */
        z->list_ok = resp->error >= 0;
        z->listed_at = now_usec(CLOCK_MONOTONIC);
}

static void check_start(Readyz *z)
{
        /* Beside each read, what the member serves from memory: fresh the moment a read fails. */
        if (!z->list_in_flight && etcd_call(z->client, z->f->target, "/v3/cluster/member/list", NULL,
                                            ETCD_CALL_IDEMPOTENT, 0, on_list, z) >= 0)
                z->list_in_flight = true;
        if (z->in_flight)
                return; /* the previous check is still running; its timeout bounds it */
        int r = etcd_kv_range(z->client, z->f->target, "health", 6, NULL, 0, true, on_check, z);
        if (r < 0) {
                z->ok = false;
                z->checked_at = now_usec(CLOCK_MONOTONIC);
                (void) snprintf(z->reason, sizeof z->reason, "cannot start the health check: %s",
                                strerror(-r));
                return;
        }
        z->in_flight = true;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Readyz *z = userdata;
        check_start(z);
        int r = sd_event_source_set_time(s, usec + z->f->interval);
        return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static bool is_ready(void *userdata, const char **ret_reason)
{
        Readyz *z = userdata;
        usec_t max_age = 3 * z->f->interval + z->f->timeout + USEC_PER_SEC;

        if (z->checked_at == 0) {
                *ret_reason = "no health check has completed yet\n";
                return false;
        }
        if (now_usec(CLOCK_MONOTONIC) - z->checked_at > max_age) {
                *ret_reason = "the last health check is too old\n";
                return false;
        }
        (void) snprintf(z->body, sizeof z->body, "%s\n", z->reason);
        *ret_reason = z->body;
        return z->ok;
}

/* Alive: the last read worked; or reads have failed for less than --busy-grace and the
 * member still answers its member list (busy, e.g. defragmenting, not dead). */
static bool is_alive(void *userdata, const char **ret_reason)
{
        Readyz *z = userdata;
        usec_t now = now_usec(CLOCK_MONOTONIC), max_age = 3 * z->f->interval + z->f->timeout + USEC_PER_SEC;

        if (is_ready(userdata, ret_reason) || z->checked_at == 0)
                return true; /* before the first answer the startup probe is the judge */
        if (z->reads_failing && now - z->reads_failing < z->f->busy_grace && z->list_ok && z->listed_at &&
            now - z->listed_at <= max_age) {
                (void) snprintf(z->live_body, sizeof z->live_body,
                                "alive: reads fail for %" PRIu64 " s (%s) but the member answers\n",
                                (now - z->reads_failing) / USEC_PER_SEC, z->reason);
                *ret_reason = z->live_body;
                return true;
        }
        (void) snprintf(z->live_body, sizeof z->live_body, "not alive: %s%s\n", z->reason,
                        z->reads_failing && now - z->reads_failing >= z->f->busy_grace
                                ? " (for longer than --busy-grace)"
                                : "; the member does not answer");
        *ret_reason = z->live_body;
        return false;
}

static void readyz_done(Readyz *z)
{
        z->http = http_server_free(z->http);
        z->timer = sd_event_source_disable_unref(z->timer);
        z->client = etcd_client_free(z->client);
        z->loop = loop_unref(z->loop);
}

static int readyz_run(const Flags *f)
{
        _cleanup_free_ char *scert = NULL, *skey = NULL;
        _cleanup_(readyz_done) Readyz z = {.f = f};
        int r;

        if (f->serving_cert && ((r = read_full_file(f->serving_cert, 1 << 20, &scert, NULL)) < 0 ||
                                (r = read_full_file(f->serving_key, 1 << 20, &skey, NULL)) < 0)) {
                log_error("readyz: cannot read --serving-cert-file/--serving-key-file: %s", strerror(-r));
                return EXIT_USAGE;
        }
        z.loop = nodecmd_loop_new();
        z.client = z.loop ? etcd_client_new(z.loop, &f->etcd.tls) : NULL;
        if (!z.client)
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        char *endpoints[] = {(char *) f->target};
        if (etcd_client_set_endpoints(z.client, endpoints, 1) < 0) {
                log_error("--target: \"%s\" is not a client URL such as https://10.0.0.1:2379", f->target);
                return EXIT_USAGE;
        }
        if (f->certified_as) {
                /* The target's host, as the client's alias wants it (IPv6 without brackets). */
                const char *h = strstr(f->target, "://");
                EtcdAddressAlias a = {};
                h = h ? h + 3 : f->target;
                size_t len = *h == '[' ? strcspn(h + 1, "]") : strcspn(h, ":/");
                (void) snprintf(a.serves_on, sizeof a.serves_on, "%.*s",
                                (int) MIN(len, sizeof a.serves_on - 1), *h == '[' ? h + 1 : h);
                (void) snprintf(a.named, sizeof a.named, "%s", f->certified_as);
                if (len >= sizeof a.serves_on || strlen(f->certified_as) >= sizeof a.named ||
                    etcd_client_set_aliases(z.client, &a, 1) < 0) {
                        log_error("--target-certified-as: \"%s\" with --target \"%s\": both must be IP "
                                  "addresses (the address the member's certificate names, the one it serves "
                                  "on)",
                                  f->certified_as, f->target);
                        return EXIT_USAGE;
                }
        }
        etcd_client_set_timeout(z.client, f->timeout);

        sd_event *e = loop_get_event(z.loop);
        /* The server's limits as shipped (per client address, per request; httpserver.c says
         * why): every pod can reach this port, and etcd's liveness depends on it. */
        HttpServerConfig hc = {.address = f->address,
                               .port = (uint16_t) f->port,
                               .tls_cert_pem = scert,
                               .tls_key_pem = skey};
        r = http_server_new(e, &hc, &z.http);
        if (r < 0)
                return log_error_errno(r, "cannot listen on %s:%u", f->address, f->port), EXIT_RUNTIME;
        http_server_set_ready(z.http, is_ready, &z);
        http_server_set_live(z.http, is_alive, &z);
        if ((r = host_exit_on_signals(z.loop)) < 0 ||
            (r = sd_event_add_time(e, &z.timer, CLOCK_MONOTONIC, now_usec(CLOCK_MONOTONIC), USEC_PER_MSEC,
                                   on_timer, &z)) < 0)
                return log_error_errno(r, "cannot set up the loop"), EXIT_RUNTIME;
        log_info("serving /readyz on %s%s:%u for %s (check every %" PRIu64 " ms, timeout %" PRIu64 " ms)",
                 scert ? "https://" : "http://", f->address, http_server_get_port(z.http), f->target,
                 f->interval / USEC_PER_MSEC, f->timeout / USEC_PER_MSEC);
        r = loop_run(z.loop);
        if (r < 0)
                return log_error_errno(r, "event loop failed"), EXIT_RUNTIME;
        return EXIT_OK;
}

static void help(FILE *out)
{
        (void) fprintf(
                out,
                "Usage: cluster-etcd-operator readyz [FLAGS]\n"
                "\n"
                "Serves /readyz: 200 \"ok\" while a serializable read of key \"health\" on --target\n"
                "succeeds, 503 with the error otherwise (checked every --interval). Serves /healthz\n"
                "(the liveness probe): 200 while the read succeeds, and while reads fail for less than\n"
                "--busy-grace if the member still answers its member list (busy defragmenting, say).\n"
                "\n"
                "  --target URL             the member's client URL (default: https://localhost:2379)\n"
                "  --target-certified-as IP the address the member's certificate names, when --target's\n"
                "                           is another (its master moved; the certificate for the new\n"
                "                           address is not there yet): the certificate is checked for it\n"
                "                           when it is not one for --target's\n"
                "  --listen-port N          (default: 9980)\n"
                "  --listen-address IP      numeric address to listen on (default: 0.0.0.0; IPv6 also\n"
                "                           in brackets, as NODE_<n>_IP has it)\n");
        nodecmd_etcd_flags_help(out, ETCD_FLAGS, 27);
        (void) fprintf(
                out,
                "  --serving-cert-file FILE serve HTTPS with this certificate (with --serving-key-file)\n"
                "  --serving-key-file FILE\n"
                "  --timeout D              per check (default: 1s)\n"
                "  --interval D             between checks (default: 1s)\n"
                "  --busy-grace D           how long /healthz tolerates failing reads of a member that\n"
                "                           still answers (default: 5m)\n"
                "  -v=N                     log verbosity (4 and up: debug)\n"
                "  -h, --help               this text\n"
                "\n"
                "Exit codes: 0 stopped by SIGTERM/SIGINT, 1 runtime failure, 2 usage error.\n");
}

static int check_flags(const Flags *f)
{
        unsigned char a[16];

        if (inet_pton(AF_INET, f->address, a) != 1 && inet_pton(AF_INET6, f->address, a) != 1) {
                log_error("--listen-address: \"%s\" is not a numeric IPv4 or IPv6 address", f->address);
                return -EINVAL;
        }
        if (!f->serving_cert != !f->serving_key) {
                log_error("--serving-cert-file and --serving-key-file go together");
                return -EINVAL;
        }
        return 0;
}

static int readyz_main(int argc, char *argv[])
{
        enum {
                ARG_TARGET = 0x100,
                ARG_PORT,
                ARG_ADDRESS,
                ARG_SCERT,
                ARG_SKEY,
                ARG_TIMEOUT,
                ARG_INTERVAL,
                ARG_GRACE,
                ARG_CERTIFIED_AS,
        };
        static const struct option options[] = {
                {"target", required_argument, NULL, ARG_TARGET},
                {"target-certified-as", required_argument, NULL, ARG_CERTIFIED_AS},
                {"listen-port", required_argument, NULL, ARG_PORT},
                {"listen-address", required_argument, NULL, ARG_ADDRESS},
                NODECMD_ETCD_OPTIONS_TLS,
                NODECMD_ETCD_OPTIONS_TLS_ALIASES,
                {"serving-cert-file", required_argument, NULL, ARG_SCERT},
                {"serving-key-file", required_argument, NULL, ARG_SKEY},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"dial-timeout", required_argument, NULL, ARG_TIMEOUT},
                {"interval", required_argument, NULL, ARG_INTERVAL},
                {"busy-grace", required_argument, NULL, ARG_GRACE},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_(flags_done) Flags f = {.target = "https://localhost:2379",
                                         .address = "0.0.0.0",
                                         .port = 9980,
                                         .timeout = USEC_PER_SEC,
                                         .interval = USEC_PER_SEC,
                                         .busy_grace = 5 * 60 * USEC_PER_SEC,
                                         .etcd = {.command = "readyz", .features = ETCD_FLAGS}};
        int c;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                usec_t *dst = NULL;
                switch (c) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case ARG_TARGET:
                        f.target = optarg;
                        break;
                case ARG_CERTIFIED_AS:
                        f.certified_as = optarg;
                        break;
                case ARG_ADDRESS:
                        f.address = optarg;
                        break;
                case ARG_SCERT:
                        f.serving_cert = optarg;
                        break;
                case ARG_SKEY:
                        f.serving_key = optarg;
                        break;
                case ARG_PORT: {
                        char *end = NULL;
                        unsigned long p = strtoul(optarg, &end, 10);
                        if (!*optarg || *end || p > 65535) {
                                log_error("--listen-port: \"%s\" is not a port (0-65535)", optarg);
                                return EXIT_USAGE;
                        }
                        f.port = (unsigned) p;
                        break;
                }
                case ARG_TIMEOUT:
                        dst = &f.timeout;
                        break;
                case ARG_INTERVAL:
                        dst = &f.interval;
                        break;
                case ARG_GRACE:
                        dst = &f.busy_grace;
                        break;
                default:
                        if (nodecmd_etcd_flags_take(&f.etcd, c, optarg))
                                break;
                        nodecmd_flag_error("readyz", c, argv);
                        return EXIT_USAGE;
                }
                if (dst && (parse_duration(optarg, dst) < 0 || *dst < 10 * USEC_PER_MSEC)) {
                        log_error("%s: \"%s\" is not a duration of at least 10ms (e.g. 1s)",
                                  c == ARG_TIMEOUT    ? "--timeout"
                                  : c == ARG_INTERVAL ? "--interval"
                                                      : "--busy-grace",
                                  optarg);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                log_error("readyz: unexpected argument \"%s\"; see --help", argv[optind]);
                return EXIT_USAGE;
        }
        /* The pod passes $NODE_<n>_IP, which carries IPv6 in brackets. */
        char address[INET6_ADDRSTRLEN], certified[INET6_ADDRSTRLEN];
        f.address = ip_unbracket(f.address, address, sizeof address) ?: f.address;
        f.certified_as = ip_unbracket(f.certified_as, certified, sizeof certified) ?: f.certified_as;
        if (check_flags(&f) < 0)
                return EXIT_USAGE;
        int r = nodecmd_etcd_flags_check(&f.etcd);
        if (r < 0)
                return nodecmd_etcd_flags_exit(r, EXIT_USAGE);
        return readyz_run(&f);
}

const Command cmd_readyz = {
        .name = "readyz",
        .summary = "serve /readyz from a serializable read of the local member (etcd pod sidecar)",
        .run = readyz_main,
};
