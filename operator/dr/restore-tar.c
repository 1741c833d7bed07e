/* cluster-restore's static_kuberesources tarball: its member list checked
 * before anything on the node changes, its contents extracted into a
 * staging directory, and the revision directories moved into
 * static-pod-resources/ only in step 4. The tarball comes from a backup
 * directory or an object store, and the restore runs as root: GNU tar as
 * root keeps owners and setuid bits, creates device nodes and follows what
 * a symlink member planted, and anything under etcd-certs/ would become the
 * restore pod or a script root sources. So a member is accepted only when
 * it is exactly what cluster-backup writes: a regular file or a directory
 * under static-pod-resources/<kube-apiserver|kube-controller-manager|
 * kube-scheduler|etcd>-pod-<N>/, named with [A-Za-z0-9._-] parts, none of
 * them "." or "..", no setuid or setgid bit. The list is tar's own (what tar
 * lists is what tar extracts), C-quoted so that a name cannot pass for
 * another field. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/log.h"
#include "host/fs.h"
#include "host/process.h"
#include "restore-tar.h"

#define RESOURCES    "static-pod-resources"
#define LISTING_MAX  (64u << 20)
#define STAGING_NAME ".restore-staging"

static const char *const static_pods[] = {"kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                          "etcd"};

/* <pod>-pod-<digits>, as cluster-backup's revision directories are named. */
static bool revision_dir_is_valid(const char *s, size_t len)
{
        for (size_t i = 0; i < ELEMENTSOF(static_pods); i++) {
                size_t p = strlen(static_pods[i]);
                if (len <= p + 5 || strncmp(s, static_pods[i], p) != 0 || strncmp(s + p, "-pod-", 5) != 0)
                        continue;
                for (size_t k = p + 5; k < len; k++)
                        if (s[k] < '0' || s[k] > '9')
                                return false;
                return true;
        }
        return false;
}

static bool name_is_valid(const char *name, size_t len, bool dir)
{
        size_t root = strlen(RESOURCES);
        if (len > 4096 || len < root || strncmp(name, RESOURCES, root) != 0)
                return false;
        if (len == root || (len == root + 1 && name[root] == '/'))
                return dir; /* static-pod-resources/ itself */
        if (name[root] != '/')
                return false;
        if (dir && name[len - 1] == '/')
                len--; /* tar lists directories with a trailing slash */
        size_t depth = 0;
        for (size_t i = root + 1; i <= len;) {
                size_t j = i;
                while (j < len && name[j] != '/')
                        j++;
                size_t part = j - i;
                if (part == 0 || (part == 1 && name[i] == '.') ||
                    (part == 2 && name[i] == '.' && name[i + 1] == '.'))
                        return false;
                for (size_t k = i; k < j; k++)
                        if (!isalnum((unsigned char) name[k]) && !strchr("._-", name[k]))
                                return false;
                if (depth++ == 0 && !revision_dir_is_valid(name + i, part))
                        return false;
                i = j + 1;
        }
        return dir || depth >= 2; /* a file inside a revision directory, never in its place */
}

static const char *type_words(char t)
{
        switch (t) {
        case 'l':
                return "a symbolic link";
        case 'h':
                return "a hard link";
        case 'c':
        case 'b':
                return "a device node";
        case 'p':
                return "a FIFO";
        case 's':
                return "a socket";
        default:
                return "neither a regular file nor a directory";
        }
}

int restore_tar_listing_check(const char *listing, char *why, size_t n)
{
        size_t members = 0;

        assert_return(listing && why, -EINVAL);
#define BAD(...) ((void) snprintf(why, n, __VA_ARGS__), -EINVAL)
        for (const char *line = listing; *line;) {
                const char *end = line + strcspn(line, "\n");
                const char *q = memchr(line, '"', (size_t) (end - line));
                const char *name = q ? q + 1 : NULL;
                const char *close = name ? memchr(name, '"', (size_t) (end - name)) : NULL;
                int len = (int) (end - line);

                if (end == line) {
                        line = *end ? end + 1 : end;
                        continue;
                }
                if (end - line < 12 || !q || !close)
                        return BAD("tar lists a member this check cannot read: \"%.*s\"", MIN(len, 200),
                                   line);
                int nlen = (int) (close - name);
                if (memchr(name, '\\', (size_t) nlen))
                        return BAD("member \"%.*s\" has characters outside [A-Za-z0-9._-/] in its name",
                                   MIN(nlen, 200), name);
                char t = line[0];
                if (t != '-' && t != 'd')
                        return BAD("member \"%.*s\" is %s", MIN(nlen, 200), name, type_words(t));
                if (line[3] == 's' || line[3] == 'S' || line[6] == 's' || line[6] == 'S')
                        return BAD("member \"%.*s\" has the %s bit (%.10s)", MIN(nlen, 200), name,
                                   line[3] == 's' || line[3] == 'S' ? "setuid" : "setgid", line);
                if (close + 1 != end)
                        return BAD("member \"%.*s\" is listed with more than its name", MIN(nlen, 200),
                                   name);
                if (nlen > 0 && name[0] == '/')
                        return BAD("member \"%.*s\" has an absolute name", MIN(nlen, 200), name);
                if (!name_is_valid(name, (size_t) nlen, t == 'd'))
                        return BAD("member \"%.*s\" is not under " RESOURCES
                                   "/{kube-apiserver,kube-controller-manager,kube-scheduler,etcd}-pod-<N>/ "
                                   "(the revision directories cluster-backup writes; no \"..\", no "
                                   "etcd-certs/, names of [A-Za-z0-9._-])",
                                   MIN(nlen, 200), name);
                members++;
                line = *end ? end + 1 : end;
        }
        if (members == 0)
                return BAD("it holds no members");
#undef BAD
        return 0;
}

