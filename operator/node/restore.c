/* `cluster-etcd-operator cluster-restore`: the careful half of the node's
 * disaster-recovery scripts (cluster-restore.sh and quorum-restore.sh call
 * it). This file is the command: its flags and their defaults from the
 * scripts' environment, the help text, the fetch of a backup from an object
 * store (--s3-*) and the last line that says what comes next. The procedure
 * itself (the modes, the order of the checks and of the steps that change
 * the node, what each one refuses) is operator/dr's (dr/restore.h). */
#include <dirent.h>
#include <getopt.h>

#include "base/log.h"
#include "dr/backup-manifest.h"
#include "dr/restore.h"
#include "node-util.h"
#include "node.h"
#include "s3-backups.h"
#include "s3/s3.h"

/* Steps 1 to 4 (dr/restore.h), then what the runbook does next. */
static int cluster_restore_run(const RestoreInput *in)
{
        _cleanup_(restore_done) Restore rs = {};

        if (restore_init(&rs, in) < 0 || restore_run(&rs) < 0)
                return EXIT_RUNTIME;
        if (in->mode == RESTORE_IN_PLACE)
                log_info("restored. The member must be (re)added to the cluster: the operator does it once "
                         "its etcd pod runs again.");
        else
                log_info("the %s pod is in place: etcd starts as a new one-member cluster. Next (the "
                         "runbook): wait until the API answers, set "
                         "unsupportedConfigOverrides.useUnsupportedUnsafeNonHANonProductionUnstableEtcd, "
                         "force a new revision (forceRedeploymentReason), wait for every node at it, then "
                         "unset the override.",
                         in->mode == RESTORE_POD ? "restore" : "quorum-restore");
        return EXIT_OK;
}

static void help(FILE *out)
{
        (void) fprintf(
                out,
                "Usage: cluster-etcd-operator cluster-restore [--restore-pod|--in-place] [FLAGS] "
                "BACKUP_DIR\n"
                "       cluster-etcd-operator cluster-restore --quorum-restore [FLAGS]\n"
                "\n"
                "Brings this master's etcd back as a new one-member cluster, on the node, as root.\n"
                "The snapshot (newest snapshot_*.db in BACKUP_DIR) and its tarball are checked\n"
                "against checksums_<ts>.json beside them and verified before anything\n"
                "changes; the etcd pod is stopped; the data dir is moved aside into the backup data\n"
                "dir (never deleted); then:\n"
                "  --restore-pod     (default) the static pod resources of the backup are put back,\n"
                "                    the snapshot is copied to <backup-data-dir>/snapshot.db and the\n"
                "                    restore pod (restore-etcd-pod/pod.yaml) becomes etcd-pod.yaml\n"
                "  --in-place        the snapshot is restored into the data dir with etcdutl (no\n"
                "                    revision bump) and the normal etcd pod comes back\n"
                "  --quorum-restore  no snapshot: this member's data dir is copied aside and the\n"
                "                    quorum-restore pod (--force-new-cluster) becomes etcd-pod.yaml\n"
                "\n"
                "  --config-dir DIR       (default: /etc/kubernetes)\n"
                "  --data-dir DIR         (default: /var/lib/etcd)\n"
                "  --backup-data-dir DIR  where the data dir goes (default: /var/lib/etcd-backup)\n"
                "  --stopped-dir DIR      where etcd-pod.yaml goes (default: "
                "/home/core/assets/manifests-stopped)\n"
                "  --stop-timeout SECONDS how long to wait for the etcd containers to stop (default: 300)\n"
                "  --name NAME            --in-place: this member's name (default: $ETCD_THIS_NAME)\n"
                "  --peer-host HOST       --in-place: this member's peer address (default: "
                "$ETCD_THIS_URL_HOST)\n"
                "  --force                --quorum-restore: even if this member is not the voter with\n"
                "                         the highest raft index of those that answer (ALL_ETCD_ENDPOINTS)\n"
                "  --skip-copy            --quorum-restore: no copy of the member dir first (also\n"
                "                         ETCD_QUORUM_RESTORE_SKIP_COPY=1)\n"
                "  --no-checksum-file     restore a backup that has no checksums_<ts>.json (one written\n"
                "                         before checksum files; also ETCD_RESTORE_NO_CHECKSUM_FILE=1);\n"
                "                         a checksum file that is there is always checked\n"
                "  --s3-credentials-dir DIR --s3-bucket NAME [--s3-prefix P] [--s3-backup latest|NAME]\n"
                "                         first fetch the backup (default: the latest) from an\n"
                "                         S3-compatible store into BACKUP_DIR, as `s3 get-backup`\n"
                "                         does (BACKUP_DIR may hold no other backup); nothing on\n"
                "                         the node changes before it is fetched and verified\n"
                "  -v=N                   log verbosity\n"
                "\n"
                "Run it again after a failure: it continues from where it stopped.\n"
                "Exit codes: 0 done, 1 failed (the message says what was changed), 2 usage error.\n");
}

