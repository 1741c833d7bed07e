/* `cluster-etcd-operator cluster-restore`: the careful half of the node's
 * disaster-recovery scripts (cluster-restore.sh and quorum-restore.sh call
 * it). Three modes:
 *   --restore-pod (default)  the multi-node procedure: this master's etcd
 *       comes back as a new one-member cluster from the newest snapshot in
 *       BACKUP_DIR, through the restore pod (restore-etcd-pod/pod.yaml);
 *   --in-place  the single-member path (upstream's ETCD_ETCDCTL_RESTORE):
 *       the snapshot is restored into the data dir with etcdctl, without a
 *       revision bump, and the normal etcd pod comes back;
 *   --quorum-restore  no snapshot: this member's own data becomes a new
 *       one-member cluster (quorum-restore-pod.yaml, --force-new-cluster),
 *       after its member dir was copied aside.
 * In that order, and nothing of the next step before the last one held:
 *   1. both files are checked against the backup's checksum file
 *      (checksums_<ts>.json, backup-manifest.h: SHA-256 and size; a backup
 *      without one is refused unless --no-checksum-file says to go on), the
 *      snapshot is verified (trailing SHA-256, then `etcdctl snapshot
 *      status`) and, for the restore pod, the static_kuberesources tarball's
 *      members are checked (restore-tar.c: only regular files and
 *      directories of revision directories) and it is extracted into a
 *      staging directory: a truncated, corrupt or missing snapshot, or a
 *      tarball with a link, a device, a setuid file, a `..` or a member
 *      outside the revision directories, stops here, before anything on the
 *      node changed;
 *   2. the etcd pod is stopped: etcd-pod.yaml moves to the stopped-manifests
 *      dir, and crictl must show none of its containers (bounded wait);
 *   3. the data dir is moved aside into /var/lib/etcd-backup, never deleted:
 *      member/ to member (an older one there is renamed with a timestamp),
 *      revision.json beside it, anything else into
 *      extra-data-dir-contents-<ts>/;
 *   4. the mode's work (see above), each file written under a temporary
 *      name and renamed into place; the staged revision directories are
 *      renamed into static-pod-resources/ (etcd-certs/ is never written).
 * Run again after a failure or a kill, it picks up where it stopped. */
#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "backup-manifest.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/strlist.h"
#include "etcd/client.h"
#include "etcd/snapshot.h"
#include "etcd/sync.h"
#include "host/fs.h"
#include "host/process.h"
#include "host/tls.h"
#include "node-util.h"
#include "node.h"
#include "restore.h"
#include "s3-backups.h"
#include "s3/s3.h"

typedef enum RestoreMode {
        RESTORE_POD,
        RESTORE_IN_PLACE,
        RESTORE_QUORUM,
} RestoreMode;

typedef struct Flags {
        RestoreMode mode;
        const char *config_dir, *data_dir, *backup_data_dir, *stopped_dir, *backup_dir;
        const char *name, *peer_host; /* --in-place: this member */
        usec_t stop_timeout;
        bool skip_copy, force;
        bool no_checksum_file; /* a backup without checksums_<ts>.json may be restored */
        char ts[32];           /* this run's timestamp, for the names of what it moves aside */
} Flags;

/* The etcd pod's containers: all must be gone before the data dir is touched. */
static const char *const etcd_containers[] = {"etcd", "etcdctl", "etcd-metrics", "etcd-readyz", "etcd-rev"};

int restore_pick_backup(const char *const *names, size_t n, char **ret_snapshot, char **ret_tar)
{
        const char *snap = NULL, *tar = NULL;

        assert_return(ret_snapshot && ret_tar, -EINVAL);
        for (size_t i = 0; i < n; i++)
                if (startswith(names[i], "snapshot_") && endswith(names[i], ".db") &&
                    (!snap || strcmp(names[i], snap) > 0))
                        snap = names[i];
        if (!snap)
                return -ENOENT;
        /* The tarball of the same backup: same stamp (and suffix) as the snapshot. */
        const char *stamp = snap + strlen("snapshot_");
        _cleanup_free_ char *want =
                strdup_printf("static_kuberesources_%.*s.tar.gz", (int) (strlen(stamp) - 3), stamp);
        if (!want)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (streq(names[i], want))
                        tar = names[i];
        *ret_snapshot = strdup(snap);
        *ret_tar = tar ? strdup(tar) : NULL;
        if (!*ret_snapshot || (tar && !*ret_tar)) {
                *ret_snapshot = mfree(*ret_snapshot);
                *ret_tar = mfree(*ret_tar);
                return -ENOMEM;
        }
        return 0;
}

/* ---- step 1: the backup, verified ---- */

typedef struct Backup {
        char *snapshot, *tar; /* full paths; tar NULL when absent */
        char *sums;           /* checksums_<ts>.json of the same backup (it may not exist) */
        uint64_t db_size, revision;
} Backup;

static void backup_done(Backup *b)
{
        b->snapshot = mfree(b->snapshot);
        b->tar = mfree(b->tar);
        b->sums = mfree(b->sums);
}

