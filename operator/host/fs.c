/* mkdir -p, a move aside that never replaces, and rm -r that never follows a
 * link (host/fs.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "fs.h"

int host_mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *copy = path ? strdup(path) : NULL;
        struct stat st;
        int r;

        assert_return(path && *path, -EINVAL);
        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1;; p++) {
                if (*p != '/' && *p)
                        continue;
                char saved = *p;
                *p = 0;
                if (mkdir(copy, mode) < 0) {
                        if (errno != EEXIST)
                                return -errno;
                        if (stat(copy, &st) < 0)
                                return -errno;
                        if (!S_ISDIR(st.st_mode))
                                return -ENOTDIR;
                } else if (chmod(copy, mode) < 0) /* exactly `mode`, whatever the umask */
                        return -errno;
                else if ((r = fsync_parent(copy)) < 0) /* a backup dir outlives a power loss */
                        return r;
                if (!saved)
                        return 0;
                *p = '/';
        }
}

static int remove_at(int dfd, const char *name, unsigned depth)
{
        struct stat st;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        if (depth > 64)
                return -ELOOP;
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_(closedirp) DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                int r = remove_at(dirfd(d), de->d_name, depth + 1);
                if (r < 0)
                        return r;
        }
        if (errno != 0)
                return -errno;
        return unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

int host_move_aside(const char *src, const char *base, char **ret_path)
{
        assert_return(src && base, -EINVAL);
        for (unsigned i = 0; i < 100; i++) {
                _cleanup_free_ char *dst = i == 0 ? strdup(base) : strdup_printf("%s-%u", base, i);
                if (!dst)
                        return -ENOMEM;
                int r = renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE) < 0 ? -errno : 0;
                if (r == -EINVAL || r == -ENOSYS) {
                        /* A filesystem without RENAME_NOREPLACE: check, then rename (we are the
                         * only writer of these directories while etcd is stopped). */
                        struct stat st;
                        if (lstat(dst, &st) == 0)
                                r = -EEXIST;
                        else if (errno != ENOENT)
                                return -errno;
                        else
                                r = rename(src, dst) < 0 ? -errno : 0;
                }
                if (r == 0) {
                        if ((r = fsync_parents(src, dst)) < 0)
                                return r;
                        if (ret_path)
                                *ret_path = TAKE_PTR(dst);
                        return 0;
                }
                if (r != -EEXIST && r != -ENOTEMPTY)
                        return r;
        }
        return -EEXIST;
}

int host_remove_tree(const char *dir, const char *name)
{
        assert_return(dir && name && *name && !strchr(name, '/') && !streq(name, ".") && !streq(name, ".."),
                      -EINVAL);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        int r = remove_at(dfd, name, 0);
        close(dfd);
        return r;
}
