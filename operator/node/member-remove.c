/* `cluster-etcd-operator member-remove NAME|ID`: removes one etcd member, for
 * the runbook that brings back a single unhealthy member
 * (docs/runbooks/restore-single-member.md; upstream's docs do it with
 * `etcdctl member remove` in a healthy etcd pod, which removes whatever it is
 * told to, quorum or not). etcd-member-remove.sh on a master calls it with the
 * node's etcd client certificate. Before anything changes it:
 *   - reads the member list from a member that has just served a
 *     linearizable read (so the list is current and etcd has quorum);
 *   - asks every member for its health (GET /health on its client URL);
 *   - refuses when the removal would leave fewer healthy voters than the
 *     quorum of the cluster that remains, or remove the last voter;
 *   - refuses a healthy started voter unless --force: a member that serves
 *     is not one to remove by a typo (stop its etcd first: disable-etcd.sh).
 * It logs the member it removes (ID, name, URLs), then reads the list again
 * to show the result. Removing a member never touches any data dir: its
 * etcd, if it runs, exits; discover-etcd-initial-cluster on that node moves
 * the old data aside and waits until the operator adds it back as a learner. */
#include <getopt.h>
#include <inttypes.h>

#include "base/log.h"
#include "etcd-flags.h"
#include "etcd/client.h"
#include "etcd/quorum.h"
#include "etcd/sync.h"
#include "node-util.h"
#include "node.h"

#define CALL_TIMEOUT (5 * USEC_PER_SEC)

#define ETCD_FLAGS (NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_ENV | NODECMD_ETCD_ENV_ALL_ENDPOINTS)

typedef struct Flags {
        const char *target;
        NodeCmdEtcdFlags etcd;
        bool force;
} Flags;

static void flags_done(Flags *f)
{
        nodecmd_etcd_flags_done(&f->etcd);
}

/* The current member list, from the first endpoint that serves a quorum read
 * right before it; *ret_endpoint names that endpoint (borrowed from f). */
static int current_members(const Flags *f, EtcdClient *c, EtcdMemberList **ret, const char **ret_endpoint)
{
        int r = -EHOSTDOWN;
        for (size_t i = 0; i < f->etcd.endpoints.n; i++) {
                const char *ep = f->etcd.endpoints.v[i];
                r = etcd_sync_current_member_list(c, ep, CALL_TIMEOUT, ret);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        log_info("%s: no member list after a quorum read (%s)", ep, etcd_strerror(r));
                        continue;
                }
                *ret_endpoint = ep;
                return 0;
        }
        return r;
}

/* 0 when the member answers GET /health with true on its first client URL. */
static int member_health(EtcdClient *c, const EtcdMember *m)
{
        _cleanup_(etcd_sync_call_freep) EtcdSyncCall *call = NULL;
        int r;
        if (!etcd_member_is_started(m))
                return -EINPROGRESS; /* not started: it serves nothing */
        if (!(call = etcd_sync_call_new()))
                return -ENOMEM;
        r = etcd_health_timeout(c, m->client_urls[0], 3 * USEC_PER_SEC, etcd_sync_on_call, call);
        if (r < 0)
                return r;
        return etcd_sync_wait(etcd_client_get_loop(c), &call, 4 * USEC_PER_SEC);
}

/* The member `target` names: its name, or its ID in hex as etcdctl prints it. */
static const EtcdMember *find_target(const EtcdMemberList *l, const char *target)
{
        const EtcdMember *m = etcd_member_list_find_by_name(l, target);
        char *end;
        if (m)
                return m;
        size_t len = strlen(target);
        if (len == 0 || len > 16)
                return NULL;
        errno = 0;
        uint64_t id = strtoull(target, &end, 16);
        if (errno || *end)
                return NULL;
        return etcd_member_list_find(l, id);
}