/* The snapshot_*.db files in `dir` other than `except` (a file name). */
static size_t other_snapshots(const char *dir, const char *except, char *first, size_t n)
{
        DIR *d = opendir(dir);
        struct dirent *de;
        size_t count = 0;
        while (d && (de = readdir(d)))
                if (startswith(de->d_name, "snapshot_") && endswith(de->d_name, ".db") &&
                    !streq(de->d_name, except) && count++ == 0)
                        (void) snprintf(first, n, "%s", de->d_name);
        if (d)
                (void) closedir(d);
        return count;
}

/* --s3-*: the backup fetched (or found from an earlier run) into dir before anything else. */
static int fetch_from_store(const char *dir, const char *cred_dir, const char *bucket, const char *prefix,
                            const char *which)
{
        _cleanup_(s3_store_done) S3Store store = {};
        _cleanup_free_ char *err = NULL, *snap = NULL;
        char other[256] = "";

        if (!cred_dir || !bucket) {
                log_error("cluster-restore: --s3-credentials-dir and --s3-bucket go together (with "
                          "--s3-prefix and --s3-backup)");
                return EXIT_USAGE;
        }
        if (s3_store_load_dir(cred_dir, &store, &err) < 0 || !(store.bucket = strdup(bucket)) ||
            (prefix && !(store.prefix = strdup(prefix))) || s3_store_check(&store, &err) < 0 ||
            s3_store_check_backup_key(&store, &err) < 0) {
                log_error("cluster-restore: %s; nothing was changed", err ? err : "out of memory");
                return EXIT_USAGE;
        }
        if (!(store.loop = nodecmd_loop_new()))
                return log_error("cluster-restore: cannot start the event loop; nothing was changed"),
                       EXIT_RUNTIME;
        int r = s3_backups_fetch(&store, which ? which : "latest", dir, true, &snap);
        if (r < 0) {
                log_error(
                        "cluster-restore: the backup could not be fetched from s3://%s/%s (above); nothing "
                        "on the node was changed",
                        store.bucket, store.prefix);
                return EXIT_RUNTIME;
        }
        /* The restore takes the newest snapshot in dir: it must be this one. */
        if (other_snapshots(dir, strrchr(snap, '/') + 1, other, sizeof other) > 0) {
                log_error(
                        "cluster-restore: %s holds another backup (%s) beside the one from the store; name "
                        "an empty directory for --s3-*; nothing on the node was changed",
                        dir, other);
                if (r == 1) { /* what this run fetched goes; an earlier run's stays */
                        _cleanup_free_ char *tar = s3_backups_tarball_of(snap),
                                            *sums = backup_manifest_name_of(snap);
                        (void) unlink(snap);
                        if (tar)
                                (void) unlink(tar);
                        if (sums)
                                (void) unlink(sums);
                }
                return EXIT_RUNTIME;
        }
        return EXIT_OK;
}

