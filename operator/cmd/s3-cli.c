/* `cluster-etcd-operator s3`: the object store by hand (put, get, list,
 * delete), with the credentials a backup uses: what a cluster-admin runs to
 * see what a store holds, to fetch a backup for a restore, or to check that
 * a Secret's keys work before a Backup names it. Names are relative to
 * --prefix, as the backups lay them out. */
#include <curl/curl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "cmd.h"
#include "etcd/snapshot.h"
#include "node-util.h"
#include "s3-backups.h"
#include "s3/s3.h"
#include "s3/snapshots.h"

typedef struct Flags {
        const char *dir, *bucket, *prefix, *cacert, *policy;
        size_t part_size;
        unsigned max_backups;
        bool dry_run;
} Flags;

static void help(FILE *out)
{
        (void) fprintf(
                out,
                "Usage: cluster-etcd-operator s3 COMMAND [ARGS] --credentials-dir DIR --bucket NAME "
                "[FLAGS]\n"
                "\n"
                "The S3-compatible object store of backups, by hand. NAMEs are relative to --prefix.\n"
                "\n"
                "  put FILE NAME        upload FILE (multipart above the part size), then check the\n"
                "                       stored object's size and ETag against what was sent\n"
                "  get NAME FILE        download to FILE (a temp file, checked, then renamed)\n"
                "  list [NAME-PREFIX]   size, last modified and name of every object under the prefix\n"
                "  delete NAME          delete one object\n"
                "  get-backup latest|NAME DIR\n"
                "                       fetch a full snapshot (the newest, or by name) and its\n"
                "                       tarball into DIR as snapshot_<ts>.db and\n"
                "                       static_kuberesources_<ts>.tar.gz, the snapshot verified\n"
                "  gc                   garbage-collect <prefix>/v2/ (full snapshots; a snapshot's\n"
                "                       tarball goes with it) by --policy\n"
                "  purge                delete every object under --prefix (required: never a\n"
                "                       whole bucket); what a deleted Backup's grace period ends in\n"
                "\n"
                "  --credentials-dir DIR   the files accessKeyID and secretAccessKey, and optionally\n"
                "                          region (default us-east-1), endpoint (default AWS's) and\n"
                "                          s3ForcePathStyle (true/false): a mounted Secret, as\n"
                "                          etcd-backup-restore reads it (required)\n"
                "  --bucket NAME           the bucket (required)\n"
                "  --prefix P              every object is under P/ (e.g. clusters/prod-1; default none)\n"
                "  --part-size MiB         multipart part size in MiB (5 to 512, default 16)\n"
                "  --cacert FILE           CA bundle for an https endpoint (default: the system's)\n"
                "  --policy P              gc: LimitBased (keep the newest --max-backups) or\n"
                "                          Exponential (etcd-backup-restore's: all of the last hour,\n"
                "                          one an hour for a day, a day for a week, a week for 5)\n"
                "  --max-backups N         gc LimitBased: how many to keep (default 7)\n"
                "  --dry-run               gc, purge: print what would go, delete nothing\n"
                "  -v=N                    log verbosity\n"
                "  -h, --help              this text\n"
                "\n"
                "Exit codes: 0 done, 1 the store refused or failed (S3's code and message are\n"
                "printed), 2 usage error or unreadable credentials.\n");
}

#define usage_error(...) cmd_usage_error("s3", __VA_ARGS__)

typedef struct Snap {
        S3Snapshot s;
        const char *key;
} Snap;

static int snap_cmp(const void *a, const void *b)
{
        const Snap *x = a, *y = b;
        if (x->s.last != y->s.last)
                return x->s.last < y->s.last ? -1 : 1;
        return x->s.created < y->s.created ? -1 : x->s.created > y->s.created;
}

/* The key of a snapshot's tarball (<prefix>/kuberesources/<name>.tar.gz). */
static char *resources_key(const S3Store *s, const char *snapshot_key)
{
        const char *name = strrchr(snapshot_key, '/') ? strrchr(snapshot_key, '/') + 1 : snapshot_key;
        _cleanup_free_ char *rel = strdup_printf(S3_RESOURCES_DIR "/%s.tar.gz", name);
        return rel ? s3_key(s, rel) : NULL;
}