static void show(const EtcdMemberList *l, const int *health)
{
        char hex[17];
        for (size_t i = 0; i < l->n_members; i++) {
                const EtcdMember *m = &l->members[i];
                log_info("  %s  %-20s %s%s%s", etcd_id_to_hex(m->id, hex),
                         m->name ? m->name : "(not started)", m->n_peer_urls ? m->peer_urls[0] : "",
                         m->is_learner ? "  learner" : "",
                         !health                     ? ""
                         : health[i] == 0            ? "  healthy"
                         : health[i] == -EINPROGRESS ? "  not started"
                                                     : "  UNHEALTHY");
        }
}

static int remove_run(Flags *f)
{
        _cleanup_(loop_unrefp) Loop *loop = NULL;
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = NULL, *after = NULL;
        _cleanup_free_ int *health = NULL;
        const char *ep = NULL;
        char hex[17];
        int r;

        if (!(loop = nodecmd_loop_new()) || !(c = etcd_client_new(loop, &f->etcd.tls)) ||
            etcd_client_set_endpoints(c, f->etcd.endpoints.v, f->etcd.endpoints.n) < 0)
                return log_error_errno(-ENOMEM, "out of memory"), EXIT_RUNTIME;

        r = current_members(f, c, &l, &ep);
        if (r == -ENOMEM)
                return log_error_errno(-ENOMEM, "out of memory"), EXIT_RUNTIME;
        if (r < 0) {
                log_error("no member served a quorum read: etcd has no quorum, and no member can be removed "
                          "safely; nothing was changed. If quorum is lost for good, follow "
                          "quorum-restore.md or restore-after-quorum-loss.md");
                return EXIT_RUNTIME;
        }
        log_info("members (read from %s after a quorum read there):", ep);
        if (!(health = calloc(l->n_members, sizeof *health)))
                return log_error_errno(-ENOMEM, "out of memory"), EXIT_RUNTIME;
        for (size_t i = 0; i < l->n_members; i++)
                health[i] = member_health(c, &l->members[i]);
        show(l, health);

        const EtcdMember *t = find_target(l, f->target);
        if (!t) {
                log_error("no member is named \"%s\" and none has that ID; nothing was changed. If you "
                          "removed "
                          "it already, go on with the next step",
                          f->target);
                return EXIT_RUNTIME;
        }
        size_t ti = (size_t) (t - l->members);
        const char *tname = t->name ? t->name : etcd_id_to_hex(t->id, hex);

        /* What is left if it goes: every voter but the target, and which of them serve. */
        size_t voters = 0, healthy = 0;
        for (size_t i = 0; i < l->n_members; i++) {
                if (i == ti || l->members[i].is_learner)
                        continue;
                voters++;
                if (health[i] == 0)
                        healthy++;
        }
        if (!t->is_learner) {
                if (voters == 0) {
                        log_error("refusing: %s is the last voting member; removing it ends the cluster. "
                                  "Nothing was changed",
                                  tname);
                        return EXIT_RUNTIME;
                }
                size_t quorum = etcd_quorum(voters);
                if (!etcd_quorum_holds(voters, healthy)) {
                        log_error("refusing: without %s the cluster would have %zu voters, %zu of them "
                                  "healthy, and %zu voters need %zu for quorum. Bring the unhealthy members "
                                  "back first; nothing was changed",
                                  tname, voters, healthy, voters, quorum);
                        return EXIT_RUNTIME;
                }
                if (health[ti] == 0 && !f->force) {
                        log_error(
                                "refusing: %s is a healthy voting member, and removing it costs the cluster "
                                "a voter. If it is the one to replace, stop its etcd first "
                                "(disable-etcd.sh on that master), or add --force; nothing was changed",
                                tname);
                        return EXIT_RUNTIME;
                }
        }

        log_warning("removing member %s (ID %s, peer URL %s%s%s) from the cluster", tname,
                    etcd_id_to_hex(t->id, hex), t->n_peer_urls ? t->peer_urls[0] : "(none)",
                    t->n_client_urls ? ", client URL " : "", t->n_client_urls ? t->client_urls[0] : "");
        log_info("its data dir is not touched; the operator adds that master back as a new learner once "
                 "its etcd pod waits for it");
        _cleanup_(etcd_sync_call_freep) EtcdSyncCall *call = etcd_sync_call_new();
        if (!call)
                return log_error_errno(-ENOMEM, "out of memory"), EXIT_RUNTIME;
        etcd_client_set_timeout(c, 10 * USEC_PER_SEC);
        uint64_t tid = t->id;
        r = etcd_member_remove(c, tid, etcd_sync_on_call, call);
        if (r >= 0)
                r = etcd_sync_wait(loop, &call, 15 * USEC_PER_SEC);
        if (r == ETCD_ERR_MEMBER_NOT_FOUND)
                log_info("etcd says the member is gone already");
        else if (r < 0) {
                log_error("etcd refused or did not answer the removal: %s%s%s. Check with "
                          "etcd-member-remove.sh "
                          "again whether it is still listed",
                          etcd_strerror(r), call && *call->message ? ": " : "", call ? call->message : "");
                return EXIT_RUNTIME;
        }

        r = current_members(f, c, &after, &ep);
        if (r < 0) {
                log_warning("removed, but no member served a quorum read since: %s", etcd_strerror(r));
                return EXIT_OK;
        }
        if (etcd_member_list_find(after, tid)) {
                log_error("member %s is still listed by %s", tname, ep);
                return EXIT_RUNTIME;
        }
        log_info("removed %s; the members now:", tname);
        show(after, NULL);
        return EXIT_OK;
}

