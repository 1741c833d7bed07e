/* `cluster-etcd-operator s3`: the object store by hand (put, get, list,
 * delete), with the credentials a backup uses: what a cluster-admin runs to
 * see what a store holds, to fetch a backup for a restore, or to check that
 * a Secret's keys work before a Backup names it. Names are relative to
 * --prefix, as the backups lay them out. */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>

#include "base/fileio.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "dr/backup-manifest.h"
#include "etcd/snapshot.h"
#include "host/fs.h"
#include "node-util.h"
#include "node.h"
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
                "                       static_kuberesources_<ts>.tar.gz, both checked against the\n"
                "                       backup's checksum file (written beside them as\n"
                "                       checksums_<ts>.json); only backups whose checksum file is\n"
                "                       signed with backupKey count\n"
                "  gc                   garbage-collect <prefix>/v2/ (full snapshots; a snapshot's\n"
                "                       checksum file and tarball go with it) by --policy; only\n"
                "                       snapshots whose checksum file is signed with backupKey are\n"
                "                       counted or deleted\n"
                "  purge                delete every object under --prefix (required: never a\n"
                "                       whole bucket); what a deleted Backup's grace period ends in\n"
                "\n"
                "  --credentials-dir DIR   the files accessKeyID and secretAccessKey, and optionally\n"
                "                          region (default us-east-1), endpoint (default AWS's),\n"
                "                          s3ForcePathStyle (true/false), caBundle, insecureHTTP\n"
                "                          (true: allow an http:// endpoint), backupKey (this\n"
                "                          cluster's key for the checksum files; get-backup and gc\n"
                "                          need it): a mounted Secret, as etcd-backup-restore\n"
                "                          reads it (required)\n"
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
        uint64_t size;    /* the object's, as listed */
        bool verified;    /* its checksum file is there, signed with our backupKey, and agrees */
        BackupManifest m; /* when verified */
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

/* The key of a snapshot's checksum file (<prefix>/checksums/<name>.json). */
static char *checksums_key(const S3Store *s, const char *snapshot_key)
{
        const char *name = strrchr(snapshot_key, '/') ? strrchr(snapshot_key, '/') + 1 : snapshot_key;
        _cleanup_free_ char *rel = strdup_printf(S3_CHECKSUMS_DIR "/%s.json", name);
        return rel ? s3_key(s, rel) : NULL;
}

/* A deleted snapshot's checksum file goes first (from then on it no longer counts), its
 * tarball after it (S3 answers a missing object with success too). */
static int delete_backup(const S3Store *s, const char *snapshot_key, char **ret_error)
{
        _cleanup_free_ char *sums = checksums_key(s, snapshot_key), *tar = resources_key(s, snapshot_key);
        int r;
        if (!sums || !tar)
                return -ENOMEM;
        if ((r = s3_delete(s, sums, ret_error)) < 0 || (r = s3_delete(s, snapshot_key, ret_error)) < 0)
                return r;
        return s3_delete(s, tar, ret_error);
}

/* Review M1: whether this cluster wrote `v`: its checksum file (listed in `sums`) signed with
 * our backupKey, for the revision and time its name says, of the size the object has. Another
 * writer of the bucket can add names, copy objects and write checksum files, but not sign. */
