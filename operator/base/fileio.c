/* File helpers. */
#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>

#include "fileio.h"

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_(closep) int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        assert_return(path && ret, -EINVAL);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (;;) {
                if (len + 4096 + 1 > cap) {
                        cap = MAX(cap * 2, len + 4096 + 1);
                        char *n = realloc(buf, cap);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                }
                ssize_t k = read(fd, buf + len, cap - len - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                if (len > max)
                        return -E2BIG;
        }
        if (!buf && !(buf = calloc(1, 1)))
                return -ENOMEM;
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = len;
        return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
        _cleanup_free_ char *tmp = NULL, *dcopy = NULL;
        _cleanup_(closep) int fd = -EBADF, dfd = -EBADF;
        const char *p = data;

        assert_return(path && (data || len == 0), -EINVAL);
        /* A leading dot: the kubelet skips such names in its static pod dir, so it
         * never starts (and then kills) a pod from a half-written temp file. */
        const char *slash = strrchr(path, '/');
        tmp = slash ? strdup_printf("%.*s/.%s.tmp.XXXXXX", (int) (slash - path), path, slash + 1)
                    : strdup_printf(".%s.tmp.XXXXXX", path);
        dcopy = strdup(path);
        if (!tmp || !dcopy)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (size_t off = 0; off < len;) {
                ssize_t k = write(fd, p + off, len - off);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = -errno;
                        (void) unlink(tmp);
                        return e;
                }
                off += (size_t) k;
        }
        if (fchmod(fd, mode) < 0 || fsync(fd) < 0 || rename(tmp, path) < 0) {
                int e = -errno;
                (void) unlink(tmp);
                return e;
        }
        dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                (void) fsync(dfd);
        return 0;
}

static int sync_path(const char *path, int (*sync_fd)(int))
{
        assert_return(path, -EINVAL);
        _cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || sync_fd(fd) < 0)
                return -errno;
        return 0;
}

int fsync_path(const char *path)
{
        return sync_path(path, fsync);
}

int fsync_parent(const char *path)
{
        assert_return(path, -EINVAL);
        _cleanup_free_ char *copy = strdup(path);
        return copy ? fsync_path(dirname(copy)) : -ENOMEM;
}

int syncfs_path(const char *path)
{
        return sync_path(path, syncfs);
}

int fsync_parents(const char *a, const char *b)
{
        _cleanup_free_ char *da = strdup(a), *db = strdup(b);
        int r;

        assert_return(a && b, -EINVAL);
        if (!da || !db)
                return -ENOMEM;
        const char *dir_a = dirname(da), *dir_b = dirname(db);
        if ((r = fsync_path(dir_b)) < 0)
                return r;
        return streq(dir_a, dir_b) ? 0 : fsync_path(dir_a);
}

int rename_durable(const char *src, const char *dst)
{
        assert_return(src && dst, -EINVAL);
        if (rename(src, dst) < 0)
                return -errno;
        return fsync_parents(src, dst);
}
