/* Step 4 of a restore (dr/restore.h), by mode: the restore pod with the
 * backup's static pod resources and snapshot, the snapshot restored in place
 * by etcdctl, or the quorum-restore pod after a copy of the member dir. Each
 * file is written under a temporary name and renamed into place. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/log.h"
#include "etcd/client.h"
#include "etcd/snapshot.h"
#include "host/fs.h"
#include "host/process.h"
#include "restore-internal.h"
#include "restore-tar.h"
#include "restore.h"

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
static int install_pod(const Restore *rs, const char *key)
{
        _cleanup_free_ char *src = strdup_printf(
                "%s/static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/%s", rs->in.config_dir, key);
        _cleanup_free_ char *dst = strdup_printf("%s/manifests/etcd-pod.yaml", rs->in.config_dir);
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

int restore_with_pod(const Restore *rs)
{
        const RestoreBackup *b = &rs->backup;
        _cleanup_free_ char *snap = strdup_printf("%s/snapshot.db", rs->in.backup_data_dir);
        int r;

        if (!snap || !b->snapshot || !b->tar)
                return -ENOMEM;
        /* Checked and staged in step 1. */
        if ((r = restore_tarball_install(rs->in.config_dir, rs->ts)) < 0)
                return r;
        log_info("put the static pod resources of %s into %s/static-pod-resources", b->tar,
                 rs->in.config_dir);
        if (access(snap, F_OK) == 0) {
                _cleanup_free_ char *old = strdup_printf("%s.%s", snap, rs->ts);
                r = old ? host_move_aside(snap, old, NULL) : -ENOMEM;
                if (r < 0)
                        return log_error_errno(r, "cannot move the older %s aside", snap);
        }
        if ((r = copy_file(b->snapshot, snap)) < 0)
                return r;
        uint64_t size = 0;
        if ((r = etcd_snapshot_verify_file(snap, &size)) < 0 || size != b->db_size)
                return log_error_errno(r < 0 ? r : -EBADMSG, "the copy %s does not verify", snap);
        return install_pod(rs, "pod.yaml");
}

int restore_in_place(const Restore *rs)
{
        const RestoreBackup *b = &rs->backup;
        _cleanup_free_ char *tmp = strdup_printf("%s/restore-%s", rs->in.data_dir, rs->ts);
        _cleanup_free_ char *member = strdup_printf("%s/member", rs->in.data_dir);
        _cleanup_free_ char *tmp_member = strdup_printf("%s/restore-%s/member", rs->in.data_dir, rs->ts);
        _cleanup_free_ char *peer = etcd_peer_url(rs->in.peer_host, 2380);
        _cleanup_free_ char *cluster = peer ? strdup_printf("%s=%s", rs->in.name, peer) : NULL;
        _cleanup_free_ char *token = strdup_printf("openshift-etcd-restore-%s", rs->ts);
        _cleanup_free_ char *stopped = strdup_printf("%s/etcd-pod.yaml", rs->in.stopped_dir);
        _cleanup_free_ char *manifest = strdup_printf("%s/manifests/etcd-pod.yaml", rs->in.config_dir);
        int r;

        if (!tmp || !member || !tmp_member || !cluster || !token || !stopped || !manifest || !b->snapshot)
                return -ENOMEM;
        if ((r = host_mkdir_p(rs->in.data_dir, 0700)) < 0)
                return log_error_errno(r, "cannot create %s", rs->in.data_dir);
        const char *args[] = {"restore",
                              b->snapshot,
                              "--name",
                              rs->in.name,
                              "--initial-cluster",
                              cluster,
                              "--initial-cluster-token",
                              token,
                              "--initial-advertise-peer-urls",
                              peer,
                              "--data-dir",
                              tmp,
                              NULL};
        const char *tool = NULL;
        log_info("snapshot restore %s as %s (%s), no revision bump: the member must not be ahead of "
                 "the running cluster it rejoins",
                 b->snapshot, rs->in.name, peer);
        r = restore_snapshot_tool_run(args, NULL, &tool);
        if (r != 0)
                return log_error_errno(r < 0 ? r : -EIO,
                                       "%s snapshot restore failed (%d)%s; %s is left for inspection",
                                       tool ? tool : "etcdutl or etcdctl", r,
                                       r == -ENOENT ? ": neither etcdutl nor etcdctl is on PATH" : "", tmp);
        log_info("restored by %s snapshot restore", tool);
        /* The tool wrote the new member dir without a sync. */
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
                        if ((r = restore_move_file_across(stopped, manifest)) < 0)
                                return r;
                }
        } else if ((r = fsync_parents(stopped, manifest)) < 0)
                return log_error_errno(r, "moved %s back to %s but cannot sync the directories", stopped,
                                       manifest);
        log_info("moved %s back to %s: the etcd pod starts again", stopped, manifest);
        return 0;
}

int restore_quorum(const Restore *rs)
{
        _cleanup_free_ char *member = strdup_printf("%s/member", rs->in.data_dir);
        _cleanup_free_ char *name = strdup_printf("member-before-quorum-restore-%s", rs->ts);
        _cleanup_free_ char *copy = strdup_printf("%s/%s", rs->in.backup_data_dir, strempty(name));
        _cleanup_free_ char *partial =
                strdup_printf("%s/.%s.partial", rs->in.backup_data_dir, strempty(name));
        int r;

        if (!member || !name || !copy || !partial)
                return -ENOMEM;
        if (!rs->in.skip_copy) {
                if ((r = host_mkdir_p(rs->in.backup_data_dir, 0700)) < 0)
                        return log_error_errno(r, "cannot create %s", rs->in.backup_data_dir);
                /* Under a temporary name until it is whole and on disk: a killed copy must not
                 * look like a complete one. A killed run's leftover goes first. */
                if ((r = host_remove_tree(rs->in.backup_data_dir, strrchr(partial, '/') + 1)) < 0)
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
                                               member, partial, r, rs->in.stopped_dir);
                if ((r = syncfs_path(partial)) < 0 || (r = rename_durable(partial, copy)) < 0)
                        return log_error_errno(r, "cannot put the copy %s in place as %s", partial, copy);
                log_info("copied in %.1f s", (double) (now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_SEC);
        }
        return install_pod(rs, "quorum-restore-pod.yaml");
}