static int verify_snapshot(const S3Store *s, const S3ObjectList *sums, Snap *v, char *why, size_t n)
{
        _cleanup_free_ char *key = checksums_key(s, v->key), *text = NULL, *err = NULL;
        char parse_why[160];
        size_t len = 0;
        bool listed = false;
        int r;

        if (!key)
                return -ENOMEM;
        for (size_t i = 0; i < sums->n && !listed; i++)
                listed = streq(sums->v[i].key, key);
        if (!listed)
                return (void) snprintf(why, n, "no checksum file %s", key), -ENOENT;
        r = s3_get_bytes(s, key, BACKUP_MANIFEST_MAX, &text, &len, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return (void) snprintf(why, n, "%s", strempty(err)), r;
        if ((r = backup_manifest_parse(text, len, &v->m, parse_why, sizeof parse_why)) < 0)
                return (void) snprintf(why, n, "%s is no checksum file: %s", key, parse_why), r;
        r = backup_manifest_verify(&v->m, s->backup_key);
        if (r == -ENOKEY)
                return (void) snprintf(why, n, "%s is not signed", key), r;
        if (r < 0)
                return (void) snprintf(why, n, "%s is not signed with this cluster's backupKey", key), r;
        if (v->m.revision != v->s.last || v->m.created != (int64_t) v->s.created)
                return (void) snprintf(why, n,
                                       "%s is for revision %" PRIu64 " at %" PRId64 ", not for this name",
                                       key, v->m.revision, v->m.created),
                       -EBADMSG;
        if (v->m.snapshot.size != v->size)
                return (void) snprintf(why, n, "the object has %" PRIu64 " bytes, %s says %" PRIu64, v->size,
                                       key, v->m.snapshot.size),
                       -EBADMSG;
        v->verified = true;
        return 0;
}

/* Marks the snapshots this cluster wrote; logs why each other one does not count. */
static int verify_snapshots(const S3Store *s, Snap *v, size_t n, size_t *ret_verified)
{
        _cleanup_(s3_object_list_done) S3ObjectList sums = {};
        _cleanup_free_ char *dir = s3_key(s, S3_CHECKSUMS_DIR "/"), *err = NULL;
        size_t ok = 0;

        if (!dir)
                return log_error_errno(ENOMEM, "out of memory");
        if (s3_list(s, dir, &sums, &err) < 0)
                return log_error("%s", strempty(err)), -EIO;
        for (size_t i = 0; i < n; i++) {
                char why[512];
                int r = verify_snapshot(s, &sums, &v[i], why, sizeof why);
                if (r == -ENOMEM)
                        return log_error_errno(r, "out of memory");
                if (r < 0)
                        log_warning("not counted as a backup of this cluster: %s: %s", v[i].key, why);
                else
                        ok++;
        }
        *ret_verified = ok;
        return 0;
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
                v[n++] = (Snap){.s = snap, .key = l->v[i].key, .size = l->v[i].size};
        }
        qsort(v, n, sizeof *v, snap_cmp);
        *ret = v;
        *ret_n = n;
        if (ret_other)
                *ret_other = other;
        return 0;
}

/* Reports why the backup `want` (a name, or "latest") cannot be fetched. */
static int no_backup(const S3Store *s, const Snap *v, size_t n, const char *want)
{
        for (size_t i = 0; i < n; i++)
                if (streq(want, strrchr(v[i].key, '/') + 1))
                        return log_error(
                                       "%s is not a backup this cluster wrote (above); nothing was fetched. "
                                       "Name another, see `s3 list %s/`",
                                       v[i].key, S3_CHECKSUMS_DIR),
                               -EBADMSG;
        log_error("no full snapshot %s with a checksum file signed by this cluster's backupKey under "
                  "s3://%s/%s%s" S3_SNAPSHOT_DIR "/ (see `s3 list %s/` and `s3 list %s/`)",
                  streq(want, "latest") ? "at all" : want, s->bucket, s->prefix, *s->prefix ? "/" : "",
                  S3_SNAPSHOT_DIR, S3_CHECKSUMS_DIR);
        return -ENOENT;
}

/* Both files against the checksum file, and the checksum file beside them. */
static int check_fetched(const Snap *pick, const char *snap_path, const char *tar_path,
                         const char *sums_path, char **ret_error)
{
        _cleanup_free_ char *text = NULL;
        char why[512];
        uint64_t size = 0;
        int r = etcd_snapshot_verify_file(snap_path, &size);
        if (r < 0)
                return (void) (*ret_error = strdup_printf(
                                       "%s does not verify (its trailing SHA-256 does not match): %s",
                                       snap_path, strerror(-r))),
                       r;
        if ((r = backup_manifest_check_files(&pick->m, snap_path, tar_path, why, sizeof why)) < 0)
                return (void) (*ret_error = strdup_printf("%s (against the signed checksum file of %s)", why,
                                                          pick->key)),
                       r;
        if ((r = backup_manifest_format(&pick->m, &text)) < 0 ||
            (r = write_file_atomic(sums_path, text, strlen(text), 0600)) < 0)
                return (void) (*ret_error = strdup_printf("cannot write %s: %s", sums_path, strerror(-r))),
                       r;
        return 0;
}