static void help(FILE *out)
{
        (void) fprintf(out, "Usage: cluster-etcd-operator member-remove [FLAGS] NAME|ID\n"
                            "\n"
                            "Removes one etcd member (by its name, or its ID in hex as etcdctl prints it),\n"
                            "only if the voters that remain keep quorum with healthy members. A healthy\n"
                            "voter is removed only with --force. No data dir is touched. On a master, run\n"
                            "it as etcd-member-remove.sh, which sets the certificates and endpoints below.\n"
                            "\n");
        nodecmd_etcd_flags_help(out, ETCD_FLAGS, 22);
        (void) fprintf(out,
                       "  --force             remove a healthy voter too (never one that costs quorum)\n"
                       "  -v=N                log verbosity\n"
                       "\n"
                       "Exit codes: 0 removed (or gone already), 1 refused or failed, 2 usage error.\n");
}

static int remove_main(int argc, char *argv[])
{
        enum { ARG_FORCE = 0x100 };
        static const struct option options[] = {
                NODECMD_ETCD_OPTIONS_ENDPOINTS,
                NODECMD_ETCD_OPTIONS_TLS,
                {"force", no_argument, NULL, ARG_FORCE},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_(flags_done) Flags f = {
                .etcd = {.command = "member-remove",
                         .features = ETCD_FLAGS,
                         .hint = "on a master, run it as etcd-member-remove.sh, which sets them from the "
                                 "node's etcd.env"},
        };
        int c;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case ARG_FORCE:
                        f.force = true;
                        break;
                default:
                        if (nodecmd_etcd_flags_take(&f.etcd, c, optarg))
                                break;
                        nodecmd_flag_error("member-remove", c, argv);
                        return EXIT_USAGE;
                }
        if (optind + 1 != argc) {
                log_error("member-remove takes one argument, the member's name or hex ID; see --help");
                return EXIT_USAGE;
        }
        f.target = argv[optind];
        int r = nodecmd_etcd_flags_check(&f.etcd);
        if (r < 0)
                return nodecmd_etcd_flags_exit(r, EXIT_RUNTIME);
        return remove_run(&f);
}

const Command cmd_member_remove = {
        .name = "member-remove",
        .summary = "remove one etcd member, only if the rest keep quorum (the single-member runbook)",
        .run = remove_main,
};
