/* `cluster-etcd-operator cluster-backup`: the files upstream's
 * cluster-backup.sh and its Go cluster-backup write, into one directory:
 *   static_kuberesources_<ts>.tar.gz  the current revision directories of
 *       the kube-apiserver, kube-controller-manager, kube-scheduler and etcd
 *       static pods (the ones their manifests name), relative to the config
 *       dir as upstream's (static-pod-resources/etcd-pod-7/...), mode 0600;
 *   snapshot_<ts>.db  the etcd snapshot of the first endpoint (the local
 *       member), streamed over gRPC, checked against its trailing SHA-256
 *       before it is renamed into place, then checked again from disk.
 * <ts> is `date +%F_%H%M%S`; --force appends __POSSIBLY_DIRTY__ as upstream
 * does. With --kubeconfig (cluster-backup.sh passes the node's
 * localhost.kubeconfig) and without --force, the backup is refused unless
 * clusteroperators kube-apiserver, kube-controller-manager, kube-scheduler
 * and etcd all say Progressing=False, as upstream's script checks: a backup
 * taken mid-rollout may hold revision dirs that do not match. Stricter than
 * upstream: each file is written under a hidden temporary name and renamed
 * whole, so a kill leaves no partial file under a backup's name; a failure
 * removes whatever this run wrote; progress is logged in bytes and seconds.
 * Beyond upstream: with --s3-credentials-dir and --s3-bucket the finished
 * backup also goes to an S3-compatible store, laid out as etcd-backup-restore
 * lays out full snapshots: <prefix>/v2/Full-00000000-<revision>-<unix> (the
 * revision etcd reported right before the snapshot) and its tarball beside
 * it as <prefix>/kuberesources/<that name>.tar.gz, uploaded first, so a
 * snapshot in v2/ always has its tarball. The store's settings are checked
 * before anything is written; a failed upload leaves the local backup whole
 * and says so. */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "backup.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "dr/backup-manifest.h"
#include "etcd-flags.h"
#include "etcd/snapshot.h"
#include "etcd/sync.h"
#include "host/fs.h"
#include "host/process.h"
#include "kube-sync.h"
#include "node-util.h"
#include "node.h"
#include "s3-backups.h"
#include "s3/s3.h"
#include "s3/snapshots.h"