int s3_backups_fetch(const S3Store *s, const char *which, const char *dir, bool reuse, char **ret_snapshot)
{
        _cleanup_(s3_object_list_done) S3ObjectList l = {};
        _cleanup_free_ Snap *v = NULL;
        _cleanup_free_ char *err = NULL, *snap_path = NULL, *tar_path = NULL, *tar_key = NULL,
                            *sums_path = NULL;
        const Snap *pick = NULL;
        size_t n = 0, verified = 0;
        char ts[32];
        struct tm tm;
        int r;

        if (s3_store_check_backup_key(s, &err) < 0)
                return log_error("%s", strempty(err)), -ENOKEY;
        if (list_snapshots(s, &l, &v, &n, NULL) < 0 || verify_snapshots(s, v, n, &verified) < 0)
                return -EIO;
        const char *want = strrchr(which, '/') ? strrchr(which, '/') + 1 : which;
        /* Sorted by the revision (and time) that each verified checksum file confirms. */
        for (size_t i = 0; i < n; i++)
                if (v[i].verified && (streq(want, "latest") || streq(want, strrchr(v[i].key, '/') + 1)))
                        pick = &v[i];
        if (!pick)
                return no_backup(s, v, n, want);
        /* Local time, as cluster-backup names the files it uploads (`date +%F_%H%M%S`). */
        time_t created = pick->s.created;
        if (!localtime_r(&created, &tm) || strftime(ts, sizeof ts, "%Y-%m-%d_%H%M%S", &tm) == 0)
                return log_error("snapshot time %lld is out of range", (long long) created), -ERANGE;
        snap_path = strdup_printf("%s/snapshot_%s.db", dir, ts);
        tar_path = strdup_printf("%s/static_kuberesources_%s.tar.gz", dir, ts);
        sums_path = snap_path ? backup_manifest_name_of(snap_path) : NULL;
        tar_key = resources_key(s, pick->key);
        if (!snap_path || !tar_path || !tar_key || !sums_path)
                return log_error_errno(ENOMEM, "out of memory");
        bool have_snap = access(snap_path, F_OK) == 0, have_tar = access(tar_path, F_OK) == 0,
             have_sums = access(sums_path, F_OK) == 0;
        if (reuse && have_snap && have_tar &&
            check_fetched(pick, snap_path, tar_path, sums_path, &err) >= 0) {
                log_info("%s already holds the backup of %s (%s), both files match its signed checksum "
                         "file: not fetched again",
                         dir, ts, pick->key);
                *ret_snapshot = TAKE_PTR(snap_path);
                return 0; /* reused */
        }
        err = mfree(err);
        if (have_snap || have_tar || have_sums) {
                log_error("%s already holds files of the backup of %s; nothing was fetched (name another "
                          "directory)",
                          dir, ts);
                return -EEXIST;
        }
        if ((r = host_mkdir_p(dir, 0700)) < 0)
                return log_error_errno(r, "cannot create %s", dir);
        log_info("fetching %s (revision %" PRIu64 ", its checksum file signed by this cluster) and its "
                 "tarball into %s",
                 pick->key, pick->s.last, dir);
        r = s3_get_file(s, tar_key, tar_path, &err);
        if (r >= 0)
                r = s3_get_file(s, pick->key, snap_path, &err);
        if (r >= 0)
                r = check_fetched(pick, snap_path, tar_path, sums_path, &err);
        if (r < 0) {
                log_error("%s; removed what this run fetched", err ? err : strerror(-r));
                (void) unlink(snap_path);
                (void) unlink(tar_path);
                (void) unlink(sums_path);
                return r;
        }
        log_info("fetched the backup of %s into %s: %" PRIu64 " bytes of database; snapshot and tarball "
                 "match the checksum file, written beside them",
                 ts, dir, pick->m.snapshot.size);
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
        _cleanup_free_ char *tar = s3_backups_tarball_of(snap), *sums = backup_manifest_name_of(snap);
        (void) printf("%s\n%s\n%s\n", snap, strempty(tar), strempty(sums));
        log_info("restore it with the runbook, naming %s", dir);
        return EXIT_OK;
}