static int find_backup(const Flags *f, Backup *ret)
{
        _cleanup_(closedirp) DIR *d = opendir(f->backup_dir);
        _cleanup_free_ char *snap = NULL, *tar = NULL;
        char **names = NULL;
        size_t n = 0;
        int r = 0;

        if (!d)
                return log_error_errno(-errno, "cannot read the backup directory %s", f->backup_dir);
        for (struct dirent *de; (de = readdir(d));) {
                char **nn = realloc(names, (n + 1) * sizeof *names);
                if (!nn || !(nn[n] = strdup(de->d_name))) {
                        names = nn ? nn : names;
                        r = -ENOMEM;
                        break;
                }
                names = nn;
                n++;
        }
        if (r >= 0)
                r = restore_pick_backup((const char *const *) names, n, &snap, &tar);
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        if (r == -ENOENT)
                return log_error_errno(r, "no snapshot_*.db in %s: name the directory cluster-backup wrote",
                                       f->backup_dir);
        if (r < 0)
                return log_error_errno(r, "out of memory");
        ret->snapshot = strdup_printf("%s/%s", f->backup_dir, snap);
        ret->tar = tar ? strdup_printf("%s/%s", f->backup_dir, tar) : NULL;
        ret->sums = ret->snapshot ? backup_manifest_name_of(ret->snapshot) : NULL;
        if (!ret->snapshot || (tar && !ret->tar) || !ret->sums)
                return log_error_errno(-ENOMEM, "out of memory");
        if (f->mode == RESTORE_POD && !ret->tar)
                return log_error_errno(-ENOENT,
                                       "%s has no static_kuberesources_*.tar.gz of the same backup as %s: a "
                                       "restore puts both back; copy the whole backup directory",
                                       f->backup_dir, snap);
        return 0;
}

/* Review M1/H2: both files against the checksum file cluster-backup wrote beside them, first:
 * a replaced tarball or snapshot, or one cut short, is found before anything changes. */
static int check_checksums(const Flags *f, const Backup *b)
{
        _cleanup_free_ char *text = NULL;
        BackupManifest m = {};
        char why[512];
        size_t len = 0;
        int r = read_full_file(b->sums, BACKUP_MANIFEST_MAX, &text, &len);
        if (r == -ENOENT && f->no_checksum_file) {
                log_warning("%s does not exist: restoring %s unchecked, as --no-checksum-file "
                            "(ETCD_RESTORE_NO_CHECKSUM_FILE=1) says",
                            b->sums, b->snapshot);
                return 0;
        }
        if (r == -ENOENT)
                return log_error_errno(
                        r,
                        "%s does not exist: a backup is checked against the checksum file cluster-backup "
                        "writes beside it; nothing was changed. Copy the whole backup directory; if this "
                        "backup was written before checksum files and you trust it, run again with "
                        "ETCD_RESTORE_NO_CHECKSUM_FILE=1 (cluster-restore --no-checksum-file)",
                        b->sums);
        if (r < 0)
                return log_error_errno(r, "cannot read %s; nothing was changed", b->sums);
        if ((r = backup_manifest_parse(text, len, &m, why, sizeof why)) < 0)
                return log_error_errno(r,
                                       "%s is not a checksum file cluster-backup writes: %s; nothing was "
                                       "changed. Use another backup.",
                                       b->sums, why);
        if ((r = backup_manifest_check_files(&m, b->snapshot, b->tar, why, sizeof why)) < 0)
                return log_error_errno(r,
                                       "%s; the backup is corrupt or was changed after it was written "
                                       "(checksum file %s); nothing was changed. Use another backup.",
                                       why, b->sums);
        log_info("%s: the snapshot%s match%s it (SHA-256 and size; revision %" PRIu64
                 ", etcd cluster %016" PRIx64 ")",
                 b->sums, b->tar ? " and the tarball" : "", b->tar ? "" : "es", m.revision, m.cluster_id);
        return 0;
}

static int verify_backup(Backup *b)
{
        _cleanup_free_ char *out = NULL;
        int r = etcd_snapshot_verify_file(b->snapshot, &b->db_size);
        if (r == -EBADMSG || r == -EINVAL)
                return log_error_errno(
                        r,
                        "%s is truncated or corrupt: its SHA-256 does not match its contents; "
                        "nothing was changed. Use another backup.",
                        b->snapshot);
        if (r < 0)
                return log_error_errno(r, "cannot read %s; nothing was changed", b->snapshot);
        log_info("%s: %" PRIu64 " bytes of database, SHA-256 verified", b->snapshot, b->db_size);

        /* What etcd itself reads of it, as upstream's check_snapshot_status does. */
        const char *argv[] = {"etcdctl", "snapshot", "status", b->snapshot, "-w", "json", NULL};
        r = host_command_run(argv, &out);
        if (r == -ENOENT) {
                log_warning("etcdctl is not on PATH: the snapshot was checked by its SHA-256 only");
                return 0;
        }
        _cleanup_(cJSON_Deletep) cJSON *st = NULL;
        if (r != 0 || !out || json_parse(out, strlen(out), &st) < 0 || !cJSON_IsObject(st))
                return log_error_errno(
                        -EBADMSG,
                        "`etcdctl snapshot status %s` failed (status %d): not a database etcd "
                        "can read; nothing was changed",
                        b->snapshot, r);
        const cJSON *rev = cJSON_GetObjectItemCaseSensitive(st, "revision");
        const cJSON *keys = cJSON_GetObjectItemCaseSensitive(st, "totalKey");
        b->revision = cJSON_IsNumber(rev) && rev->valuedouble > 0 ? (uint64_t) rev->valuedouble : 0;
        log_info("%s: revision %" PRIu64 ", %.0f keys (etcdctl snapshot status)", b->snapshot, b->revision,
                 cJSON_IsNumber(keys) ? keys->valuedouble : 0.0);
        return 0;
}

/* ---- step 2: the etcd pod stopped ---- */