static const char *const static_pods[] = {"kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                          "etcd"};

int backup_revision_dir(const char *manifest, const char *resource, char **ret)
{
        _cleanup_free_ char *needle = strdup_printf("static-pod-resources/%s-pod-", resource);
        assert_return(manifest && resource && ret, -EINVAL);
        if (!needle)
                return -ENOMEM;
        for (const char *p = strstr(manifest, needle); p; p = strstr(p + 1, needle)) {
                const char *d = p + strlen(needle);
                size_t n = strspn(d, "0123456789");
                /* The whole path component: "etcd-pod-7", not "etcd-pod-7x" or "etcd-pod-". */
                if (n == 0 || n > 10 ||
                    (d[n] && d[n] != '/' && d[n] != '"' && d[n] != '\'' && d[n] != ' ' && d[n] != '\n' &&
                     d[n] != ','))
                        continue;
                *ret = strndup(p, (size_t) (d - p) + n);
                return *ret ? 0 : -ENOMEM;
        }
        return -ENOENT;
}

int backup_names(usec_t now, bool force, char **ret_tar, char **ret_snapshot)
{
        char ts[32];
        time_t t = (time_t) (now / USEC_PER_SEC);
        struct tm tm;
        if (!localtime_r(&t, &tm) || strftime(ts, sizeof ts, "%Y-%m-%d_%H%M%S", &tm) == 0)
                return -EINVAL;
        const char *sfx = force ? "__POSSIBLY_DIRTY__" : "";
        *ret_tar = strdup_printf("static_kuberesources_%s%s.tar.gz", ts, sfx);
        *ret_snapshot = strdup_printf("snapshot_%s%s.db", ts, sfx);
        return *ret_tar && *ret_snapshot ? 0 : -ENOMEM;
}

/* The snapshot is of the first endpoint, the local member. */
#define ETCD_FLAGS (NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_FIRST_ENDPOINT | NODECMD_ETCD_ENV)

typedef struct Flags {
        const char *config_dir, *backup_dir, *kubeconfig;
        const char *s3_dir, *s3_bucket, *s3_prefix, *s3_gc_policy;
        unsigned s3_max_backups;
        NodeCmdEtcdFlags etcd;
        bool force;
        usec_t timeout;
        S3Store *store; /* checked before the backup; NULL: no upload */
} Flags;

typedef struct RevisionDirs {
        char *v[ELEMENTSOF(static_pods)]; /* relative to the config dir */
} RevisionDirs;

static void revision_dirs_done(RevisionDirs *d)
{
        for (size_t i = 0; i < ELEMENTSOF(d->v); i++)
                d->v[i] = mfree(d->v[i]);
}

/* The four revision directories; < 0 with the reason logged. */
static int find_revision_dirs(const Flags *f, RevisionDirs *ret)
{
        for (size_t i = 0; i < ELEMENTSOF(static_pods); i++) {
                _cleanup_free_ char *path =
                        strdup_printf("%s/manifests/%s-pod.yaml", f->config_dir, static_pods[i]);
                _cleanup_free_ char *text = NULL, *dir = NULL;
                struct stat st;
                int r = path ? read_full_file(path, 4 << 20, &text, NULL) : -ENOMEM;
                if (r < 0)
                        return log_error_errno(
                                r,
                                "cannot read %s: the static pod manifest names the revision to "
                                "back up (is --config-dir right?)",
                                strempty(path));
                r = backup_revision_dir(text, static_pods[i], &dir);
                if (r < 0)
                        return log_error_errno(r, "%s names no static-pod-resources/%s-pod-<N> directory",
                                               path, static_pods[i]);
                _cleanup_free_ char *abs = strdup_printf("%s/%s", f->config_dir, dir);
                if (!abs || stat(abs, &st) < 0 || !S_ISDIR(st.st_mode))
                        return log_error_errno(-ENOENT, "%s (named in %s) is not a directory", strempty(abs),
                                               path);
                ret->v[i] = TAKE_PTR(dir);
        }
        return 0;
}

/* The Progressing condition of a clusteroperator: 0 when False, -EBUSY when
 * not, -ENODATA when it has none; `reason` says which. */
static int co_progressing(const cJSON *co, char *reason, size_t size)
{
        const cJSON *e;
        int r = -ENODATA;
        (void) snprintf(reason, size, "has no Progressing condition");
        JSON_ARRAY_FOREACH (e, json_get_array(co, "status.conditions")) {
                if (!streq_ptr(json_get_string(e, "type"), "Progressing"))
                        continue;
                const char *st = json_get_string(e, "status");
                r = streq_ptr(st, "False") ? 0 : -EBUSY;
                (void) snprintf(reason, size, "Progressing=%s: %s", strempty(st),
                                strempty(json_get_string(e, "message")));
        }
        return r;
}

/* Unless --force: every static pod operator must say Progressing=False. */
static int check_not_progressing(const Flags *f)
{
        _cleanup_(kube_sync_close) KubeSync ks = {};
        _cleanup_free_ char *err = NULL;
        int r;

        if (!f->kubeconfig || f->force)
                return 0;
        if ((r = kube_sync_open(&ks, f->kubeconfig, &err)) < 0)
                return log_error_errno(r,
                                       "cannot check that no operator is Progressing: %s (or back up anyway "
                                       "with --force)",
                                       err ? err : strerror(-r));
        for (size_t i = 0; i < ELEMENTSOF(static_pods); i++) {
                _cleanup_free_ char *path =
                        kube_resource_path(&KUBE_CLUSTEROPERATORS, NULL, static_pods[i], NULL);
                _cleanup_(cJSON_Deletep) cJSON *co = NULL;
                char reason[256];
                if (!path)
                        return -ENOMEM;
                r = kube_sync_get(&ks, path, 10 * USEC_PER_SEC, &co);
                if (r < 0)
                        return log_error_errno(
                                r,
                                "cannot read clusteroperator/%s: %s; check that the API server "
                                "runs (or back up anyway with --force)",
                                static_pods[i], kube_strerror(r));
                if ((r = co_progressing(co, reason, sizeof reason)) < 0)
                        return log_error_errno(r,
                                               "clusteroperator/%s %s: back up once it settles (or anyway "
                                               "with --force, which names the files __POSSIBLY_DIRTY__)",
                                               static_pods[i], reason);
                log_info("clusteroperator/%s: Progressing=False", static_pods[i]);
        }
        return 0;
}

/* tar -cpzf .<final>.partial -C CONFIG_DIR DIRS... under umask 077 (renamed later). */
static int write_tar(const Flags *f, const RevisionDirs *dirs, const char *final)
{
        _cleanup_free_ char *tmp = strdup_printf("%s/.%s.partial", f->backup_dir, final);
        const char *argv[ELEMENTSOF(static_pods) + 6] = {"tar", "-cpzf", tmp, "-C", f->config_dir};
        int r;

        if (!tmp)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(static_pods); i++)
                argv[5 + i] = dirs->v[i];
        (void) unlink(tmp); /* a leftover of a killed run */
        /* The tarball holds every static pod's keys: 0600 from its first byte, not only once
         * tar is done (review L3), whatever DIR's mode and this process's umask. */
        mode_t old_umask = umask(077);
        r = host_command_run(argv, NULL);
        (void) umask(old_umask);
        if (r < 0)
                return log_error_errno(r, "cannot run tar (it must be on PATH, as on every host)");
        if (r != 0) {
                (void) unlink(tmp);
                return log_error_errno(-EIO, "tar failed (status %d) archiving the static pod resources", r);
        }
        /* On disk before it takes its name: tar itself never syncs. */
        r = chmod(tmp, 0600) < 0 ? -errno : fsync_path(tmp);
        if (r < 0) {
                (void) unlink(tmp);
                return log_error_errno(r, "cannot chmod and fsync %s", tmp);
        }
        struct stat st = {};
        (void) stat(tmp, &st);
        log_info("wrote %s (%lld bytes); it takes its name once the snapshot is verified", tmp,
                 (long long) st.st_size);
        return 0;
}

