/* Backup retention (operator/node/backup-retention.c): the plan as a table,
 * then scanning and removing in a scratch directory (what counts as a
 * backup, what is never touched). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "node/backup-retention.h"

#define MIB (1024ULL * 1024)

static BackupEntry entry(const char *name, unsigned age_h, uint64_t bytes)
{
        return (BackupEntry){.name = (char *) name,
                             .newest = (usec_t) (1000 - age_h) * 3600 * USEC_PER_SEC,
                             .bytes = bytes};
}

/* The names marked for removal, in plan order, joined by spaces. */
static void marked(const BackupEntry *e, size_t n, char *buf, size_t len)
{
        size_t o = 0;
        buf[0] = 0;
        for (size_t i = 0; i < n; i++)
                if (e[i].prune)
                        o += (size_t) snprintf(buf + o, len - MIN(o, len), "%s%s", o ? " " : "", e[i].name);
}

static void test_by_number(void **state)
{
        (void) state;
        char got[256];
        /* Listed out of order: the plan sorts newest first. */
        BackupEntry e[] = {entry("b-3", 3, MIB), entry("b-1", 1, MIB), entry("b-5", 5, MIB),
                           entry("b-2", 2, MIB), entry("b-4", 4, MIB)};
        assert_int_equal(backup_retention_plan(e, 5, RETENTION_NUMBER, 3), 2);
        assert_string_equal(e[0].name, "b-1");
        marked(e, 5, got, sizeof got);
        assert_string_equal(got, "b-4 b-5");
        assert_int_equal(backup_retention_plan(e, 5, RETENTION_NUMBER, 5), 0);
        assert_int_equal(backup_retention_plan(e, 5, RETENTION_NUMBER, 1), 4);
        /* Never the newest, whatever the limit says. */
        assert_int_equal(backup_retention_plan(e, 5, RETENTION_NUMBER, 0), 4);
        assert_false(e[0].prune);
        assert_int_equal(backup_retention_plan(e, 0, RETENTION_NUMBER, 1), 0);
}

static void test_same_age_by_name(void **state)
{
        (void) state;
        char got[256];
        /* Same newest mtime: the larger name (a later timestamp) counts as newer. */
        BackupEntry e[] = {entry("backup-x-2026-01-01_000000", 1, MIB),
                           entry("backup-x-2026-01-02_000000", 1, MIB)};
        assert_int_equal(backup_retention_plan(e, 2, RETENTION_NUMBER, 1), 1);
        marked(e, 2, got, sizeof got);
        assert_string_equal(got, "backup-x-2026-01-01_000000");
}

static void test_by_size(void **state)
{
        (void) state;
        char got[256];
        /* 100 MiB limit, newest first: 40 + 40 = 80 fits, + 40 = 120 does not: from there on, all go,
         * even a small one that would fit on its own (upstream: every dir after the total exceeds). */
        BackupEntry e[] = {entry("a", 1, 40 * MIB), entry("b", 2, 40 * MIB), entry("c", 3, 40 * MIB),
                           entry("d", 4, 1 * MIB)};
        assert_int_equal(backup_retention_plan(e, 4, RETENTION_SIZE, 100 * MIB), 2);
        marked(e, 4, got, sizeof got);
        assert_string_equal(got, "c d");
        /* Exactly at the limit is within it. */
        assert_int_equal(backup_retention_plan(e, 4, RETENTION_SIZE, 121 * MIB), 0);
        /* The newest alone over the limit: kept, the rest go. */
        assert_int_equal(backup_retention_plan(e, 4, RETENTION_SIZE, 10 * MIB), 3);
        assert_false(e[0].prune);
        /* Sizes that would overflow a 64-bit sum saturate instead of wrapping to "fits". */
        BackupEntry big[] = {entry("x", 1, UINT64_MAX - 1), entry("y", 2, 10)};
        assert_int_equal(backup_retention_plan(big, 2, RETENTION_SIZE, UINT64_MAX - 1), 1);
}

static void test_storage_enough(void **state)
{
        (void) state;
        uint64_t needed = 0;
        assert_true(backup_storage_enough(200 * MIB, 100 * MIB, &needed));
        assert_int_equal(needed, 200 * MIB);
        assert_false(backup_storage_enough(200 * MIB - 1, 100 * MIB, &needed));
        assert_true(backup_storage_enough(0, 0, NULL));
        assert_false(backup_storage_enough(UINT64_MAX - 1, UINT64_MAX / 2 + 1, &needed));
        assert_int_equal(needed, UINT64_MAX);
}