static int running_etcd_containers(char *ret, size_t size)
{
        ret[0] = 0;
        for (size_t i = 0; i < ELEMENTSOF(etcd_containers); i++) {
                _cleanup_free_ char *label =
                        strdup_printf("io.kubernetes.container.name=%s", etcd_containers[i]);
                _cleanup_free_ char *out = NULL;
                const char *argv[] = {"crictl", "ps",      "--label",
                                      label,    "--label", "io.kubernetes.pod.namespace=openshift-etcd",
                                      "-q",     NULL};
                if (!label)
                        return -ENOMEM;
                int r = host_command_run(argv, &out);
                if (r != 0 || !out)
                        return r < 0 ? r : -EIO;
                if (out[strspn(out, " \n")] != 0) {
                        size_t used = strlen(ret);
                        (void) snprintf(ret + used, size - used, "%s%s", used ? " " : "",
                                        etcd_containers[i]);
                }
        }
        return 0;
}

/* A small regular file (a manifest) to another filesystem, as mv does: the
 * copy is written whole (temporary name, fsync, rename) before the source
 * goes. /etc/kubernetes and /home/core are separate mounts on RHCOS. */
static int move_file_across(const char *src, const char *dst)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct stat st;
        int r;

        if (stat(src, &st) < 0)
                return log_error_errno(-errno, "cannot read %s", src);
        if ((r = read_full_file(src, 16 << 20, &text, &len)) < 0)
                return log_error_errno(r, "cannot read %s", src);
        if ((r = write_file_atomic(dst, text, len, st.st_mode & 07777)) < 0)
                return log_error_errno(r, "cannot write %s", dst);
        if (unlink(src) < 0 || (r = fsync_parent(src)) < 0)
                return log_error_errno(r < 0 ? r : -errno,
                                       "copied %s to %s but cannot remove it (or sync its directory)", src,
                                       dst);
        log_info("moved %s to %s", src, dst);
        return 0;
}

/* Moves `path` to `dir/name`, first renaming whatever is there to name.<ts> (or
 * name.<ts>-N: never over one an earlier run set aside in the same second). */
static int move_into(const Flags *f, const char *path, const char *dir, const char *name)
{
        _cleanup_free_ char *dst = strdup_printf("%s/%s", dir, name);
        _cleanup_free_ char *old = strdup_printf("%s/%s.%s", dir, name, f->ts), *went = NULL;
        struct stat st;
        int r;

        if (!dst || !old)
                return -ENOMEM;
        if (lstat(dst, &st) == 0) {
                if ((r = host_move_aside(dst, old, &went)) < 0)
                        return log_error_errno(r, "cannot move %s aside to %s", dst, old);
                log_info("moved the older %s to %s", dst, went);
        }
        if ((r = rename_durable(path, dst)) < 0) {
                if (r == -EXDEV && lstat(path, &st) == 0 && S_ISREG(st.st_mode))
                        return move_file_across(path, dst);
                if (r == -EXDEV)
                        return log_error_errno(
                                r,
                                "cannot move %s to %s: they are on different filesystems (this "
                                "command moves, never copies and deletes)",
                                path, dst);
                return log_error_errno(r, "cannot move %s to %s", path, dst);
        }
        log_info("moved %s to %s", path, dst);
        return 0;
}