/* What killed runs left: our own temporary files, by their names only. */
static void remove_leftovers(const Flags *f)
{
        _cleanup_(closedirp) DIR *d = opendir(f->backup_dir);
        if (!d)
                return;
        for (struct dirent *de; (de = readdir(d));) {
                const char *n = de->d_name;
                bool ours = endswith(n, ".partial") &&
                            (startswith(n, ".static_kuberesources_") || startswith(n, "snapshot_"));
                if (!ours)
                        continue;
                _cleanup_free_ char *p = strdup_printf("%s/%s", f->backup_dir, n);
                if (p && unlink(p) == 0)
                        log_info("removed %s, left by a backup that did not finish", p);
        }
}

typedef struct Snap {
        bool done;
        EtcdSnapshotResult res;
        char message[256];
        usec_t started, last_log;
} Snap;

static void on_progress(uint64_t written, uint64_t total, void *userdata)
{
        Snap *s = userdata;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        if (written == 0 || now - s->last_log < 2 * USEC_PER_SEC)
                return;
        s->last_log = now;
        log_info("snapshot: %" PRIu64 " of %" PRIu64 " bytes after %.1f s", written, total,
                 (double) (now - s->started) / USEC_PER_SEC);
}

static void on_done(const EtcdSnapshotResult *res, void *userdata)
{
        Snap *s = userdata;
        s->res = *res;
        (void) snprintf(s->message, sizeof s->message, "%s", strempty(res->message));
        s->res.message = s->message;
        s->res.endpoint = NULL;
        s->done = true;
}