int restore_tarball_check(const char *tarball, char *why, size_t n)
{
        char index[] = "/tmp/cluster-restore-tar-list-XXXXXX";
        _cleanup_free_ char *arg = NULL, *listing = NULL;
        size_t len = 0;
        int fd, r;

        assert_return(tarball && why, -EINVAL);
        if ((fd = mkostemp(index, O_CLOEXEC)) < 0)
                return -errno;
        (void) close(fd);
        if (!(arg = strdup_printf("--index-file=%s", index))) {
                (void) unlink(index);
                return -ENOMEM;
        }
        const char *argv[] = {"tar",         "--list", "--verbose", "--numeric-owner", "--quoting-style=c",
                              "--full-time", arg,      "-zf",       tarball,           NULL};
        r = host_command_run(argv, NULL);
        if (r == 0)
                r = read_full_file(index, LISTING_MAX, &listing, &len);
        else if (r > 0) {
                (void) snprintf(why, n, "tar cannot list it (status %d): it is truncated or not a tar.gz",
                                r);
                r = -EBADMSG;
        }
        (void) unlink(index);
        if (r == -E2BIG)
                (void) snprintf(why, n, "its member list is over %u MiB", LISTING_MAX >> 20);
        if (r < 0)
                return r;
        if (memchr(listing, 0, len))
                return (void) snprintf(why, n, "tar lists a name with a NUL byte"), -EINVAL;
        return restore_tar_listing_check(listing, why, n);
}

int restore_tarball_stage(const char *config_dir, const char *tarball)
{
        _cleanup_free_ char *resources = strdup_printf("%s/" RESOURCES, config_dir);
        _cleanup_free_ char *staging = strdup_printf("%s/" RESOURCES "/" STAGING_NAME, config_dir);
        int r;

        if (!resources || !staging)
                return -ENOMEM;
        if ((r = host_mkdir_p(resources, 0755)) < 0)
                return log_error_errno(r, "cannot create %s", resources);
        /* A killed run's staging is made again from the tarball. */
        if ((r = host_remove_tree(resources, STAGING_NAME)) < 0)
                return log_error_errno(r, "cannot remove the leftover %s", staging);
        if (mkdir(staging, 0700) < 0)
                return log_error_errno(-errno, "cannot create %s", staging);
        const char *argv[] = {
                "tar",  "-C",    staging, "--no-same-owner", "--no-same-permissions", "--no-overwrite-dir",
                "-xzf", tarball, NULL};
        r = host_command_run(argv, NULL);
        if (r != 0) {
                (void) host_remove_tree(resources, STAGING_NAME);
                return log_error_errno(r < 0 ? r : -EIO,
                                       "tar -xzf %s into %s failed (%d); nothing was changed", tarball,
                                       staging, r);
        }
        /* tar never syncs: on disk before step 4 renames any of it into place. */
        if ((r = syncfs_path(staging)) < 0) {
                (void) host_remove_tree(resources, STAGING_NAME);
                return log_error_errno(r, "cannot sync %s; nothing was changed", staging);
        }
        log_info("extracted %s into %s (checked: only revision directories)", tarball, staging);
        return 0;
}

int restore_tarball_install(const char *config_dir, const char *ts)
{
        _cleanup_free_ char *resources = strdup_printf("%s/" RESOURCES, config_dir);
        _cleanup_free_ char *from =
                strdup_printf("%s/" RESOURCES "/" STAGING_NAME "/" RESOURCES, config_dir);
        _cleanup_free_ char *replaced =
                strdup_printf("%s/" RESOURCES "/.restore-replaced-%s", config_dir, ts);
        _cleanup_(closedirp) DIR *d = NULL;
        int r;

        if (!resources || !from || !replaced)
                return -ENOMEM;
        if (!(d = opendir(from)))
                return log_error_errno(-errno, "cannot read %s (staged in step 1)", from);
        for (struct dirent *de; (de = readdir(d));) {
                if (!revision_dir_is_valid(de->d_name, strlen(de->d_name)))
                        continue; /* ".", ".."; nothing else passed the check */
                _cleanup_free_ char *src = strdup_printf("%s/%s", from, de->d_name);
                _cleanup_free_ char *dst = strdup_printf("%s/%s", resources, de->d_name);
                _cleanup_free_ char *old = strdup_printf("%s/%s", replaced, de->d_name);
                struct stat st;
                if (!src || !dst || !old)
                        return -ENOMEM;
                if (lstat(dst, &st) == 0) {
                        /* Kept, never deleted: the node's own copy of that revision. */
                        if ((r = host_mkdir_p(replaced, 0700)) < 0)
                                return log_error_errno(r, "cannot create %s", replaced);
                        _cleanup_free_ char *went = NULL;
                        if ((r = host_move_aside(dst, old, &went)) < 0)
                                return log_error_errno(r, "cannot move %s aside to %s", dst, old);
                        log_info("moved the node's %s aside to %s", dst, went);
                }
                if ((r = rename_durable(src, dst)) < 0)
                        return log_error_errno(r, "cannot move %s to %s", src, dst);
                log_info("put %s in place from the backup", dst);
        }
        (void) closedir(TAKE_PTR(d));
        if ((r = host_remove_tree(resources, STAGING_NAME)) < 0)
                log_warning("cannot remove %s/" STAGING_NAME " (%s); it holds nothing needed", resources,
                            strerror(-r));
        return 0;
}