/* A deleted snapshot's tarball goes with it (S3 answers a missing one with success too). */
static int delete_resources(const S3Store *s, const char *snapshot_key, char **ret_error)
{
        _cleanup_free_ char *key = resources_key(s, snapshot_key);
        return key ? s3_delete(s, key, ret_error) : -ENOMEM;
}

/* The full snapshots directly under <prefix>/v2/, sorted by last revision (then time). */
static int list_snapshots(const S3Store *s, S3ObjectList *l, Snap **ret, size_t *ret_n, size_t *ret_other)
{
        _cleanup_free_ char *dir = s3_key(s, S3_SNAPSHOT_DIR "/"), *err = NULL;
        size_t n = 0, other = 0;
        if (!dir)
                return log_error_errno(ENOMEM, "out of memory");
        if (s3_list(s, dir, l, &err) < 0)
                return log_error("%s", strempty(err)), -EIO;
        Snap *v = calloc(MAX(l->n, (size_t) 1), sizeof *v);
        if (!v)
                return log_error_errno(ENOMEM, "out of memory");
        for (size_t i = 0; i < l->n; i++) {
                S3Snapshot snap;
                /* Only <dir><name>: nothing deeper, nothing that is no full snapshot. */
                if (strchr(l->v[i].key + strlen(dir), '/') || s3_snapshot_parse(l->v[i].key, &snap) < 0 ||
                    snap.kind != S3_SNAPSHOT_FULL) {
                        other++;
                        continue;
                }
                v[n++] = (Snap){.s = snap, .key = l->v[i].key};
        }
        qsort(v, n, sizeof *v, snap_cmp);
        *ret = v;
        *ret_n = n;
        if (ret_other)
                *ret_other = other;
        return 0;
}

int s3_backups_fetch(const S3Store *s, const char *which, const char *dir, bool reuse, char **ret_snapshot)
{
        _cleanup_(s3_object_list_done) S3ObjectList l = {};
        _cleanup_free_ Snap *v = NULL;
        _cleanup_free_ char *err = NULL, *snap_path = NULL, *tar_path = NULL, *tar_key = NULL;
        const Snap *pick = NULL;
        size_t n = 0;
        char ts[32];
        struct tm tm;
        int r;

        if (list_snapshots(s, &l, &v, &n, NULL) < 0)
                return -EIO;
        const char *want = strrchr(which, '/') ? strrchr(which, '/') + 1 : which;
        for (size_t i = 0; i < n; i++)
                if (streq(want, "latest") || streq(want, strrchr(v[i].key, '/') + 1))
                        pick = &v[i];
        if (!pick) {
                log_error("no full snapshot %s under s3://%s/%s%s" S3_SNAPSHOT_DIR "/ (see `s3 list %s/`)",
                          streq(want, "latest") ? "at all" : want, s->bucket, s->prefix,
                          *s->prefix ? "/" : "", S3_SNAPSHOT_DIR);
                return -ENOENT;
        }
        /* Local time, as cluster-backup names the files it uploads (`date +%F_%H%M%S`). */
        time_t created = pick->s.created;
        if (!localtime_r(&created, &tm) || strftime(ts, sizeof ts, "%Y-%m-%d_%H%M%S", &tm) == 0)
                return log_error("snapshot time %lld is out of range", (long long) created), -ERANGE;
        snap_path = strdup_printf("%s/snapshot_%s.db", dir, ts);
        tar_path = strdup_printf("%s/static_kuberesources_%s.tar.gz", dir, ts);
        tar_key = resources_key(s, pick->key);
        if (!snap_path || !tar_path || !tar_key)
                return log_error_errno(ENOMEM, "out of memory");
        bool have_snap = access(snap_path, F_OK) == 0, have_tar = access(tar_path, F_OK) == 0;
        uint64_t size = 0;
        if (reuse && have_snap && have_tar && etcd_snapshot_verify_file(snap_path, &size) >= 0) {
                log_info("%s already holds the backup of %s (%s), its snapshot verified: not fetched again",
                         dir, ts, pick->key);
                *ret_snapshot = TAKE_PTR(snap_path);
                return 0; /* reused */
        }
        if (have_snap || have_tar) {
                log_error("%s already holds files of the backup of %s; nothing was fetched (name another "
                          "directory)",
                          dir, ts);
                return -EEXIST;
        }
        if ((r = nodecmd_mkdir_p(dir, 0700)) < 0)
                return log_error_errno(r, "cannot create %s", dir);
        log_info("fetching %s (revision %" PRIu64 ") and its tarball into %s", pick->key, pick->s.last, dir);
        r = s3_get_file(s, tar_key, tar_path, &err);
        if (r >= 0)
                r = s3_get_file(s, pick->key, snap_path, &err);
        if (r >= 0 && (r = etcd_snapshot_verify_file(snap_path, &size)) < 0)
                err = strdup_printf("%s does not verify (its trailing SHA-256 does not match): %s",
                                    snap_path, strerror(-r));
        if (r < 0) {
                log_error("%s; removed what this run fetched", err ? err : strerror(-r));
                (void) unlink(snap_path);
                (void) unlink(tar_path);
                return r;
        }
        log_info("fetched the backup of %s into %s: %" PRIu64 " bytes of database, SHA-256 verified", ts,
                 dir, size);
        *ret_snapshot = TAKE_PTR(snap_path);
        return 1; /* fetched */
}