static int write_snapshot(const Flags *f, const char *final, uint64_t *ret_revision,
                          uint64_t *ret_cluster_id)
{
        _cleanup_free_ char *dst = strdup_printf("%s/%s", f->backup_dir, final);
        _cleanup_(loop_unrefp) Loop *loop = NULL;
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        Snap s = {.started = now_usec(CLOCK_MONOTONIC), .last_log = now_usec(CLOCK_MONOTONIC)};
        int r;

        if (!dst)
                return -ENOMEM;
        loop = nodecmd_loop_new();
        c = loop ? etcd_client_new(loop, &f->etcd.tls) : NULL;
        if (!c)
                return log_error_errno(-ENOMEM, "out of memory");
        if ((r = etcd_client_set_endpoints(c, f->etcd.endpoints.v, 1)) < 0)
                return log_error_errno(r, "--endpoints: not a client URL such as https://10.0.0.1:2379: %s",
                                       f->etcd.endpoints.v[0]);
        /* The revision the store's name carries: etcd's right before the snapshot (everything up
         * to it is in there), as etcd-backup-restore names its full snapshots. The checksum file
         * records it and the cluster ID too; without a store they are only informational. */
        EtcdStatus st = {};
        r = etcd_sync_status(c, f->etcd.endpoints.v[0], 10 * USEC_PER_SEC, &st);
        if (r < 0 && f->store)
                return log_error_errno(r, "cannot read the revision of %s: %s", f->etcd.endpoints.v[0],
                                       etcd_strerror(r));
        if (r < 0)
                log_warning("cannot read the revision and cluster ID of %s (%s): the checksum file records "
                            "0 for both",
                            f->etcd.endpoints.v[0], etcd_strerror(r));
        *ret_revision = st.revision;
        *ret_cluster_id = st.cluster_id;
        etcd_status_done(&st);
        log_info("snapshot of %s to %s", f->etcd.endpoints.v[0], dst);
        r = etcd_snapshot_save(c, f->etcd.endpoints.v[0], dst, ETCD_SNAPSHOT_GRPC, f->timeout, on_progress,
                               on_done, &s);
        if (r < 0)
                return log_error_errno(r, "cannot start the snapshot of %s", f->etcd.endpoints.v[0]);
        r = loop_run_until(loop, &s.done, f->timeout + 5 * USEC_PER_SEC);
        if (r < 0 || s.res.error < 0) {
                r = r < 0 ? r : s.res.error;
                return log_error_errno(r, "snapshot of %s failed: %s%s%s", f->etcd.endpoints.v[0],
                                       etcd_strerror(r), s.message[0] ? ": " : "", s.message);
        }
        /* Verified while streaming; read back from disk too, as `snapshot status` would. */
        uint64_t size = 0;
        if ((r = etcd_snapshot_verify_file(dst, &size)) < 0 || size != s.res.db_size) {
                (void) unlink(dst);
                return log_error_errno(r < 0 ? r : -EBADMSG, "%s does not verify after writing; removed it",
                                       dst);
        }
        usec_t took = now_usec(CLOCK_MONOTONIC) - s.started;
        log_info("wrote %s: %" PRIu64 " bytes of database in %.1f s (%.1f MB/s), SHA-256 verified", dst,
                 size, (double) took / USEC_PER_SEC,
                 took ? (double) size / ((double) took / USEC_PER_SEC) / 1e6 : 0.0);
        return 0;
}