static int restore_main(int argc, char *argv[])
{
        enum {
                ARG_POD = 0x100,
                ARG_IN_PLACE,
                ARG_QUORUM,
                ARG_CONFIG,
                ARG_DATA,
                ARG_BACKUP_DATA,
                ARG_STOPPED,
                ARG_STOP_TIMEOUT,
                ARG_NAME,
                ARG_PEER_HOST,
                ARG_SKIP_COPY,
                ARG_NO_CHECKSUM_FILE,
                ARG_FORCE,
                ARG_S3_DIR,
                ARG_S3_BUCKET,
                ARG_S3_PREFIX,
                ARG_S3_BACKUP,
        };
        static const struct option options[] = {
                {"restore-pod", no_argument, NULL, ARG_POD},
                {"in-place", no_argument, NULL, ARG_IN_PLACE},
                {"quorum-restore", no_argument, NULL, ARG_QUORUM},
                {"config-dir", required_argument, NULL, ARG_CONFIG},
                {"data-dir", required_argument, NULL, ARG_DATA},
                {"backup-data-dir", required_argument, NULL, ARG_BACKUP_DATA},
                {"stopped-dir", required_argument, NULL, ARG_STOPPED},
                {"stop-timeout", required_argument, NULL, ARG_STOP_TIMEOUT},
                {"name", required_argument, NULL, ARG_NAME},
                {"peer-host", required_argument, NULL, ARG_PEER_HOST},
                {"skip-copy", no_argument, NULL, ARG_SKIP_COPY},
                {"no-checksum-file", no_argument, NULL, ARG_NO_CHECKSUM_FILE},
                {"force", no_argument, NULL, ARG_FORCE},
                {"s3-credentials-dir", required_argument, NULL, ARG_S3_DIR},
                {"s3-bucket", required_argument, NULL, ARG_S3_BUCKET},
                {"s3-prefix", required_argument, NULL, ARG_S3_PREFIX},
                {"s3-backup", required_argument, NULL, ARG_S3_BACKUP},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        RestoreInput in = {.loop_new = nodecmd_loop_new,
                           .config_dir = "/etc/kubernetes",
                           .data_dir = "/var/lib/etcd",
                           .backup_data_dir = "/var/lib/etcd-backup",
                           .stopped_dir = "/home/core/assets/manifests-stopped",
                           .stop_timeout = 300 * USEC_PER_SEC};
        const char *s3_dir = NULL, *s3_bucket = NULL, *s3_prefix = NULL, *s3_backup = NULL;
        int c, r = -1, modes = 0;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while (r < 0 && (c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        r = EXIT_OK;
                        break;
                case ARG_POD:
                        in.mode = RESTORE_POD;
                        modes++;
                        break;
                case ARG_IN_PLACE:
                        in.mode = RESTORE_IN_PLACE;
                        modes++;
                        break;
                case ARG_QUORUM:
                        in.mode = RESTORE_QUORUM;
                        modes++;
                        break;
                case ARG_CONFIG:
                        in.config_dir = optarg;
                        break;
                case ARG_DATA:
                        in.data_dir = optarg;
                        break;
                case ARG_BACKUP_DATA:
                        in.backup_data_dir = optarg;
                        break;
                case ARG_STOPPED:
                        in.stopped_dir = optarg;
                        break;
                case ARG_STOP_TIMEOUT: {
                        unsigned s = 0;
                        if (nodecmd_parse_revision(optarg, &s) < 0) {
                                log_error("--stop-timeout: \"%s\" is not a number of seconds (e.g. 300)",
                                          optarg);
                                r = EXIT_USAGE;
                        }
                        in.stop_timeout = (usec_t) s * USEC_PER_SEC;
                        break;
                }
                case ARG_NAME:
                        in.name = optarg;
                        break;
                case ARG_PEER_HOST:
                        in.peer_host = optarg;
                        break;
                case ARG_SKIP_COPY:
                        in.skip_copy = true;
                        break;
                case ARG_NO_CHECKSUM_FILE:
                        in.no_checksum_file = true;
                        break;
                case ARG_FORCE:
                        in.force = true;
                        break;
                case ARG_S3_DIR:
                        s3_dir = optarg;
                        break;
                case ARG_S3_BUCKET:
                        s3_bucket = optarg;
                        break;
                case ARG_S3_PREFIX:
                        s3_prefix = optarg;
                        break;
                case ARG_S3_BACKUP:
                        s3_backup = optarg;
                        break;
                default:
                        nodecmd_flag_error("cluster-restore", c, argv);
                        r = EXIT_USAGE;
                }
        if (r >= 0)
                return r;
        const char *e = getenv("ETCD_QUORUM_RESTORE_SKIP_COPY");
        if (e && streq(e, "1"))
                in.skip_copy = true;
        e = getenv("ETCD_RESTORE_NO_CHECKSUM_FILE");
        if (e && streq(e, "1"))
                in.no_checksum_file = true;
        if (!in.name)
                in.name = getenv("ETCD_THIS_NAME");
        if (!in.peer_host)
                in.peer_host = getenv("ETCD_THIS_URL_HOST");
        /* The other members, for the checks of --in-place and --quorum-restore. */
        in.all_endpoints = getenv("ALL_ETCD_ENDPOINTS");
        in.this_url_host = getenv("ETCD_THIS_URL_HOST");
        in.cacert = getenv("ETCDCTL_CACERT");
        in.cert = getenv("ETCDCTL_CERT");
        in.key = getenv("ETCDCTL_KEY");
        if (modes > 1) {
                log_error("cluster-restore: one of --restore-pod, --in-place and --quorum-restore");
                return EXIT_USAGE;
        }
        if (in.mode == RESTORE_QUORUM) {
                if (optind < argc) {
                        log_error("cluster-restore --quorum-restore takes no backup directory: it restores "
                                  "from this member's own data");
                        return EXIT_USAGE;
                }
        } else if (optind + 1 != argc || !*argv[optind]) {
                log_error("cluster-restore: name one backup directory (the one cluster-backup wrote); see "
                          "--help");
                return EXIT_USAGE;
        } else
                in.backup_dir = argv[optind];
        if (in.mode == RESTORE_IN_PLACE && (!in.name || !*in.name || !in.peer_host || !*in.peer_host)) {
                log_error("cluster-restore --in-place: --name and --peer-host (or ETCD_THIS_NAME and "
                          "ETCD_THIS_URL_HOST, which cluster-restore.sh sets) name this member");
                return EXIT_USAGE;
        }
        if (s3_dir || s3_bucket || s3_prefix || s3_backup) {
                if (in.mode == RESTORE_QUORUM) {
                        log_error(
                                "cluster-restore --quorum-restore restores from this member's own data: no "
                                "--s3-* flags");
                        return EXIT_USAGE;
                }
                if ((r = fetch_from_store(in.backup_dir, s3_dir, s3_bucket, s3_prefix, s3_backup)) !=
                    EXIT_OK)
                        return r;
        }
        return cluster_restore_run(&in);
}

const Command cmd_cluster_restore = {
        .name = "cluster-restore",
        .summary = "restore this master's etcd from a snapshot, or from its own data (quorum restore)",
        .run = restore_main,
};
