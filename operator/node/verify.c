/* `cluster-etcd-operator verify backup-storage`: upstream's first step of a
 * backup Job (its init container): the backup volume must have room for
 * twice the largest member's database (a snapshot is as large as the
 * database file, and the backup beside the last one must fit while that
 * one is still there). It asks every started member for its status, reads
 * the free space of --backup-dir, and checks once a second for up to
 * --timeout (10 s, as upstream) before it gives up, naming the sizes and
 * the fix. Nothing is written. */
#include <getopt.h>
#include <inttypes.h>
#include <sys/statvfs.h>

#include "backup-retention.h"
#include "base/log.h"
#include "etcd-flags.h"
#include "etcd/sync.h"
#include "node-util.h"
#include "node.h"

#define CALL_TIMEOUT       (5 * USEC_PER_SEC)
#define DEFAULT_BACKUP_DIR "/etc/kubernetes/cluster-backup"
#define MIB                (1024.0 * 1024.0)

#define ETCD_FLAGS (NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_ENV)

typedef struct Flags {
        const char *backup_dir;
        NodeCmdEtcdFlags etcd;
        usec_t timeout;
} Flags;

static void flags_done(Flags *f)
{
        nodecmd_etcd_flags_done(&f->etcd);
}

/* The largest database of the started members, and whose it is. */
static int largest_db(const Flags *f, EtcdClient *c, uint64_t *ret, char *who, size_t who_len)
{
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = NULL;
        int r = -EHOSTDOWN;
        for (size_t i = 0; i < f->etcd.endpoints.n && !l; i++) {
                r = etcd_sync_member_list(c, f->etcd.endpoints.v[i], CALL_TIMEOUT, &l);
                if (r < 0)
                        log_info("%s: no member list (%s)", f->etcd.endpoints.v[i], etcd_strerror(r));
        }
        if (!l) {
                log_error("no etcd endpoint gave a member list (%s): check --endpoints", etcd_strerror(r));
                return r;
        }
        size_t asked = 0;
        *ret = 0;
        for (size_t i = 0; i < l->n_members; i++) {
                const EtcdMember *m = &l->members[i];
                EtcdStatus st = {};
                if (!etcd_member_is_started(m))
                        continue;
                r = etcd_sync_status(c, m->client_urls[0], CALL_TIMEOUT, &st);
                if (r < 0) {
                        log_warning("member %s: no status (%s): its database is not counted", m->name,
                                    etcd_strerror(r));
                        continue;
                }
                asked++;
                log_info("member %s: database %.1f MiB", m->name, (double) st.db_size / MIB);
                if (st.db_size >= *ret) {
                        *ret = st.db_size;
                        (void) snprintf(who, who_len, "%s", m->name);
                }
                etcd_status_done(&st);
        }
        if (asked == 0) {
                log_error("no etcd member answered its status: nothing to size the backup by");
                return -EHOSTDOWN;
        }
        return 0;
}

static int verify_run(const Flags *f)
{
        _cleanup_(loop_unrefp) Loop *loop = NULL;
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        char who[256] = "?";
        uint64_t db = 0;
        int r;

        loop = nodecmd_loop_new();
        c = loop ? etcd_client_new(loop, &f->etcd.tls) : NULL;
        if (!c)
                return log_error_errno(-ENOMEM, "out of memory"), EXIT_RUNTIME;
        if ((r = etcd_client_set_endpoints(c, f->etcd.endpoints.v, f->etcd.endpoints.n)) < 0) {
                log_error("--endpoints: not client URLs such as https://10.0.0.1:2379 (%s)", strerror(-r));
                return EXIT_USAGE;
        }
        if (largest_db(f, c, &db, who, sizeof who) < 0)
                return EXIT_RUNTIME;
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + f->timeout;
        for (;;) {
                struct statvfs sv;
                uint64_t avail = 0, needed = 0;
                if (statvfs(f->backup_dir, &sv) < 0)
                        log_warning("backup storage %s: %s", f->backup_dir, strerror(errno));
                else {
                        avail = (uint64_t) sv.f_bavail * (uint64_t) sv.f_frsize;
                        if (backup_storage_enough(avail, db, &needed)) {
                                log_info("backup storage %s: %.1f MiB free, enough for a backup (2 x %.1f "
                                         "MiB, "
                                         "the database of %s)",
                                         f->backup_dir, (double) avail / MIB, (double) db / MIB, who);
                                return EXIT_OK;
                        }
                }
                if (now_usec(CLOCK_MONOTONIC) >= deadline) {
                        if (avail == 0 && needed == 0)
                                log_error("backup storage %s cannot be read: is the backup volume mounted "
                                          "there?",
                                          f->backup_dir);
                        else
                                log_error(
                                        "backup storage %s has %.1f MiB free; a backup needs %.1f MiB "
                                        "(twice "
                                        "the largest database, %.1f MiB on %s): free space on the volume or "
                                        "give the backup a larger one (prune-backups removes old backups)",
                                        f->backup_dir, (double) avail / MIB, (double) needed / MIB,
                                        (double) db / MIB, who);
                        return EXIT_RUNTIME;
                }
                (void) usleep(USEC_PER_SEC);
        }
}

static void help(FILE *f)
{
        (void) fprintf(f, "Usage: cluster-etcd-operator verify backup-storage [FLAGS]\n"
                          "\n"
                          "Checks that the backup directory has room for twice the largest etcd member's\n"
                          "database, once a second for up to --timeout. Writes nothing.\n"
                          "\n"
                          "  --backup-dir=DIR     where backups go (default " DEFAULT_BACKUP_DIR ")\n");
        nodecmd_etcd_flags_help(f, ETCD_FLAGS, 23);
        (void) fprintf(f,
                       "  --timeout=D          how long to keep checking (default 10s)\n"
                       "  -v=N                 log verbosity\n"
                       "\n"
                       "Exit codes: 0 enough space, 1 not enough (or etcd unreachable), 2 usage error.\n");
}

static int verify_main(int argc, char *argv[])
{
        enum { ARG_DIR = 0x100, ARG_TIMEOUT };
        static const struct option options[] = {
                {"backup-dir", required_argument, NULL, ARG_DIR},
                NODECMD_ETCD_OPTIONS_ENDPOINTS,
                NODECMD_ETCD_OPTIONS_TLS,
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_(flags_done) Flags f = {.backup_dir = DEFAULT_BACKUP_DIR,
                                         .etcd = {.command = "verify", .features = ETCD_FLAGS},
                                         .timeout = 10 * USEC_PER_SEC};
        int c;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case ARG_DIR:
                        f.backup_dir = optarg;
                        break;
                case ARG_TIMEOUT:
                        if (parse_duration(optarg, &f.timeout) < 0) {
                                log_error("--timeout=%s: expected a duration such as 10s or 1m", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                default:
                        if (nodecmd_etcd_flags_take(&f.etcd, c, optarg))
                                break;
                        nodecmd_flag_error("verify", c, argv);
                        return EXIT_USAGE;
                }
        if (optind + 1 != argc || !streq(argv[optind], "backup-storage")) {
                log_error("verify takes one argument, what to verify: backup-storage; see --help");
                return EXIT_USAGE;
        }
        int r = nodecmd_etcd_flags_check(&f.etcd);
        if (r < 0)
                return nodecmd_etcd_flags_exit(r, EXIT_USAGE);
        return verify_run(&f);
}

const Command cmd_verify = {
        .name = "verify",
        .summary = "verify backup-storage: room for a backup on the backup volume (scheduled backups)",
        .run = verify_main,
};