/* The finished backup to the store: the tarball, then the snapshot. */
static int upload(const Flags *f, uint64_t revision, time_t created, const char *snap, const char *tar,
                  const char *sums)
{
        char name[64];
        (void) s3_snapshot_name(revision, created, name, sizeof name);
        _cleanup_free_ char *snap_rel = strdup_printf(S3_SNAPSHOT_DIR "/%s", name),
                            *tar_rel = strdup_printf(S3_RESOURCES_DIR "/%s.tar.gz", name),
                            *sums_rel = strdup_printf(S3_CHECKSUMS_DIR "/%s.json", name),
                            *snap_key = snap_rel ? s3_key(f->store, snap_rel) : NULL,
                            *tar_key = tar_rel ? s3_key(f->store, tar_rel) : NULL,
                            *sums_key = sums_rel ? s3_key(f->store, sums_rel) : NULL,
                            *snap_path = strdup_printf("%s/%s", f->backup_dir, snap),
                            *tar_path = strdup_printf("%s/%s", f->backup_dir, tar),
                            *sums_path = strdup_printf("%s/%s", f->backup_dir, sums), *err = NULL;
        if (!snap_key || !tar_key || !sums_key || !snap_path || !tar_path || !sums_path)
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        log_info("uploading the backup to s3://%s/%s and %s", f->store->bucket, snap_key, tar_key);
        /* The checksum file last: only then does the backup count ("latest", garbage collection). */
        int r = s3_put_file(f->store, tar_key, tar_path, &err);
        if (r >= 0)
                r = s3_put_file(f->store, snap_key, snap_path, &err);
        if (r >= 0)
                r = s3_put_file(f->store, sums_key, sums_path, &err);
        if (r < 0) {
                log_error("%s; the local backup in %s is complete, only the upload failed", strempty(err),
                          f->backup_dir);
                return EXIT_RUNTIME;
        }
        log_info("backup uploaded: s3://%s/%s (revision %" PRIu64 ")", f->store->bucket, snap_key, revision);
        /* The store's retention: a backup that cannot be collected after is still a backup, but a
         * store that only grows is the failure upstream's upgrade backups had, so it fails loudly. */
        if (f->s3_gc_policy)
                r = s3_backups_gc(f->store, f->s3_gc_policy, f->s3_max_backups, false);
        if (r < 0) {
                log_error("the backup is uploaded, but garbage collection of s3://%s/%s failed (above); "
                          "the store keeps more backups than its policy until a later run succeeds",
                          f->store->bucket, f->store->prefix);
                return EXIT_RUNTIME;
        }
        return EXIT_OK;
}

/* checksums_<ts>.json beside the two files (backup-manifest.h), signed with the store's
 * backupKey when the backup goes to a store. Written last: a backup without it is not whole. */
static int write_checksums(const Flags *f, const char *snap, const char *tar, const char *dst,
                           uint64_t revision, uint64_t cluster_id, time_t created)
{
        BackupManifest m = {.revision = revision, .cluster_id = cluster_id, .created = (int64_t) created};
        _cleanup_free_ char *text = NULL;
        int r;

        if ((r = backup_file_sum(snap, &m.snapshot)) < 0 || (r = backup_file_sum(tar, &m.tarball)) < 0)
                return log_error_errno(r, "cannot read back %s and %s for their checksums", snap, tar);
        if (f->store && (r = backup_manifest_sign(&m, f->store->backup_key)) < 0)
                return log_error_errno(r, "cannot sign the checksum file with %s/backupKey",
                                       strempty(f->store->dir));
        if ((r = backup_manifest_format(&m, &text)) < 0 ||
            (r = write_file_atomic(dst, text, strlen(text), 0600)) < 0)
                return log_error_errno(r, "cannot write %s", dst);
        log_info("wrote %s: SHA-256 %s of the snapshot, %s of the tarball%s", dst, m.snapshot.sha256,
                 m.tarball.sha256, f->store ? ", signed with the store's backupKey" : "");
        return 0;
}

