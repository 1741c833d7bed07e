/* cluster-restore's procedure (dr/restore.h): this file holds step 1, what
 * is checked before anything on the node changes, and the order of the
 * steps; restore-aside.c sets the etcd pod and the data dir aside (steps 2
 * and 3), restore-modes.c does each mode's work (step 4), restore-peers.c
 * asks the other members. */
#include <dirent.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "backup-manifest.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "etcd/snapshot.h"
#include "host/fs.h"
#include "host/process.h"
#include "restore-internal.h"
#include "restore-tar.h"
#include "restore.h"

static void backup_done(RestoreBackup *b)
{
        b->snapshot = mfree(b->snapshot);
        b->tar = mfree(b->tar);
        b->sums = mfree(b->sums);
}

int restore_init(Restore *rs, const RestoreInput *in)
{
        time_t now = time(NULL);
        struct tm tm;

        assert_return(rs && in, -EINVAL);
        *rs = (Restore){.in = *in};
        if (!localtime_r(&now, &tm) || strftime(rs->ts, sizeof rs->ts, "%Y-%m-%d_%H%M%S", &tm) == 0)
                return -ERANGE;
        return 0;
}

void restore_done(Restore *rs)
{
        if (rs)
                backup_done(&rs->backup);
}

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

int restore_find_backup(Restore *rs)
{
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ char *snap = NULL, *tar = NULL;
        char **names = NULL;
        size_t n = 0;
        int r = 0;

        assert_return(rs && rs->in.backup_dir, -EINVAL);
        RestoreBackup *ret = &rs->backup;
        backup_done(ret);
        if (!(d = opendir(rs->in.backup_dir)))
                return log_error_errno(-errno, "cannot read the backup directory %s", rs->in.backup_dir);
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
                                       rs->in.backup_dir);
        if (r < 0)
                return log_error_errno(r, "out of memory");
        ret->snapshot = strdup_printf("%s/%s", rs->in.backup_dir, snap);
        ret->tar = tar ? strdup_printf("%s/%s", rs->in.backup_dir, tar) : NULL;
        ret->sums = ret->snapshot ? backup_manifest_name_of(ret->snapshot) : NULL;
        if (!ret->snapshot || (tar && !ret->tar) || !ret->sums)
                return log_error_errno(-ENOMEM, "out of memory");
        if (rs->in.mode == RESTORE_POD && !ret->tar)
                return log_error_errno(-ENOENT,
                                       "%s has no static_kuberesources_*.tar.gz of the same backup as %s: a "
                                       "restore puts both back; copy the whole backup directory",
                                       rs->in.backup_dir, snap);
        return 0;
}

/* Review M1/H2: both files against the checksum file cluster-backup wrote beside them, first:
 * a replaced tarball or snapshot, or one cut short, is found before anything changes. */
