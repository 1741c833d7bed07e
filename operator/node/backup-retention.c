/* Backup retention (backup-retention.h). */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup-retention.h"
#include "base/fileio.h"
#include "base/log.h"
#include "host/fs.h"

static const char *const type_names[_RETENTION_TYPE_MAX] = {
        [RETENTION_NUMBER] = "RetentionNumber",
        [RETENTION_SIZE] = "RetentionSize",
};

RetentionType retention_type_from_string(const char *s)
{
        for (int t = 0; t < _RETENTION_TYPE_MAX; t++)
                if (streq_ptr(s, type_names[t]))
                        return (RetentionType) t;
        return _RETENTION_TYPE_INVALID;
}

const char *retention_type_to_string(RetentionType t)
{
        return t >= 0 && t < _RETENTION_TYPE_MAX ? type_names[t] : NULL;
}

static int newest_first(const void *a, const void *b)
{
        const BackupEntry *x = a, *y = b;
        if (x->newest != y->newest)
                return x->newest > y->newest ? -1 : 1;
        return -strcmp(x->name, y->name);
}

size_t backup_retention_plan(BackupEntry *e, size_t n, RetentionType t, uint64_t max)
{
        uint64_t total = 0;
        size_t marked = 0;
        bool over = false;

        if (n == 0)
                return 0;
        qsort(e, n, sizeof *e, newest_first);
        for (size_t i = 0; i < n; i++) {
                e[i].prune = false;
                if (t == RETENTION_NUMBER)
                        e[i].prune = i > 0 && i >= max;
                else {
                        total = total + e[i].bytes < total ? UINT64_MAX : total + e[i].bytes;
                        over = over || total > max;
                        e[i].prune = i > 0 && over;
                }
                marked += e[i].prune;
        }
        return marked;
}

bool backup_storage_enough(uint64_t avail, uint64_t largest_db, uint64_t *ret_needed)
{
        uint64_t needed = largest_db > UINT64_MAX / 2 ? UINT64_MAX : 2 * largest_db;
        if (ret_needed)
                *ret_needed = needed;
        return avail >= needed;
}

/* Adds up the regular files under the open directory `fd` (taken) and their newest mtime. */
static int tree_usage(int fd, uint64_t *bytes, usec_t *newest, bool *has_snapshot, unsigned depth)
{
        DIR *d = fdopendir(fd);
        struct dirent *de;
        int r = 0;

        if (!d) {
                r = -errno;
                close(fd);
                return r;
        }
        while ((errno = 0, de = readdir(d))) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = -errno;
                        break;
                }
                if (S_ISDIR(st.st_mode)) {
                        if (depth >= 16)
                                continue; /* deeper than any backup is */
                        int sub = openat(dirfd(d), de->d_name,
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0) {
                                r = -errno;
                                break;
                        }
                        r = tree_usage(sub, bytes, newest, NULL, depth + 1);
                        if (r < 0)
                                break;
                        continue;
                }
                if (!S_ISREG(st.st_mode))
                        continue;
                *bytes += (uint64_t) st.st_size;
                usec_t m = (usec_t) st.st_mtim.tv_sec * USEC_PER_SEC + (usec_t) st.st_mtim.tv_nsec / 1000;
                *newest = MAX(*newest, m);
                if (has_snapshot && startswith(de->d_name, "snapshot_") && endswith(de->d_name, ".db"))
                        *has_snapshot = true;
        }
        if (r == 0 && errno != 0)
                r = -errno;
        closedir(d);
        return r;
}

void backup_entries_free(BackupEntry *e, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(e[i].name);
        free(e);
}

int backup_retention_scan(const char *dir, BackupEntry **ret, size_t *ret_n)
{
        _cleanup_(closedirp) DIR *d = opendir(dir);
        BackupEntry *v = NULL;
        size_t n = 0;
        struct dirent *de;
        int r = 0;

        if (!d)
                return -errno;
        while ((errno = 0, de = readdir(d))) {
                struct stat st;
                uint64_t bytes = 0;
                usec_t newest = 0;
                bool snapshot = false;
                if (de->d_name[0] == '.')
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue; /* files and links beside the backups are not ours */
                int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || tree_usage(fd, &bytes, &newest, &snapshot, 0) < 0) {
                        log_warning("%s/%s: cannot read it (%s): left alone", dir, de->d_name,
                                    strerror(errno));
                        continue;
                }
                if (!snapshot) {
                        log_info("%s/%s: no snapshot_*.db in it, not a backup: left alone", dir, de->d_name);
                        continue;
                }
                BackupEntry *nv = reallocarray(v, n + 1, sizeof *v);
                if (!nv) {
                        r = -ENOMEM;
                        break;
                }
                v = nv;
                v[n] = (BackupEntry){.name = strdup(de->d_name), .newest = newest, .bytes = bytes};
                if (!v[n++].name) {
                        r = -ENOMEM;
                        break;
                }
        }
        if (r == 0 && errno != 0)
                r = -errno;
        if (r < 0) {
                backup_entries_free(v, n);
                return r;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int backup_retention_remove(const char *dir, const char *name)
{
        return host_remove_tree(dir, name);
}
