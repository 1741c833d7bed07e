/* Steps 2 and 3 of a restore (dr/restore.h): the etcd pod stopped (its
 * manifest set aside, then until the container runtime shows none of its
 * containers) and the data dir moved aside, never deleted. */
#include <dirent.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/log.h"
#include "host/fs.h"
#include "host/process.h"
#include "restore-internal.h"
#include "restore.h"

/* The etcd pod's containers: all must be gone before the data dir is touched. */
static const char *const etcd_containers[] = {"etcd", "etcdctl", "etcd-metrics", "etcd-readyz", "etcd-rev"};

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
int restore_move_file_across(const char *src, const char *dst)
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
static int move_into(const Restore *rs, const char *path, const char *dir, const char *name)
{
        _cleanup_free_ char *dst = strdup_printf("%s/%s", dir, name);
        _cleanup_free_ char *old = strdup_printf("%s/%s.%s", dir, name, rs->ts), *went = NULL;
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
                        return restore_move_file_across(path, dst);
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

int restore_stop_etcd_pod(const Restore *rs)
{
        _cleanup_free_ char *manifest = strdup_printf("%s/manifests/etcd-pod.yaml", rs->in.config_dir);
        char running[128];
        int r;

        if (!manifest)
                return -ENOMEM;
        if (access(manifest, F_OK) == 0) {
                if ((r = host_mkdir_p(rs->in.stopped_dir, 0755)) < 0)
                        return log_error_errno(r, "cannot create %s", rs->in.stopped_dir);
                if ((r = move_into(rs, manifest, rs->in.stopped_dir, "etcd-pod.yaml")) < 0)
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
                                rs->in.stopped_dir);
                if (!running[0])
                        break;
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (now - start >= rs->in.stop_timeout)
                        return log_error_errno(-ETIMEDOUT,
                                               "the etcd containers still run after %" PRIu64
                                               " s (%s); nothing else was changed (the manifest is in %s)",
                                               (now - start) / USEC_PER_SEC, running, rs->in.stopped_dir);
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

int restore_move_data_dir_aside(const Restore *rs)
{
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ char *extra =
                strdup_printf("%s/extra-data-dir-contents-%s", rs->in.backup_data_dir, rs->ts);
        int r;

        if (!extra)
                return -ENOMEM;
        if ((r = host_mkdir_p(rs->in.backup_data_dir, 0700)) < 0)
                return log_error_errno(r, "cannot create %s", rs->in.backup_data_dir);
        if (!(d = opendir(rs->in.data_dir))) {
                if (errno == ENOENT)
                        return 0;
                return log_error_errno(-errno, "cannot read %s", rs->in.data_dir);
        }
        for (struct dirent *de; (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *src = strdup_printf("%s/%s", rs->in.data_dir, de->d_name);
                if (!src)
                        return -ENOMEM;
                if (streq(de->d_name, "member") || streq(de->d_name, "revision.json"))
                        r = move_into(rs, src, rs->in.backup_data_dir, de->d_name);
                else {
                        /* Anything else (a stray fio file, an old archive): kept, out of the way. */
                        if ((r = host_mkdir_p(extra, 0700)) < 0)
                                return log_error_errno(r, "cannot create %s", extra);
                        r = move_into(rs, src, extra, de->d_name);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}