char *s3_backups_tarball_of(const char *snapshot_path)
{
        assert_return(snapshot_path, NULL);
        const char *base = strrchr(snapshot_path, '/') ? strrchr(snapshot_path, '/') + 1 : snapshot_path;
        if (!startswith(base, "snapshot_") || !endswith(base, ".db"))
                return NULL;
        const char *ts = base + strlen("snapshot_");
        return strdup_printf("%.*sstatic_kuberesources_%.*s.tar.gz", (int) (base - snapshot_path),
                             snapshot_path, (int) (strlen(ts) - strlen(".db")), ts);
}

/* `get-backup NAME|latest DIR`: a backup as the restore runbook wants it. */
static int get_backup(const S3Store *s, const char *which, const char *dir)
{
        _cleanup_free_ char *snap = NULL;
        if (s3_backups_fetch(s, which, dir, false, &snap) < 0 || !snap)
                return EXIT_RUNTIME;
        _cleanup_free_ char *tar = s3_backups_tarball_of(snap);
        (void) printf("%s\n%s\n", snap, strempty(tar));
        log_info("restore it with the runbook, naming %s", dir);
        return EXIT_OK;
}

int s3_backups_gc(const S3Store *s, const char *policy, unsigned max_backups, bool dry_run)
{
        _cleanup_(s3_object_list_done) S3ObjectList l = {};
        _cleanup_free_ char *dir = s3_key(s, S3_SNAPSHOT_DIR "/"), *err = NULL;
        _cleanup_free_ Snap *v = NULL;
        _cleanup_free_ bool *del = NULL;
        size_t n = 0, gone = 0, failed = 0, other = 0;

        if (!dir)
                return log_error_errno(ENOMEM, "out of memory");
        if (list_snapshots(s, &l, &v, &n, &other) < 0)
                return -EIO;
        if (!(del = calloc(MAX(n, (size_t) 1), sizeof *del)))
                return log_error_errno(ENOMEM, "out of memory");
        S3Snapshot *plain = calloc(MAX(n, (size_t) 1), sizeof *plain);
        if (!plain)
                return log_error_errno(ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
                plain[i] = v[i].s;
        s3_gc_plan(plain, n, streq_ptr(policy, "Exponential") ? S3_GC_EXPONENTIAL : S3_GC_LIMIT_BASED,
                   max_backups, time(NULL), del);
        free(plain);
        log_info("gc (%s%s) of s3://%s/%s: %zu full snapshots, %zu other objects left alone", policy,
                 dry_run ? ", dry run" : "", s->bucket, dir, n, other);
        for (size_t i = 0; i < n; i++) {
                if (!del[i]) {
                        (void) printf("keep    %s\n", v[i].key);
                        continue;
                }
                (void) printf("%s %s\n", dry_run ? "would delete" : "delete ", v[i].key);
                if (dry_run)
                        continue;
                err = mfree(err);
                if (s3_delete(s, v[i].key, &err) < 0 || delete_resources(s, v[i].key, &err) < 0) {
                        log_error("%s", strempty(err));
                        failed++;
                } else
                        gone++;
        }
        if (!dry_run)
                log_info("gc: %zu deleted, %zu kept%s", gone, n - gone - failed,
                         failed ? ", some failed" : "");
        return failed ? -EIO : 0;
}

int s3_backups_purge(const S3Store *s, bool dry_run)
{
        _cleanup_(s3_object_list_done) S3ObjectList l = {};
        _cleanup_free_ char *dir = NULL, *err = NULL;
        size_t failed = 0;

        if (!s->prefix || !*s->prefix)
                return log_error_errno(EINVAL, "purge needs a --prefix: it never empties a whole bucket");
        if (!(dir = strdup_printf("%s/", s->prefix)))
                return log_error_errno(ENOMEM, "out of memory");
        if (s3_list(s, dir, &l, &err) < 0)
                return log_error("%s", strempty(err)), -EIO;
        log_info("purge%s of s3://%s/%s: %zu objects", dry_run ? " (dry run)" : "", s->bucket, dir, l.n);
        for (size_t i = 0; i < l.n; i++) {
                (void) printf("%s %s\n", dry_run ? "would delete" : "delete ", l.v[i].key);
                err = mfree(err);
                if (!dry_run && s3_delete(s, l.v[i].key, &err) < 0) {
                        log_error("%s", strempty(err));
                        failed++;
                }
        }
        if (!dry_run)
                log_info("purge: %zu deleted%s", l.n - failed, failed ? ", some failed" : "");
        return failed ? -EIO : 0;
}

static int run(const Flags *f, int argc, char *argv[])
{
        _cleanup_(s3_store_done) S3Store s = {};
        _cleanup_free_ char *err = NULL;
        const char *cmd = argv[0];
        size_t want = streq(cmd, "put") || streq(cmd, "get") || streq(cmd, "get-backup") ? 3
                      : streq(cmd, "delete")                                             ? 2
                      : streq(cmd, "gc") || streq(cmd, "purge")                          ? 1
                                                                                         : 0;
        int r;

        if (streq(cmd, "list") ? argc > 2 : (want == 0 || (size_t) argc != want))
                return usage_error("\"%s\" with %d argument(s): see --help", cmd, argc - 1);
        if (streq(cmd, "gc") && !streq_ptr(f->policy, "Exponential") && !streq_ptr(f->policy, "LimitBased"))
                return usage_error("gc needs --policy Exponential or --policy LimitBased (not \"%s\")",
                                   strempty(f->policy));
        if (streq(cmd, "purge") && (!f->prefix || !*f->prefix))
                return usage_error("purge needs --prefix: it deletes everything under it, never a whole "
                                   "bucket");
        if (s3_store_load_dir(f->dir, &s, &err) < 0)
                return usage_error("%s", strempty(err));
        if (!(s.bucket = strdup(f->bucket)) || (f->prefix && !(s.prefix = strdup(f->prefix))) ||
            (f->cacert && (free(s.ca_file), !(s.ca_file = strdup(f->cacert)))))
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        s.part_size = f->part_size;
        if (s3_store_check(&s, &err) < 0)
                return usage_error("%s", strempty(err));

        if (streq(cmd, "gc"))
                return s3_backups_gc(&s, f->policy, f->max_backups, f->dry_run) < 0 ? EXIT_RUNTIME : EXIT_OK;
        if (streq(cmd, "purge"))
                return s3_backups_purge(&s, f->dry_run) < 0 ? EXIT_RUNTIME : EXIT_OK;
        if (streq(cmd, "get-backup"))
                return get_backup(&s, argv[1], argv[2]);
        if (streq(cmd, "list")) {
                _cleanup_(s3_object_list_done) S3ObjectList l = {};
                _cleanup_free_ char *pfx = NULL;
                size_t skip = *s.prefix ? strlen(s.prefix) + 1 : 0;
                pfx = argc > 1 ? s3_key(&s, argv[1]) : NULL;
                if (argc > 1 && !pfx)
                        return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
                r = s3_list(&s, pfx, &l, &err);
                if (r < 0)
                        return log_error("%s", strempty(err)), EXIT_RUNTIME;
                for (size_t i = 0; i < l.n; i++) {
                        char when[64];
                        (void) printf("%12" PRIu64 "  %s  %s\n", l.v[i].size,
                                      format_rfc3339(when, sizeof when,
                                                     (usec_t) l.v[i].last_modified * USEC_PER_SEC),
                                      l.v[i].key + MIN(skip, strlen(l.v[i].key)));
                }
                return EXIT_OK;
        }
        _cleanup_free_ char *key = s3_key(&s, streq(cmd, "put") ? argv[2] : argv[1]);
        if (!key)
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        if (streq(cmd, "put"))
                r = s3_put_file(&s, key, argv[1], &err);
        else if (streq(cmd, "get"))
                r = s3_get_file(&s, key, argv[2], &err);
        else
                r = s3_delete(&s, key, &err);
        if (r < 0)
                return log_error("%s", err ? err : strerror(-r)), EXIT_RUNTIME;
        log_info("s3 %s s3://%s/%s: done", cmd, s.bucket, key);
        return EXIT_OK;
}

static int s3_main(int argc, char *argv[])
{
        enum { ARG_DIR = 0x100, ARG_BUCKET, ARG_PREFIX, ARG_PART, ARG_CACERT, ARG_POLICY, ARG_MAX, ARG_DRY };
        static const struct option options[] = {
                {"credentials-dir", required_argument, NULL, ARG_DIR},
                {"bucket", required_argument, NULL, ARG_BUCKET},
                {"prefix", required_argument, NULL, ARG_PREFIX},
                {"part-size", required_argument, NULL, ARG_PART},
                {"cacert", required_argument, NULL, ARG_CACERT},
                {"policy", required_argument, NULL, ARG_POLICY},
                {"max-backups", required_argument, NULL, ARG_MAX},
                {"dry-run", no_argument, NULL, ARG_DRY},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        Flags f = {.max_backups = 7};
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
                        f.dir = optarg;
                        break;
                case ARG_BUCKET:
                        f.bucket = optarg;
                        break;
                case ARG_PREFIX:
                        f.prefix = optarg;
                        break;
                case ARG_CACERT:
                        f.cacert = optarg;
                        break;
                case ARG_POLICY:
                        f.policy = optarg;
                        break;
                case ARG_DRY:
                        f.dry_run = true;
                        break;
                case ARG_MAX: {
                        char *end;
                        errno = 0;
                        unsigned long m = strtoul(optarg, &end, 10);
                        if (errno || end == optarg || *end || m < 1 || m > 100000)
                                return usage_error("--max-backups \"%s\" is not a number from 1 to 100000",
                                                   optarg);
                        f.max_backups = (unsigned) m;
                        break;
                }
                case ARG_PART: {
                        char *end;
                        errno = 0;
                        unsigned long mib = strtoul(optarg, &end, 10);
                        if (errno || end == optarg || *end || mib < 5 || mib > 512)
                                return usage_error("--part-size \"%s\" is not a number of MiB from 5 to 512",
                                                   optarg);
                        f.part_size = (size_t) mib << 20;
                        break;
                }
                default:
                        nodecmd_flag_error("s3", c, argv);
                        return EXIT_USAGE;
                }
        if (optind >= argc)
                return usage_error(
                        "which command: put, get, list, delete, get-backup, gc or purge? (see --help)");
        if (!f.dir)
                return usage_error("--credentials-dir is required (the mounted Secret with accessKeyID and "
                                   "secretAccessKey)");
        if (!f.bucket)
                return usage_error("--bucket is required");
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return log_error("s3: libcurl failed to start"), EXIT_RUNTIME;
        int r = run(&f, argc - optind, argv + optind);
        curl_global_cleanup();
        return r;
}

const Command cmd_s3 = {
        .name = "s3",
        .summary = "put, get, list, delete and garbage-collect backups in S3-compatible object storage",
        .run = s3_main,
};