static int backup_run(const Flags *f)
{
        _cleanup_(revision_dirs_done) RevisionDirs dirs = {};
        _cleanup_free_ char *tar = NULL, *snap = NULL;
        struct stat st;
        int r;

        if (stat(f->backup_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
                log_error("%s exists and is not a directory; name a directory for the backup",
                          f->backup_dir);
                return EXIT_USAGE;
        }
        if (find_revision_dirs(f, &dirs) < 0 || check_not_progressing(f) < 0)
                return EXIT_RUNTIME;
        if ((r = host_mkdir_p(f->backup_dir, 0700)) < 0) {
                log_error_errno(r, "cannot create %s", f->backup_dir);
                return EXIT_RUNTIME;
        }
        /* One backup at a time in a directory: remove_leftovers() would take a running one's
         * temporary files for a killed one's (review L14). Held until we exit. */
        _cleanup_(closep) int lock = open(f->backup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0) {
                if (errno == EWOULDBLOCK)
                        log_error("another cluster-backup is writing to %s; run again once it is done",
                                  f->backup_dir);
                else
                        log_error_errno(-errno, "cannot lock %s", f->backup_dir);
                return EXIT_RUNTIME;
        }
        remove_leftovers(f);
        /* One instant names the files and the objects in the store: `s3 get-backup` gives
         * the files back under the names they had here. */
        usec_t started = now_usec(CLOCK_REALTIME);
        time_t created = (time_t) (started / USEC_PER_SEC);
        if (backup_names(started, f->force, &tar, &snap) < 0 || write_tar(f, &dirs, tar) < 0)
                return EXIT_RUNTIME;
        /* The tarball takes its name only after the snapshot took its own: a backup
         * killed at any point leaves no file under a backup's name but, for an
         * instant, a snapshot without its tarball (restore refuses that pair). */
        _cleanup_free_ char *tar_tmp = strdup_printf("%s/.%s.partial", f->backup_dir, tar);
        _cleanup_free_ char *tar_dst = strdup_printf("%s/%s", f->backup_dir, tar);
        if (!tar_tmp || !tar_dst)
                return EXIT_RUNTIME;
        uint64_t revision = 0, cluster_id = 0;
        if (write_snapshot(f, snap, &revision, &cluster_id) < 0) {
                if (unlink(tar_tmp) == 0)
                        log_info("removed %s: a backup is both files or nothing", tar_tmp);
                return EXIT_RUNTIME;
        }
        if ((r = rename_durable(tar_tmp, tar_dst)) < 0) {
                log_error_errno(r, "cannot put %s in place", tar_dst);
                (void) unlink(tar_tmp);
                return EXIT_RUNTIME;
        }
        _cleanup_free_ char *snap_dst = strdup_printf("%s/%s", f->backup_dir, snap),
                            *sums_dst = snap_dst ? backup_manifest_name_of(snap_dst) : NULL;
        if (!sums_dst ||
            write_checksums(f, snap_dst, tar_dst, sums_dst, revision, cluster_id, created) < 0) {
                if (snap_dst && unlink(snap_dst) == 0 && unlink(tar_dst) == 0)
                        log_info("removed %s and %s: a backup without its checksum file is not whole",
                                 snap_dst, tar_dst);
                return EXIT_RUNTIME;
        }
        const char *sums = strrchr(sums_dst, '/') + 1;
        log_info("backup complete in %s: %s, %s and %s", f->backup_dir, snap, tar, sums);
        return f->store ? upload(f, revision, created, snap, tar, sums) : EXIT_OK;
}

static void help(FILE *out)
{
        (void) fprintf(out,
                       "Usage: cluster-etcd-operator cluster-backup [FLAGS] [--force] DIR\n"
                       "\n"
                       "Writes snapshot_<ts>.db (the etcd snapshot of the first endpoint, SHA-256\n"
                       "verified) and static_kuberesources_<ts>.tar.gz (the current revisions of the\n"
                       "kube-apiserver, kube-controller-manager, kube-scheduler and etcd static pods)\n"
                       "into DIR, as upstream's cluster-backup.sh does. Each file appears whole or not\n"
                       "at all; on failure nothing this run wrote is left.\n"
                       "\n");
        nodecmd_etcd_flags_help(out, ETCD_FLAGS, 26);
        (void) fprintf(out,
                       "  --config-dir DIR        the host's Kubernetes config (default: /etc/kubernetes)\n"
                       "  --backup-dir DIR        where the files go (or DIR as the argument)\n"
                       "  --kubeconfig FILE       refuse unless clusteroperators kube-apiserver,\n"
                       "                          kube-controller-manager, kube-scheduler and etcd are\n"
                       "                          Progressing=False (cluster-backup.sh passes the node's\n"
                       "                          localhost.kubeconfig)\n"
                       "  --force                 skip that check and name the files ..__POSSIBLY_DIRTY__\n"
                       "                          (taken while the control plane may be changing)\n"
                       "  --timeout D             for the snapshot (default: 10m)\n"
                       "  --s3-credentials-dir DIR  also upload the backup to an S3-compatible store:\n"
                       "                          accessKeyID, secretAccessKey[, region, endpoint,\n"
                       "                          s3ForcePathStyle] (see `s3 --help`); with --s3-bucket\n"
                       "  --s3-bucket NAME        the store's bucket\n"
                       "  --s3-prefix P           the cluster's prefix in the bucket: the snapshot goes to\n"
                       "                          P/v2/Full-00000000-<revision>-<unix>, the tarball to\n"
                       "                          P/kuberesources/<that name>.tar.gz\n"
                       "  --s3-gc-policy P        after the upload, garbage-collect the store: LimitBased\n"
                       "                          (keep the newest --s3-max-backups) or Exponential (see\n"
                       "                          `s3 --help`); a failed collection fails the run\n"
                       "  --s3-max-backups N      LimitBased: how many full snapshots to keep (default 15)\n"
                       "  -v=N                    log verbosity (4 and up: debug)\n"
                       "  -h, --help              this text\n"
                       "\n"
                       "Exit codes: 0 backup complete, 1 runtime failure, 2 usage error.\n");
}

static int backup_main(int argc, char *argv[])
{
        enum {
                ARG_CONFIG = 0x100,
                ARG_BACKUP,
                ARG_FORCE,
                ARG_TIMEOUT,
                ARG_KUBECONFIG,
                ARG_S3_DIR,
                ARG_S3_BUCKET,
                ARG_S3_PREFIX,
                ARG_S3_GC,
                ARG_S3_MAX,
        };
        static const struct option options[] = {
                NODECMD_ETCD_OPTIONS_ENDPOINTS,
                NODECMD_ETCD_OPTIONS_TLS,
                {"config-dir", required_argument, NULL, ARG_CONFIG},
                {"backup-dir", required_argument, NULL, ARG_BACKUP},
                {"force", no_argument, NULL, ARG_FORCE},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"kubeconfig", required_argument, NULL, ARG_KUBECONFIG},
                {"s3-credentials-dir", required_argument, NULL, ARG_S3_DIR},
                {"s3-bucket", required_argument, NULL, ARG_S3_BUCKET},
                {"s3-prefix", required_argument, NULL, ARG_S3_PREFIX},
                {"s3-gc-policy", required_argument, NULL, ARG_S3_GC},
                {"s3-max-backups", required_argument, NULL, ARG_S3_MAX},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        Flags f = {.config_dir = "/etc/kubernetes",
                   .timeout = 10 * 60 * USEC_PER_SEC,
                   .s3_max_backups = 15,
                   .etcd = {.command = "cluster-backup", .features = ETCD_FLAGS}};
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
                case ARG_CONFIG:
                        f.config_dir = optarg;
                        break;
                case ARG_BACKUP:
                        f.backup_dir = optarg;
                        break;
                case ARG_FORCE:
                        f.force = true;
                        break;
                case ARG_KUBECONFIG:
                        f.kubeconfig = optarg;
                        break;
                case ARG_S3_DIR:
                        f.s3_dir = optarg;
                        break;
                case ARG_S3_BUCKET:
                        f.s3_bucket = optarg;
                        break;
                case ARG_S3_PREFIX:
                        f.s3_prefix = optarg;
                        break;
                case ARG_S3_GC:
                        f.s3_gc_policy = optarg;
                        if (!streq(optarg, "LimitBased") && !streq(optarg, "Exponential")) {
                                log_error("--s3-gc-policy: \"%s\" is not LimitBased or Exponential", optarg);
                                r = EXIT_USAGE;
                        }
                        break;
                case ARG_S3_MAX: {
                        char *end;
                        errno = 0;
                        unsigned long m = strtoul(optarg, &end, 10);
                        if (errno || end == optarg || *end || m < 1 || m > 100000) {
                                log_error("--s3-max-backups: \"%s\" is not a number from 1 to 100000",
                                          optarg);
                                r = EXIT_USAGE;
                        } else
                                f.s3_max_backups = (unsigned) m;
                        break;
                }
                case ARG_TIMEOUT:
                        if (parse_duration(optarg, &f.timeout) < 0 || f.timeout < USEC_PER_SEC) {
                                log_error("--timeout: \"%s\" is not a duration of at least 1s (e.g. 10m)",
                                          optarg);
                                r = EXIT_USAGE;
                        }
                        break;
                default:
                        if (nodecmd_etcd_flags_take(&f.etcd, c, optarg))
                                break;
                        nodecmd_flag_error("cluster-backup", c, argv);
                        r = EXIT_USAGE;
                }
        if (r < 0 && optind < argc) {
                if (f.backup_dir || optind + 1 < argc) {
                        log_error(
                                "cluster-backup: one backup directory, as DIR or --backup-dir; see --help");
                        r = EXIT_USAGE;
                } else
                        f.backup_dir = argv[optind];
        }
        if (r < 0 && (!f.backup_dir || !*f.backup_dir)) {
                log_error("cluster-backup: the backup directory is missing: cluster-backup [--force] DIR");
                r = EXIT_USAGE;
        }
        _cleanup_(s3_store_done) S3Store store = {};
        if (r < 0 && (f.s3_dir || f.s3_bucket || f.s3_prefix || f.s3_gc_policy)) {
                /* The store's settings first: a backup we could not upload is not written at all. */
                _cleanup_free_ char *err = NULL;
                if (!f.s3_dir || !f.s3_bucket) {
                        log_error("cluster-backup: --s3-credentials-dir and --s3-bucket go together");
                        r = EXIT_USAGE;
                } else if (s3_store_load_dir(f.s3_dir, &store, &err) < 0 ||
                           !(store.bucket = strdup(f.s3_bucket)) ||
                           (f.s3_prefix && !(store.prefix = strdup(f.s3_prefix))) ||
                           s3_store_check(&store, &err) < 0 || s3_store_check_backup_key(&store, &err) < 0) {
                        log_error("cluster-backup: %s; nothing was written", err ? err : "out of memory");
                        r = EXIT_USAGE;
                } else if (!(store.loop = nodecmd_loop_new())) {
                        log_error("cluster-backup: cannot start the event loop; nothing was written");
                        r = EXIT_RUNTIME;
                } else
                        f.store = &store;
        }
        /* After the store's settings, so that a wrong one is still a usage error whatever the
         * TLS files; before anything is written, so that a TLS file that cannot be read costs
         * no tarball written and removed. */
        if (r < 0 && (e = nodecmd_etcd_flags_check(&f.etcd)) < 0)
                r = nodecmd_etcd_flags_exit(e, EXIT_RUNTIME);
        if (r < 0)
                r = backup_run(&f);
        nodecmd_etcd_flags_done(&f.etcd);
        return r;
}

const Command cmd_cluster_backup = {
        .name = "cluster-backup",
        .summary = "back up etcd (verified snapshot) and the static pod resources into a directory",
        .run = backup_main,
};