int restore_check_checksums(const Restore *rs)
{
        _cleanup_free_ char *text = NULL;
        BackupManifest m = {};
        char why[512];
        size_t len = 0;

        assert_return(rs && rs->backup.snapshot && rs->backup.sums, -EINVAL);
        const RestoreBackup *b = &rs->backup;
        int r = read_full_file(b->sums, BACKUP_MANIFEST_MAX, &text, &len);
        if (r == -ENOENT && rs->in.no_checksum_file) {
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

int restore_verify_snapshot(Restore *rs)
{
        _cleanup_free_ char *out = NULL;

        assert_return(rs && rs->backup.snapshot, -EINVAL);
        RestoreBackup *b = &rs->backup;
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
        const char *args[] = {"status", b->snapshot, "-w", "json", NULL};
        const char *tool = NULL;
        r = restore_snapshot_tool_run(args, &out, &tool);
        if (r == -ENOENT) {
                log_warning("neither etcdutl nor etcdctl is on PATH: the snapshot was checked by its "
                            "SHA-256 only");
                return 0;
        }
        _cleanup_(cJSON_Deletep) cJSON *st = NULL;
        if (r != 0 || !out || json_parse(out, strlen(out), &st) < 0 || !cJSON_IsObject(st))
                return log_error_errno(-EBADMSG,
                                       "`%s snapshot status %s` failed (status %d): not a database etcd "
                                       "can read; nothing was changed",
                                       tool ? tool : "etcdutl", b->snapshot, r);
        const cJSON *rev = cJSON_GetObjectItemCaseSensitive(st, "revision");
        const cJSON *keys = cJSON_GetObjectItemCaseSensitive(st, "totalKey");
        b->revision = cJSON_IsNumber(rev) && rev->valuedouble > 0 ? (uint64_t) rev->valuedouble : 0;
        log_info("%s: revision %" PRIu64 ", %.0f keys (%s snapshot status)", b->snapshot, b->revision,
                 cJSON_IsNumber(keys) ? keys->valuedouble : 0.0, tool);
        return 0;
}

int restore_snapshot_tool_run(const char *const args[], char **ret_out, const char **ret_tool)
{
        static const char *const tools[] = {"etcdutl", "etcdctl"};
        const char *argv[18] = {NULL, "snapshot"};
        size_t n = 2;

        assert_return(args && ret_tool, -EINVAL);
        for (size_t i = 0; args[i]; i++) {
                if (n >= ELEMENTSOF(argv) - 1)
                        return -E2BIG;
                argv[n++] = args[i];
        }
        argv[n] = NULL;
        int r = -ENOENT;
        for (size_t i = 0; i < ELEMENTSOF(tools) && r == -ENOENT; i++) {
                argv[0] = *ret_tool = tools[i];
                r = host_command_run(argv, ret_out);
        }
        if (r == -ENOENT)
                *ret_tool = NULL;
        return r;
}

/* ---- step 1: what step 4 needs ---- */

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

int restore_check_pod_source(const Restore *rs, const char *key)
{
        _cleanup_free_ char *src = strdup_printf(
                "%s/static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/%s", rs->in.config_dir, key);
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

/* A quorum restore: the member dir is there, its pod too, this member is the
 * one to restore from, and the copy of its member dir fits. */
static int check_quorum_restore(const Restore *rs)
{
        _cleanup_free_ char *member = strdup_printf("%s/member", rs->in.data_dir);
        struct stat st;
        int r;

        if (!member)
                return -ENOMEM;
        if (stat(member, &st) < 0 || !S_ISDIR(st.st_mode)) {
                log_error("%s does not exist: a quorum restore runs on the member whose data survived "
                          "(the voting member with the highest raft index); nothing was changed",
                          member);
                return -ENOENT;
        }
        if ((r = restore_check_pod_source(rs, "quorum-restore-pod.yaml")) < 0 ||
            (r = restore_check_highest_raft_index(rs)) < 0)
                return r;
        if (!rs->in.skip_copy) {
                uint64_t need = dir_size(member);
                if ((r = host_mkdir_p(rs->in.backup_data_dir, 0700)) < 0 ||
                    (r = have_space(rs->in.backup_data_dir, need + need / 10,
                                    "the copy of the member dir")) < 0) {
                        log_error("free space, or run with ETCD_QUORUM_RESTORE_SKIP_COPY=1 "
                                  "(--skip-copy) to restore without the copy");
                        return r;
                }
        }
        return 0;
}

int restore_check(Restore *rs)
{
        int r;

        assert_return(rs, -EINVAL);
        if (rs->in.mode != RESTORE_QUORUM) {
                if ((r = restore_find_backup(rs)) < 0 || (r = restore_check_checksums(rs)) < 0 ||
                    (r = restore_verify_snapshot(rs)) < 0)
                        return r;
                const char *dir = rs->in.mode == RESTORE_POD ? rs->in.backup_data_dir : rs->in.data_dir;
                if ((r = host_mkdir_p(dir, 0700)) < 0)
                        return log_error_errno(r, "cannot create %s", dir);
                if ((r = have_space(dir, rs->backup.db_size + rs->backup.db_size / 10,
                                    "the restored snapshot")) < 0)
                        return r;
        }
        if (rs->in.mode == RESTORE_POD && (r = restore_check_pod_source(rs, "pod.yaml")) < 0)
                return r;
        if (rs->in.mode == RESTORE_POD) {
                /* The tarball is untrusted (a backup dir, an object store) and root extracts it:
                 * its members checked, then staged, before anything on the node changes. */
                const char *tar = rs->backup.tar;
                char why[512] = "";
                r = restore_tarball_check(tar, why, sizeof why);
                if (r < 0)
                        return log_error_errno(r,
                                               "refusing %s: %s; nothing was changed. Use another backup.",
                                               tar, why[0] ? why : "it cannot be listed");
                log_info("%s: every member is a regular file or directory of a revision directory", tar);
                if ((r = restore_tarball_stage(rs->in.config_dir, tar)) < 0)
                        return r;
        }
        if (rs->in.mode == RESTORE_IN_PLACE && (r = restore_check_not_a_member(rs)) < 0)
                return r;
        if (rs->in.mode == RESTORE_QUORUM)
                return check_quorum_restore(rs);
        return 0;
}

int restore_run(Restore *rs)
{
        int r;

        assert_return(rs, -EINVAL);
        /* 1. Everything checked before anything changes. */
        if ((r = restore_check(rs)) < 0)
                return r;
        /* 2. */
        if ((r = restore_stop_etcd_pod(rs)) < 0)
                return r;
        /* 3. */
        if (rs->in.mode != RESTORE_QUORUM && (r = restore_move_data_dir_aside(rs)) < 0)
                return r;
        /* 4. */
        switch (rs->in.mode) {
        case RESTORE_POD:
                return restore_with_pod(rs);
        case RESTORE_IN_PLACE:
                return restore_in_place(rs);
        default:
                return restore_quorum(rs);
        }
}
