/* `cluster-etcd-operator prune-backups`: the retention step of scheduled
 * backups, as upstream's CronJob runs it before each backup (init
 * container), with upstream's flags and defaults:
 *   --type=RetentionNumber --maxNumberOfBackups=N   (default 15)
 *   --type=RetentionSize   --maxSizeOfBackupsGb=G   (default 10)
 * over the backups in --backup-dir (default /etc/kubernetes/cluster-backup,
 * where the backup volume is mounted). Only directories holding a
 * snapshot_*.db count as backups; anything else there is left alone, and
 * the newest backup is always kept. Each removal is logged with the
 * backup's size and age before it happens; --dry-run only logs. */
#include <getopt.h>
#include <inttypes.h>

#include "backup-retention.h"
#include "base/log.h"
#include "node-util.h"
#include "node.h"

#define DEFAULT_BACKUP_DIR "/etc/kubernetes/cluster-backup"
#define DEFAULT_MAX_NUMBER 15
#define DEFAULT_MAX_GB     10
#define GIB                (1024ULL * 1024 * 1024)

static void help(FILE *f)
{
        (void) fprintf(
                f,
                "Usage: cluster-etcd-operator prune-backups [--type=RetentionNumber|RetentionSize] [FLAGS]\n"
                "\n"
                "Removes the oldest backups in the backup directory beyond the retention policy.\n"
                "A backup is a directory holding a snapshot_*.db; the newest one is always kept,\n"
                "anything else in the directory is left alone.\n"
                "\n"
                "  --type=T                  RetentionNumber (default) or RetentionSize\n"
                "  --maxNumberOfBackups=N    RetentionNumber: keep the newest N (default 15, at least 1)\n"
                "  --maxSizeOfBackupsGb=G    RetentionSize: keep the newest that fit in G GiB (default 10,\n"
                "                            at least 1)\n"
                "  --backup-dir=DIR          where the backups are (default " DEFAULT_BACKUP_DIR ")\n"
                "  --dry-run                 log what would be removed, remove nothing\n"
                "  -v=N                      log verbosity\n"
                "\n"
                "Exit codes: 0 done, 1 a backup could not be read or removed, 2 usage error.\n");
}

static int parse_positive(const char *flag, const char *s, uint64_t *ret)
{
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0 || !end || *end || end == s || s[0] == '-' || v < 1 || v > 1000000) {
                log_error("--%s=%s: expected a whole number from 1 to 1000000", flag, s);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static int prune(const char *dir, RetentionType type, uint64_t max, bool dry_run)
{
        BackupEntry *e = NULL;
        size_t n = 0;
        int r = backup_retention_scan(dir, &e, &n);
        if (r < 0) {
                log_error("cannot read the backup directory %s: %s", dir, strerror(-r));
                return EXIT_RUNTIME;
        }
        uint64_t limit = type == RETENTION_SIZE ? max * GIB : max;
        size_t marked = backup_retention_plan(e, n, type, limit);
        log_info("%s: %zu backup(s); %s %" PRIu64 "%s: %zu to remove%s", dir, n,
                 retention_type_to_string(type), max, type == RETENTION_SIZE ? " GiB" : "", marked,
                 dry_run ? " (dry run)" : "");
        usec_t now = now_usec(CLOCK_REALTIME);
        int failed = 0;
        for (size_t i = 0; i < n; i++) {
                double age_h =
                        (double) (now > e[i].newest ? now - e[i].newest : 0) / (3600.0 * USEC_PER_SEC);
                if (!e[i].prune) {
                        log_info("keeping  %s (%.1f MiB, %.1f h old)", e[i].name,
                                 (double) e[i].bytes / (1024.0 * 1024.0), age_h);
                        continue;
                }
                log_info("%s %s (%.1f MiB, %.1f h old)", dry_run ? "would remove" : "removing", e[i].name,
                         (double) e[i].bytes / (1024.0 * 1024.0), age_h);
                if (dry_run)
                        continue;
                r = backup_retention_remove(dir, e[i].name);
                if (r < 0) {
                        log_error("removing %s/%s failed: %s", dir, e[i].name, strerror(-r));
                        failed++;
                }
        }
        backup_entries_free(e, n);
        return failed ? EXIT_RUNTIME : EXIT_OK;
}

static int prune_main(int argc, char *argv[])
{
        enum { ARG_TYPE = 0x100, ARG_MAX_NUMBER, ARG_MAX_GB, ARG_DIR, ARG_DRY_RUN };
        static const struct option options[] = {
                {"type", required_argument, NULL, ARG_TYPE},
                {"maxNumberOfBackups", required_argument, NULL, ARG_MAX_NUMBER},
                {"maxSizeOfBackupsGb", required_argument, NULL, ARG_MAX_GB},
                {"backup-dir", required_argument, NULL, ARG_DIR},
                {"dry-run", no_argument, NULL, ARG_DRY_RUN},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        RetentionType type = RETENTION_NUMBER;
        uint64_t max_number = DEFAULT_MAX_NUMBER, max_gb = DEFAULT_MAX_GB;
        const char *dir = DEFAULT_BACKUP_DIR;
        bool dry_run = false, have_number = false, have_gb = false;
        int c;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case ARG_TYPE:
                        type = retention_type_from_string(optarg);
                        if (type < 0) {
                                log_error("--type=%s: expected RetentionNumber or RetentionSize", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case ARG_MAX_NUMBER:
                        if (parse_positive("maxNumberOfBackups", optarg, &max_number) < 0)
                                return EXIT_USAGE;
                        have_number = true;
                        break;
                case ARG_MAX_GB:
                        if (parse_positive("maxSizeOfBackupsGb", optarg, &max_gb) < 0)
                                return EXIT_USAGE;
                        have_gb = true;
                        break;
                case ARG_DIR:
                        dir = optarg;
                        break;
                case ARG_DRY_RUN:
                        dry_run = true;
                        break;
                default:
                        nodecmd_flag_error("prune-backups", c, argv);
                        return EXIT_USAGE;
                }
        if (optind != argc) {
                log_error("prune-backups takes no arguments; see --help");
                return EXIT_USAGE;
        }
        if ((type == RETENTION_NUMBER && have_gb) || (type == RETENTION_SIZE && have_number)) {
                log_error("--%s does not go with --type=%s: use --maxNumberOfBackups with RetentionNumber, "
                          "--maxSizeOfBackupsGb with RetentionSize",
                          have_gb ? "maxSizeOfBackupsGb" : "maxNumberOfBackups",
                          retention_type_to_string(type));
                return EXIT_USAGE;
        }
        return prune(dir, type, type == RETENTION_SIZE ? max_gb : max_number, dry_run);
}

const Command cmd_prune_backups = {
        .name = "prune-backups",
        .summary = "remove the oldest backups beyond a retention policy (scheduled backups)",
        .run = prune_main,
};