static void test_type_names(void **state)
{
        (void) state;
        assert_int_equal(retention_type_from_string("RetentionNumber"), RETENTION_NUMBER);
        assert_int_equal(retention_type_from_string("RetentionSize"), RETENTION_SIZE);
        assert_true(retention_type_from_string("retentionsize") < 0);
        assert_true(retention_type_from_string(NULL) < 0);
        assert_string_equal(retention_type_to_string(RETENTION_SIZE), "RetentionSize");
}

static void put(const char *dir, const char *rel, size_t bytes, time_t mtime)
{
        char path[512];
        (void) snprintf(path, sizeof path, "%s/%s", dir, rel);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t) bytes), 0);
        close(fd);
        struct timespec ts[2] = {{.tv_sec = mtime}, {.tv_sec = mtime}};
        assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void sub(const char *dir, const char *rel)
{
        char path[512];
        (void) snprintf(path, sizeof path, "%s/%s", dir, rel);
        assert_int_equal(mkdir(path, 0700), 0);
}

static bool exists(const char *dir, const char *rel)
{
        char path[512];
        struct stat st;
        (void) snprintf(path, sizeof path, "%s/%s", dir, rel);
        return lstat(path, &st) == 0;
}

static void test_scan_and_remove(void **state)
{
        (void) state;
        char dir[] = "/tmp/test-retention-XXXXXX", outside[] = "/tmp/test-retention-out-XXXXXX";
        assert_non_null(mkdtemp(dir));
        assert_non_null(mkdtemp(outside));
        /* Two backups (the older one with a nested directory), one directory without a
         * snapshot, a stray file, and a symlink to a directory outside. */
        sub(dir, "backup-old");
        put(dir, "backup-old/snapshot_2026-01-01_000000.db", 3000, 1000);
        put(dir, "backup-old/static_kuberesources_2026-01-01_000000.tar.gz", 100, 1000);
        sub(dir, "backup-old/extra");
        put(dir, "backup-old/extra/notes", 10, 900);
        sub(dir, "backup-new");
        put(dir, "backup-new/snapshot_2026-01-02_000000.db", 2000, 2000);
        sub(dir, "lost+found");
        put(dir, "lost+found/whatever", 5, 500);
        put(dir, "README", 1, 100);
        put(outside, "keep-me", 1, 100);
        char link[512];
        (void) snprintf(link, sizeof link, "%s/link-out", dir);
        assert_int_equal(symlink(outside, link), 0);

        BackupEntry *e = NULL;
        size_t n = 0;
        assert_int_equal(backup_retention_scan(dir, &e, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(backup_retention_plan(e, n, RETENTION_NUMBER, 1), 1);
        assert_string_equal(e[0].name, "backup-new");
        assert_int_equal(e[0].bytes, 2000);
        assert_int_equal(e[1].bytes, 3110);
        assert_int_equal(e[0].newest, 2000 * USEC_PER_SEC);
        assert_int_equal(backup_retention_remove(dir, e[1].name), 0);
        backup_entries_free(e, n);

        assert_false(exists(dir, "backup-old"));
        assert_true(exists(dir, "backup-new/snapshot_2026-01-02_000000.db"));
        assert_true(exists(dir, "lost+found/whatever"));
        assert_true(exists(dir, "README"));
        assert_true(exists(dir, "link-out"));
        assert_true(exists(outside, "keep-me"));
        /* Names that leave the directory are refused. */
        assert_int_equal(backup_retention_remove(dir, ".."), -EINVAL);
        assert_int_equal(backup_retention_remove(dir, "a/b"), -EINVAL);
        /* A symlink given by name goes as a link; what it points at stays. */
        assert_int_equal(backup_retention_remove(dir, "link-out"), 0);
        assert_true(exists(outside, "keep-me"));
        /* A directory that is gone: an error, not a crash. */
        assert_true(backup_retention_scan("/nonexistent/backups", &e, &n) < 0);

        char cmd[1200];
        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, outside);
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_by_number),       cmocka_unit_test(test_same_age_by_name),
                cmocka_unit_test(test_by_size),         cmocka_unit_test(test_type_names),
                cmocka_unit_test(test_scan_and_remove), cmocka_unit_test(test_storage_enough),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
