/* An LD_PRELOAD library for the DR tests (review M4): it watches a command's
 * renames and links and tells, when the process exits, which of them would
 * not survive a power loss. A new name is on disk only once the directory
 * that holds it is fsynced (or its filesystem synced), and a regular file
 * that takes its name from a temporary one (a leading '.', ".tmp." or
 * ".partial": a file this command wrote) must have been fsynced first.
 * Files that only move (a data dir set aside) need their directories only.
 *
 * Each process appends to $DURABILITY_LOG: "rename SRC DST" (and "link")
 * for each one it saw, and "VIOLATION ..." for each that broke the rule. The
 * tests fail on any VIOLATION line and on a log without the renames they
 * expect (proof that the library was loaded). Built without sanitizers: it
 * is also loaded into tar and cp; the ASan-built operator needs
 * ASAN_OPTIONS=verify_asan_link_order=0 beside it. */
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PENDING 256
#define MAX_SYNCED  256

typedef struct Pending {
        char dir[PATH_MAX];
        char what[2 * PATH_MAX + 16];
} Pending;

static Pending pending[MAX_PENDING];
static size_t n_pending;
static char synced[MAX_SYNCED][PATH_MAX]; /* files fsynced since their last rename */
static size_t n_synced;
/* The last syncfs() started then: files not changed since are on disk (a file changed within
 * the same tick passes too, so the check can miss but never invents a violation). */
static struct timespec syncfs_at;

static void say(const char *fmt, ...)
{
        const char *log = getenv("DURABILITY_LOG");
        char line[3 * PATH_MAX];
        va_list ap;

        if (!log)
                return;
        va_start(ap, fmt);
        int n = vsnprintf(line, sizeof line, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        if ((size_t) n >= sizeof line)
                n = sizeof line - 1;
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return;
        ssize_t w = write(fd, line, (size_t) n);
        (void) w;
        (void) close(fd);
}

/* The absolute path of `path`'s directory, symlinks resolved (it exists). */
static bool dir_of(const char *path, char out[PATH_MAX])
{
        char copy[PATH_MAX];
        (void) snprintf(copy, sizeof copy, "%s", path);
        return realpath(dirname(copy), out) != NULL;
}

/* `path` made absolute through its directory (the file itself may be gone). */
static bool abs_of(const char *path, char out[PATH_MAX])
{
        char dir[PATH_MAX], copy[PATH_MAX];
        (void) snprintf(copy, sizeof copy, "%s", path);
        if (!dir_of(path, dir))
                return false;
        return snprintf(out, PATH_MAX, "%s/%s", dir, basename(copy)) < PATH_MAX;
}

static void add_pending(const char *dir, const char *op, const char *src, const char *dst)
{
        for (size_t i = 0; i < n_pending; i++)
                if (strcmp(pending[i].dir, dir) == 0)
                        return;
        if (n_pending == MAX_PENDING)
                return;
        (void) snprintf(pending[n_pending].dir, PATH_MAX, "%s", dir);
        (void) snprintf(pending[n_pending].what, sizeof pending[n_pending].what, "%s %s %s", op, src, dst);
        n_pending++;
}

static bool take_synced(const char *abs)
{
        for (size_t i = 0; i < n_synced; i++)
                if (strcmp(synced[i], abs) == 0) {
                        synced[i][0] = 0;
                        return true;
                }
        return false;
}

static bool is_temporary(const char *abs)
{
        const char *name = strrchr(abs, '/') + 1;
        size_t n = strlen(name);
        return name[0] == '.' || strstr(name, ".tmp.") || (n > 8 && strcmp(name + n - 8, ".partial") == 0);
}

/* Before a rename or link: whether src is a temporary regular file nobody fsynced. */
static bool unsynced_file(const char *src, char src_abs[PATH_MAX])
{
        struct stat st;
        if (!abs_of(src, src_abs) || !is_temporary(src_abs) || lstat(src, &st) < 0 || !S_ISREG(st.st_mode))
                return false;
        if (take_synced(src_abs))
                return false;
        return st.st_mtim.tv_sec > syncfs_at.tv_sec ||
               (st.st_mtim.tv_sec == syncfs_at.tv_sec && st.st_mtim.tv_nsec > syncfs_at.tv_nsec);
}

static void note(const char *op, const char *src, const char *dst, bool unsynced, const char *src_abs)
{
        char sd[PATH_MAX], dd[PATH_MAX];

        say("%s %s %s\n", op, src, dst);
        if (unsynced)
                say("VIOLATION %s %s %s: the file was not fsynced before it took its new name\n", op,
                    src_abs, dst);
        if (dir_of(dst, dd))
                add_pending(dd, op, src, dst);
        if (strcmp(op, "link") != 0 && dir_of(dst, dd) && abs_of(src, sd) && dir_of(sd, sd) &&
            strcmp(sd, dd) != 0)
                add_pending(sd, op, src, dst);
}

static void synced_fd(int fd)
{
        char link[64], path[PATH_MAX];
        struct stat st;
        (void) snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof path - 1);
        if (n < 0 || fstat(fd, &st) < 0)
                return;
        path[n] = 0;
        if (S_ISDIR(st.st_mode)) {
                for (size_t i = 0; i < n_pending; i++)
                        if (strcmp(pending[i].dir, path) == 0)
                                pending[i] = pending[--n_pending];
                return;
        }
        for (size_t i = 0; i < n_synced; i++)
                if (!synced[i][0] || strcmp(synced[i], path) == 0) {
                        (void) snprintf(synced[i], PATH_MAX, "%s", path);
                        return;
                }
        if (n_synced < MAX_SYNCED)
                (void) snprintf(synced[n_synced++], PATH_MAX, "%s", path);
}