static int stop_etcd_pod(const Flags *f)
{
        _cleanup_free_ char *manifest = strdup_printf("%s/manifests/etcd-pod.yaml", f->config_dir);
        char running[128];
        int r;

        if (!manifest)
                return -ENOMEM;
        if (access(manifest, F_OK) == 0) {
                if ((r = host_mkdir_p(f->stopped_dir, 0755)) < 0)
                        return log_error_errno(r, "cannot create %s", f->stopped_dir);
                if ((r = move_into(f, manifest, f->stopped_dir, "etcd-pod.yaml")) < 0)
                        return r;
        } else
                log_info("%s is absent: the etcd pod is already stopped or never ran here", manifest);

        usec_t start = now_usec(CLOCK_MONOTONIC), last_log = start;
        for (;;) {
                r = running_etcd_containers(running, sizeof running);
                if (r < 0)
                        return log_error_errno(
                                r,
                                "cannot ask the container runtime (crictl ps) whether etcd still "
                                "runs; nothing else was changed (the manifest is in %s)",
                                f->stopped_dir);
                if (!running[0])
                        break;
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (now - start >= f->stop_timeout)
                        return log_error_errno(-ETIMEDOUT,
                                               "the etcd containers still run after %" PRIu64
                                               " s (%s); nothing else was changed (the manifest is in %s)",
                                               (now - start) / USEC_PER_SEC, running, f->stopped_dir);
                if (now - last_log >= 5 * USEC_PER_SEC) {
                        last_log = now;
                        log_info("waiting for the etcd containers to stop: %s (%" PRIu64 " s)", running,
                                 (now - start) / USEC_PER_SEC);
                }
                (void) usleep(500 * 1000);
        }
        log_info("the etcd containers are stopped (after %.1f s)",
                 (double) (now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_SEC);
        return 0;
}

/* ---- step 3: the data dir moved aside ---- */

static int move_data_dir_aside(const Flags *f)
{
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ char *extra =
                strdup_printf("%s/extra-data-dir-contents-%s", f->backup_data_dir, f->ts);
        int r;

        if (!extra)
                return -ENOMEM;
        if ((r = host_mkdir_p(f->backup_data_dir, 0700)) < 0)
                return log_error_errno(r, "cannot create %s", f->backup_data_dir);
        if (!(d = opendir(f->data_dir))) {
                if (errno == ENOENT)
                        return 0;
                return log_error_errno(-errno, "cannot read %s", f->data_dir);
        }
        for (struct dirent *de; (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *src = strdup_printf("%s/%s", f->data_dir, de->d_name);
                if (!src)
                        return -ENOMEM;
                if (streq(de->d_name, "member") || streq(de->d_name, "revision.json"))
                        r = move_into(f, src, f->backup_data_dir, de->d_name);
                else {
                        /* Anything else (a stray fio file, an old archive): kept, out of the way. */
                        if ((r = host_mkdir_p(extra, 0700)) < 0)
                                return log_error_errno(r, "cannot create %s", extra);
                        r = move_into(f, src, extra, de->d_name);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- step 4 ---- */

static int have_space(const char *dir, uint64_t need, const char *what)
{
        struct statvfs sv;
        if (statvfs(dir, &sv) < 0)
                return log_error_errno(-errno, "cannot tell the free space of %s", dir);
        uint64_t avail = (uint64_t) sv.f_bavail * sv.f_frsize;
        if (avail < need)
                return log_error_errno(-ENOSPC, "%s needs %" PRIu64 " bytes in %s; %" PRIu64 " are free",
                                       what, need, dir, avail);
        return 0;
}

/* src to dst through dst's temporary name, fsynced, with progress. */
static int copy_file(const char *src, const char *dst)
{
        _cleanup_free_ char *tmp = NULL;
        _cleanup_(closep) int in = -1;
        _cleanup_(closep) int out = -1;
        char *slash = strrchr(dst, '/');
        static char chunk[1 << 20];
        uint64_t done = 0;
        usec_t start = now_usec(CLOCK_MONOTONIC), last = start;
        struct stat st;
        int r = 0;

        tmp = slash ? strdup_printf("%.*s/.%s.partial", (int) (slash - dst), dst, slash + 1) : NULL;
        if (!tmp)
                return -ENOMEM;
        if ((in = open(src, O_RDONLY | O_CLOEXEC)) < 0 || fstat(in, &st) < 0)
                return log_error_errno(-errno, "cannot read %s", src);
        (void) unlink(tmp); /* a leftover of a killed run */
        if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
                return log_error_errno(-errno, "cannot create %s", tmp);
        for (;;) {
                ssize_t k = read(in, chunk, sizeof chunk);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        r = k < 0 ? -errno : 0;
                        break;
                }
                for (ssize_t w = 0; w < k;) {
                        ssize_t m = write(out, chunk + w, (size_t) (k - w));
                        if (m < 0 && errno != EINTR) {
                                r = -errno;
                                break;
                        }
                        w += m > 0 ? m : 0;
                }
                if (r < 0)
                        break;
                done += (uint64_t) k;
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (now - last >= 2 * USEC_PER_SEC) {
                        last = now;
                        log_info("copying %s: %" PRIu64 " of %lld bytes after %.1f s", src, done,
                                 (long long) st.st_size, (double) (now - start) / USEC_PER_SEC);
                }
        }
        if (r >= 0 && fsync(out) < 0)
                r = -errno;
        if (r >= 0)
                r = rename_durable(tmp, dst);
        if (r < 0) {
                (void) unlink(tmp);
                return log_error_errno(r, "cannot copy %s to %s", src, dst);
        }
        log_info("copied %s to %s (%" PRIu64 " bytes in %.1f s)", src, dst, done,
                 (double) (now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_SEC);
        return 0;
}

/* The restore pod (already written for this node by the installer) into the manifests dir. */
static int install_pod(const Flags *f, const char *key)
{
        _cleanup_free_ char *src = strdup_printf(
                "%s/static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/%s", f->config_dir, key);
        _cleanup_free_ char *dst = strdup_printf("%s/manifests/etcd-pod.yaml", f->config_dir);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r;

        if (!src || !dst)
                return -ENOMEM;
        if ((r = read_full_file(src, 4 << 20, &text, &len)) < 0)
                return log_error_errno(r, "cannot read %s (the installer writes it on every master)", src);
        if (strstr(text, "NODE_ENVVAR_NAME") || strstr(text, "NODE_NAME"))
                return log_error_errno(
                        -EINVAL,
                        "%s still names no node (NODE_NAME): an older installer wrote it; roll "
                        "out a new etcd revision first",
                        src);
        if ((r = write_file_atomic(dst, text, len, 0644)) < 0)
                return log_error_errno(r, "cannot write %s", dst);
        log_info("wrote %s from %s", dst, src);
        return 0;
}

static int check_pod_source(const Flags *f, const char *key)
{
        _cleanup_free_ char *src = strdup_printf(
                "%s/static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/%s", f->config_dir, key);
        if (!src)
                return -ENOMEM;
        if (access(src, R_OK) < 0)
                return log_error_errno(
                        -errno,
                        "%s is missing (the installer writes it on every master): nothing was "
                        "changed",
                        src);
        return 0;
}

static int restore_with_pod(const Flags *f, const Backup *b)
{
        _cleanup_free_ char *snap = strdup_printf("%s/snapshot.db", f->backup_data_dir);
        int r;

        if (!snap || !b->snapshot || !b->tar)
                return -ENOMEM;
        /* Checked and staged in step 1. */
        if ((r = restore_tarball_install(f->config_dir, f->ts)) < 0)
                return r;
        log_info("put the static pod resources of %s into %s/static-pod-resources", b->tar, f->config_dir);
        if (access(snap, F_OK) == 0) {
                _cleanup_free_ char *old = strdup_printf("%s.%s", snap, f->ts);
                r = old ? host_move_aside(snap, old, NULL) : -ENOMEM;
                if (r < 0)
                        return log_error_errno(r, "cannot move the older %s aside", snap);
        }
        if ((r = copy_file(b->snapshot, snap)) < 0)
                return r;
        uint64_t size = 0;
        if ((r = etcd_snapshot_verify_file(snap, &size)) < 0 || size != b->db_size)
                return log_error_errno(r < 0 ? r : -EBADMSG, "the copy %s does not verify", snap);
        return install_pod(f, "pod.yaml");
}

static int restore_in_place(const Flags *f, const Backup *b)
{
        _cleanup_free_ char *tmp = strdup_printf("%s/restore-%s", f->data_dir, f->ts);
        _cleanup_free_ char *member = strdup_printf("%s/member", f->data_dir);
        _cleanup_free_ char *tmp_member = strdup_printf("%s/restore-%s/member", f->data_dir, f->ts);
        _cleanup_free_ char *peer = etcd_peer_url(f->peer_host, 2380);
        _cleanup_free_ char *cluster = peer ? strdup_printf("%s=%s", f->name, peer) : NULL;
        _cleanup_free_ char *token = strdup_printf("openshift-etcd-restore-%s", f->ts);
        _cleanup_free_ char *stopped = strdup_printf("%s/etcd-pod.yaml", f->stopped_dir);
        _cleanup_free_ char *manifest = strdup_printf("%s/manifests/etcd-pod.yaml", f->config_dir);
        int r;

        if (!tmp || !member || !tmp_member || !cluster || !token || !stopped || !manifest || !b->snapshot)
                return -ENOMEM;
        if ((r = host_mkdir_p(f->data_dir, 0700)) < 0)
                return log_error_errno(r, "cannot create %s", f->data_dir);
        const char *argv[] = {"etcdctl",
                              "snapshot",
                              "restore",
                              b->snapshot,
                              "--name",
                              f->name,
                              "--initial-cluster",
                              cluster,
                              "--initial-cluster-token",
                              token,
                              "--initial-advertise-peer-urls",
                              peer,
                              "--data-dir",
                              tmp,
                              NULL};
        log_info("etcdctl snapshot restore %s as %s (%s), no revision bump: the member must not be ahead of "
                 "the running cluster it rejoins",
                 b->snapshot, f->name, peer);
        r = host_command_run(argv, NULL);
        if (r != 0)
                return log_error_errno(r < 0 ? r : -EIO,
                                       "etcdctl snapshot restore failed (%d); %s is left for "
                                       "inspection",
                                       r, tmp);
        /* etcdctl wrote the new member dir without a sync. */
        if ((r = syncfs_path(tmp)) < 0 || (r = rename_durable(tmp_member, member)) < 0)
                return log_error_errno(r, "cannot move %s to %s", tmp_member, member);
        (void) rmdir(tmp);
        log_info("restored %s into %s", b->snapshot, member);
        /* Never over a manifest that appeared while etcd was stopped: the installer of a newer
         * revision writes one when it finds the member gone (a restart then costs no quorum),
         * and putting the stopped, older one over it would leave the node at the old revision
         * while the operator waits for the new one. That manifest starts etcd on the restored
         * data just as well. */
        if (renameat2(AT_FDCWD, stopped, AT_FDCWD, manifest, RENAME_NOREPLACE) < 0) {
                int e = errno;
                if (e == EEXIST || access(manifest, F_OK) == 0) {
                        log_info("%s was written while etcd was stopped (a newer revision's installer): "
                                 "keeping it, it starts etcd on the restored data; the stopped manifest "
                                 "stays in %s",
                                 manifest, stopped);
                        return 0;
                }
                /* Nothing there: EINVAL is a filesystem without RENAME_NOREPLACE, EXDEV another one. */
                if (e != EINVAL && e != EXDEV)
                        return log_error_errno(-e, "cannot move %s back to %s", stopped, manifest);
                if ((r = rename_durable(stopped, manifest)) < 0) {
                        if (r != -EXDEV)
                                return log_error_errno(r, "cannot move %s back to %s", stopped, manifest);
                        if ((r = move_file_across(stopped, manifest)) < 0)
                                return r;
                }
        } else if ((r = fsync_parents(stopped, manifest)) < 0)
                return log_error_errno(r, "moved %s back to %s but cannot sync the directories", stopped,
                                       manifest);
        log_info("moved %s back to %s: the etcd pod starts again", stopped, manifest);
        return 0;
}

static int restore_quorum(const Flags *f)
{
        _cleanup_free_ char *member = strdup_printf("%s/member", f->data_dir);
        _cleanup_free_ char *name = strdup_printf("member-before-quorum-restore-%s", f->ts);
        _cleanup_free_ char *copy = strdup_printf("%s/%s", f->backup_data_dir, strempty(name));
        _cleanup_free_ char *partial = strdup_printf("%s/.%s.partial", f->backup_data_dir, strempty(name));
        int r;

        if (!member || !name || !copy || !partial)
                return -ENOMEM;
        if (!f->skip_copy) {
                if ((r = host_mkdir_p(f->backup_data_dir, 0700)) < 0)
                        return log_error_errno(r, "cannot create %s", f->backup_data_dir);
                /* Under a temporary name until it is whole and on disk: a killed copy must not
                 * look like a complete one. A killed run's leftover goes first. */
                if ((r = host_remove_tree(f->backup_data_dir, strrchr(partial, '/') + 1)) < 0)
                        return log_error_errno(r, "cannot remove the leftover %s", partial);
                const char *argv[] = {"cp", "-a", member, partial, NULL};
                log_info("copying %s to %s before --force-new-cluster rewrites its membership", member,
                         copy);
                usec_t start = now_usec(CLOCK_MONOTONIC);
                r = host_command_run(argv, NULL);
                if (r != 0)
                        return log_error_errno(r < 0 ? r : -EIO,
                                               "cp -a %s %s failed (%d); the etcd pod stays stopped (its "
                                               "manifest is in %s)",
                                               member, partial, r, f->stopped_dir);
                if ((r = syncfs_path(partial)) < 0 || (r = rename_durable(partial, copy)) < 0)
                        return log_error_errno(r, "cannot put the copy %s in place as %s", partial, copy);
                log_info("copied in %.1f s", (double) (now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_SEC);
        }
        return install_pod(f, "quorum-restore-pod.yaml");
}

/* ---- asking the other members ---- */

/* The members this node can ask: ALL_ETCD_ENDPOINTS plus its own client URL,
 * with the ETCDCTL_* certificates, as the scripts set them. */
typedef struct Peers {
        HttpTls tls;
        StrList eps;
        Loop *loop;
        EtcdClient *c;
        char *self;
} Peers;

static void peers_done(Peers *p)
{
        p->c = etcd_client_free(p->c);
        p->loop = loop_unref(p->loop);
        strlist_done(&p->eps);
        host_tls_done(&p->tls);
        p->self = mfree(p->self);
}

/* -ENOENT (logged by the caller) when the scripts' variables are not set. */
static int peers_open(Peers *p)
{
        const char *all = getenv("ALL_ETCD_ENDPOINTS"), *host = getenv("ETCD_THIS_URL_HOST");
        _cleanup_free_ char *err = NULL;
        int r;

        if (!all || !*all || !host || !*host)
                return -ENOENT;
        p->self = strdup_printf("https://%s:2379", host);
        if (!p->self || strlist_add_csv(&p->eps, all) < 0)
                return -ENOMEM;
        r = host_tls_load(getenv("ETCDCTL_CACERT"), getenv("ETCDCTL_CERT"), getenv("ETCDCTL_KEY"), &p->tls,
                          &err);
        if (r < 0)
                return log_warning_errno(r, "cannot load the etcd client certificates: %s", strempty(err));
        p->loop = loop_new();
        p->c = p->loop ? etcd_client_new(p->loop, &p->tls) : NULL;
        if (!p->c || (!strlist_contains(&p->eps, p->self) && strlist_add_csv(&p->eps, p->self) < 0))
                return -ENOMEM;
        return 0;
}

/* ---- in place: only for a member the running cluster no longer has ---- */

/* An in-place restore makes a one-member cluster of this node's data dir.
 * Next to a cluster that still counts this member, that member could never
 * start again (upstream's docs have the admin remove it first, and nothing
 * checks). This asks every other member that serves a quorum read and
 * refuses while one lists this member. When none answers (the whole cluster
 * is down, as for a full restore), there is nothing to collide with. */
static int check_not_a_member(const Flags *f)
{
        _cleanup_(peers_done) Peers p = {};
        _cleanup_free_ char *peer = etcd_peer_url(f->peer_host, 2380);
        int r;

        if (!peer)
                return -ENOMEM;
        r = peers_open(&p);
        if (r == -ENOENT) {
                log_warning("ALL_ETCD_ENDPOINTS or ETCD_THIS_URL_HOST is not set (cluster-restore.sh sets "
                            "them): "
                            "cannot check that the running cluster no longer has this member");
                return 0;
        }
        if (r < 0)
                return f->force ? 0 : r;
        for (size_t i = 0; i < p.eps.n; i++) {
                _cleanup_(etcd_member_list_freep) EtcdMemberList *l = NULL;
                if (streq(p.eps.v[i], p.self))
                        continue;
                if (etcd_sync_current_member_list(p.c, p.eps.v[i], 3 * USEC_PER_SEC, &l) < 0) {
                        log_info("  %s: no answer with quorum", p.eps.v[i]);
                        continue;
                }
                const EtcdMember *m = etcd_member_list_find_by_peer_url(l, peer);
                if (!m)
                        m = etcd_member_list_find_by_name(l, f->name);
                if (!m) {
                        log_info("  %s: the running cluster does not list this member (%s): it can be "
                                 "restored "
                                 "in place and added again",
                                 p.eps.v[i], peer);
                        return 0;
                }
                char hex[17];
                log_error(
                        "refusing: the cluster that %s serves still has this member (%s, ID %s). Remove it "
                        "first (etcd-member-remove.sh %s on a healthy master, restore-single-member.md); "
                        "or, to "
                        "restore the whole cluster, stop etcd on every other master (disable-etcd.sh). "
                        "Nothing was changed",
                        p.eps.v[i], f->name, etcd_id_to_hex(m->id, hex), f->name);
                return f->force ? 0 : -EEXIST;
        }
        log_info("no other member answers with quorum: restoring in place as a new cluster");
        return 0;
}

/* ---- quorum restore: is this the member to restore from? ---- */

/* Upstream leaves it to the admin to pick the voting member with the highest
 * raft index. This asks every member it can reach and refuses when this
 * member is a learner or another reachable voter is further ahead. */
static int check_highest_raft_index(const Flags *f)
{
        _cleanup_(peers_done) Peers p = {};
        uint64_t mine = 0, best = 0;
        const char *best_ep = NULL;
        bool self_answered = false, self_learner = false;
        int r;

        r = peers_open(&p);
        if (r == -ENOENT) {
                log_warning(
                        "ALL_ETCD_ENDPOINTS or ETCD_THIS_URL_HOST is not set (quorum-restore.sh sets them): "
                        "cannot check that this member has the highest raft index");
                return f->force ? 0 : -EINVAL;
        }
        if (r < 0)
                return f->force ? 0 : r;
        log_info("the members this node can reach:");
        for (size_t i = 0; i < p.eps.n; i++) {
                EtcdStatus st = {};
                bool is_self = streq(p.eps.v[i], p.self);
                r = etcd_sync_status(p.c, p.eps.v[i], 3 * USEC_PER_SEC, &st);
                if (r < 0) {
                        log_info("  %s%s: no answer (%s)", p.eps.v[i], is_self ? " (this member)" : "",
                                 etcd_strerror(r));
                        etcd_status_done(&st);
                        continue;
                }
                log_info("  %s%s: raft index %" PRIu64 "%s", p.eps.v[i], is_self ? " (this member)" : "",
                         st.raft_index, st.is_learner ? ", learner" : "");
                if (is_self) {
                        self_answered = true;
                        self_learner = st.is_learner;
                        mine = st.raft_index;
                } else if (!st.is_learner && st.raft_index > best) {
                        best = st.raft_index;
                        best_ep = p.eps.v[i];
                }
                etcd_status_done(&st);
        }
        if (!self_answered) {
                log_warning("this member (%s) does not answer: its raft index is unknown", p.self);
                if (!f->force) {
                        log_error("refusing: start with the member whose etcd runs and has the highest raft "
                                  "index, "
                                  "or run with --force if this one is it; nothing was changed");
                        return -EHOSTDOWN;
                }
                return 0;
        }
        if (self_learner && !f->force)
                return log_error_errno(-EINVAL,
                                       "refusing: this member is a learner (it may lack committed data); "
                                       "use a voting member; nothing was changed");
        if (best > mine && !f->force)
                return log_error_errno(-EINVAL,
                                       "refusing: %s is further ahead (raft index %" PRIu64 " > %" PRIu64
                                       "); run quorum-restore.sh there, or --force to lose what it has "
                                       "beyond this member; nothing was changed",
                                       best_ep, best, mine);
        log_info("this member has the highest raft index of those that answer (%" PRIu64 ")", mine);
        return 0;
}

static uint64_t dir_size(const char *path)
{
        _cleanup_(closedirp) DIR *d = opendir(path);
        uint64_t sum = 0;
        if (!d)
                return 0;
        for (struct dirent *de; (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *p = strdup_printf("%s/%s", path, de->d_name);
                struct stat st;
                if (!p || lstat(p, &st) < 0)
                        continue;
                sum += S_ISDIR(st.st_mode) ? dir_size(p) : (uint64_t) st.st_size;
        }
        return sum;
}

static int restore_run(Flags *f)
{
        _cleanup_(backup_done) Backup b = {};
        time_t now = time(NULL);
        struct tm tm;
        int r;

        if (!localtime_r(&now, &tm) || strftime(f->ts, sizeof f->ts, "%Y-%m-%d_%H%M%S", &tm) == 0)
                return EXIT_RUNTIME;

        /* 1. Everything checked before anything changes. */
        if (f->mode != RESTORE_QUORUM) {
                if (find_backup(f, &b) < 0 || check_checksums(f, &b) < 0 || verify_backup(&b) < 0)
                        return EXIT_RUNTIME;
                const char *dir = f->mode == RESTORE_POD ? f->backup_data_dir : f->data_dir;
                if ((r = host_mkdir_p(dir, 0700)) < 0) {
                        log_error_errno(r, "cannot create %s", dir);
                        return EXIT_RUNTIME;
                }
                if (have_space(dir, b.db_size + b.db_size / 10, "the restored snapshot") < 0)
                        return EXIT_RUNTIME;
        }
        if (f->mode == RESTORE_POD && check_pod_source(f, "pod.yaml") < 0)
                return EXIT_RUNTIME;
        if (f->mode == RESTORE_POD) {
                /* The tarball is untrusted (a backup dir, an object store) and root extracts it:
                 * its members checked, then staged, before anything on the node changes. */
                char why[512] = "";
                r = restore_tarball_check(b.tar, why, sizeof why);
                if (r < 0) {
                        log_error_errno(r, "refusing %s: %s; nothing was changed. Use another backup.",
                                        b.tar, why[0] ? why : "it cannot be listed");
                        return EXIT_RUNTIME;
                }
                log_info("%s: every member is a regular file or directory of a revision directory", b.tar);
                if (restore_tarball_stage(f->config_dir, b.tar) < 0)
                        return EXIT_RUNTIME;
        }
        if (f->mode == RESTORE_IN_PLACE && check_not_a_member(f) < 0)
                return EXIT_RUNTIME;
        if (f->mode == RESTORE_QUORUM) {
                _cleanup_free_ char *member = strdup_printf("%s/member", f->data_dir);
                struct stat st;
                if (!member)
                        return EXIT_RUNTIME;
                if (stat(member, &st) < 0 || !S_ISDIR(st.st_mode)) {
                        log_error(
                                "%s does not exist: a quorum restore runs on the member whose data survived "
                                "(the voting member with the highest raft index); nothing was changed",
                                member);
                        return EXIT_RUNTIME;
                }
                if (check_pod_source(f, "quorum-restore-pod.yaml") < 0 || check_highest_raft_index(f) < 0)
                        return EXIT_RUNTIME;
                if (!f->skip_copy) {
                        uint64_t need = dir_size(member);
                        if (host_mkdir_p(f->backup_data_dir, 0700) < 0 ||
                            have_space(f->backup_data_dir, need + need / 10, "the copy of the member dir") <
                                    0) {
                                log_error("free space, or run with ETCD_QUORUM_RESTORE_SKIP_COPY=1 "
                                          "(--skip-copy) to restore without the copy");
                                return EXIT_RUNTIME;
                        }
                }
        }

        /* 2. */
        if (stop_etcd_pod(f) < 0)
                return EXIT_RUNTIME;
        /* 3. */
        if (f->mode != RESTORE_QUORUM && move_data_dir_aside(f) < 0)
                return EXIT_RUNTIME;
        /* 4. */
        switch (f->mode) {
        case RESTORE_POD:
                r = restore_with_pod(f, &b);
                break;
        case RESTORE_IN_PLACE:
                r = restore_in_place(f, &b);
                break;
        default:
                r = restore_quorum(f);
        }
        if (r < 0)
                return EXIT_RUNTIME;

        if (f->mode == RESTORE_IN_PLACE)
                log_info("restored. The member must be (re)added to the cluster: the operator does it once "
                         "its etcd pod runs again.");
        else
                log_info("the %s pod is in place: etcd starts as a new one-member cluster. Next (the "
                         "runbook): wait until the API answers, set "
                         "unsupportedConfigOverrides.useUnsupportedUnsafeNonHANonProductionUnstableEtcd, "
                         "force a new revision (forceRedeploymentReason), wait for every node at it, then "
                         "unset the override.",
                         f->mode == RESTORE_POD ? "restore" : "quorum-restore");
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
                "  --in-place        the snapshot is restored into the data dir with etcdctl (no\n"
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
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return log_error("cluster-restore: libcurl failed to start; nothing was changed"),
                       EXIT_RUNTIME;
        int r = s3_backups_fetch(&store, which ? which : "latest", dir, true, &snap);
        curl_global_cleanup();
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
        Flags f = {.config_dir = "/etc/kubernetes",
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
                        f.mode = RESTORE_POD;
                        modes++;
                        break;
                case ARG_IN_PLACE:
                        f.mode = RESTORE_IN_PLACE;
                        modes++;
                        break;
                case ARG_QUORUM:
                        f.mode = RESTORE_QUORUM;
                        modes++;
                        break;
                case ARG_CONFIG:
                        f.config_dir = optarg;
                        break;
                case ARG_DATA:
                        f.data_dir = optarg;
                        break;
                case ARG_BACKUP_DATA:
                        f.backup_data_dir = optarg;
                        break;
                case ARG_STOPPED:
                        f.stopped_dir = optarg;
                        break;
                case ARG_STOP_TIMEOUT: {
                        unsigned s = 0;
                        if (nodecmd_parse_revision(optarg, &s) < 0) {
                                log_error("--stop-timeout: \"%s\" is not a number of seconds (e.g. 300)",
                                          optarg);
                                r = EXIT_USAGE;
                        }
                        f.stop_timeout = (usec_t) s * USEC_PER_SEC;
                        break;
                }
                case ARG_NAME:
                        f.name = optarg;
                        break;
                case ARG_PEER_HOST:
                        f.peer_host = optarg;
                        break;
                case ARG_SKIP_COPY:
                        f.skip_copy = true;
                        break;
                case ARG_NO_CHECKSUM_FILE:
                        f.no_checksum_file = true;
                        break;
                case ARG_FORCE:
                        f.force = true;
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
                f.skip_copy = true;
        e = getenv("ETCD_RESTORE_NO_CHECKSUM_FILE");
        if (e && streq(e, "1"))
                f.no_checksum_file = true;
        if (!f.name)
                f.name = getenv("ETCD_THIS_NAME");
        if (!f.peer_host)
                f.peer_host = getenv("ETCD_THIS_URL_HOST");
        if (modes > 1) {
                log_error("cluster-restore: one of --restore-pod, --in-place and --quorum-restore");
                return EXIT_USAGE;
        }
        if (f.mode == RESTORE_QUORUM) {
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
                f.backup_dir = argv[optind];
        if (f.mode == RESTORE_IN_PLACE && (!f.name || !*f.name || !f.peer_host || !*f.peer_host)) {
                log_error("cluster-restore --in-place: --name and --peer-host (or ETCD_THIS_NAME and "
                          "ETCD_THIS_URL_HOST, which cluster-restore.sh sets) name this member");
                return EXIT_USAGE;
        }
        if (s3_dir || s3_bucket || s3_prefix || s3_backup) {
                if (f.mode == RESTORE_QUORUM) {
                        log_error(
                                "cluster-restore --quorum-restore restores from this member's own data: no "
                                "--s3-* flags");
                        return EXIT_USAGE;
                }
                if ((r = fetch_from_store(f.backup_dir, s3_dir, s3_bucket, s3_prefix, s3_backup)) != EXIT_OK)
                        return r;
        }
        return restore_run(&f);
}

const Command cmd_cluster_restore = {
        .name = "cluster-restore",
        .summary = "restore this master's etcd from a snapshot, or from its own data (quorum restore)",
        .run = restore_main,
};