int s3_backups_gc(const S3Store *s, const char *policy, unsigned max_backups, bool dry_run)
{
        _cleanup_(s3_object_list_done) S3ObjectList l = {};
        _cleanup_free_ char *dir = s3_key(s, S3_SNAPSHOT_DIR "/"), *err = NULL;
        _cleanup_free_ Snap *v = NULL;
        _cleanup_free_ bool *del = NULL;
        size_t n = 0, gone = 0, failed = 0, other = 0, verified = 0;

        if (!dir)
                return log_error_errno(ENOMEM, "out of memory");
        if (s3_store_check_backup_key(s, &err) < 0)
                return log_error("%s", strempty(err)), -ENOKEY;
        if (list_snapshots(s, &l, &v, &n, &other) < 0 || verify_snapshots(s, v, n, &verified) < 0)
                return -EIO;
        if (!(del = calloc(MAX(n, (size_t) 1), sizeof *del)))
                return log_error_errno(ENOMEM, "out of memory");
        /* Review M1: only what this cluster wrote is planned for, so names another writer adds
         * neither push ours out of a LimitBased count nor become the "newest" kept. */
        S3Snapshot *plain = calloc(MAX(verified, (size_t) 1), sizeof *plain);
        bool *plain_del = calloc(MAX(verified, (size_t) 1), sizeof *plain_del);
        if (!plain || !plain_del) {
                free(plain);
                free(plain_del);
                return log_error_errno(ENOMEM, "out of memory");
        }
        for (size_t i = 0, k = 0; i < n; i++)
                if (v[i].verified)
                        plain[k++] = v[i].s;
        s3_gc_plan(plain, verified, streq_ptr(policy, "Exponential") ? S3_GC_EXPONENTIAL : S3_GC_LIMIT_BASED,
                   max_backups, time(NULL), plain_del);
        for (size_t i = 0, k = 0; i < n; i++)
                if (v[i].verified)
                        del[i] = plain_del[k++];
        free(plain);
        free(plain_del);
        log_info("gc (%s%s) of s3://%s/%s: %zu full snapshots of this cluster, %zu without its signed "
                 "checksum file and %zu other objects left alone",
                 policy, dry_run ? ", dry run" : "", s->bucket, dir, verified, n - verified, other);
        for (size_t i = 0; i < n; i++) {
                if (!v[i].verified) {
                        (void) printf("ignore  %s\n", v[i].key);
                        continue;
                }
                if (!del[i]) {
                        (void) printf("keep    %s\n", v[i].key);
                        continue;
                }
                (void) printf("%s %s\n", dry_run ? "would delete" : "delete ", v[i].key);
                if (dry_run)
                        continue;
                err = mfree(err);
                if (delete_backup(s, v[i].key, &err) < 0) {
                        log_error("%s", strempty(err));
                        failed++;
                } else
                        gone++;
        }
        if (!dry_run)
                log_info("gc: %zu deleted, %zu kept%s", gone, verified - gone - failed,
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
        if (!(s.loop = nodecmd_loop_new()))
                return log_error("s3: cannot start the event loop"), EXIT_RUNTIME;
        /* What chooses or deletes backups acts only on those this cluster signed. */
        if ((streq(cmd, "gc") || streq(cmd, "get-backup")) && s3_store_check_backup_key(&s, &err) < 0)
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
        return run(&f, argc - optind, argv + optind);
}

const Command cmd_s3 = {
        .name = "s3",
        .summary = "put, get, list, delete and garbage-collect backups in S3-compatible object storage",
        .run = s3_main,
};