#define REAL(name, type) ((type) dlsym(RTLD_NEXT, name))

int rename(const char *src, const char *dst)
{
        char abs[PATH_MAX] = "";
        bool unsynced = unsynced_file(src, abs);
        int r = REAL("rename", int (*)(const char *, const char *))(src, dst);
        if (r == 0)
                note("rename", src, dst, unsynced, abs);
        return r;
}

int renameat2(int olddfd, const char *src, int newdfd, const char *dst, unsigned flags)
{
        char abs[PATH_MAX] = "";
        bool plain = olddfd == AT_FDCWD && newdfd == AT_FDCWD;
        bool unsynced = plain && unsynced_file(src, abs);
        int r = REAL("renameat2", int (*)(int, const char *, int, const char *, unsigned))(
                olddfd, src, newdfd, dst, flags);
        if (r == 0 && plain)
                note("rename", src, dst, unsynced, abs);
        return r;
}

int link(const char *src, const char *dst)
{
        char abs[PATH_MAX] = "";
        bool unsynced = unsynced_file(src, abs);
        int r = REAL("link", int (*)(const char *, const char *))(src, dst);
        if (r == 0)
                note("link", src, dst, unsynced, abs);
        return r;
}

int fsync(int fd)
{
        int r = REAL("fsync", int (*)(int))(fd);
        if (r == 0)
                synced_fd(fd);
        return r;
}

int fdatasync(int fd)
{
        int r = REAL("fdatasync", int (*)(int))(fd);
        if (r == 0)
                synced_fd(fd);
        return r;
}

int syncfs(int fd)
{
        struct timespec t;
        (void) clock_gettime(CLOCK_REALTIME_COARSE, &t); /* the clock of the kernel's file times */
        int r = REAL("syncfs", int (*)(int))(fd);
        if (r == 0) { /* the tests keep everything on one filesystem */
                n_pending = 0;
                syncfs_at = t;
        }
        return r;
}

__attribute__((destructor)) static void check_at_exit(void)
{
        for (size_t i = 0; i < n_pending; i++)
                say("VIOLATION %s: the directory %s was not fsynced after it\n", pending[i].what,
                    pending[i].dir);
}
