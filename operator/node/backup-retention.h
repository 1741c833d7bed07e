/* Retention of the backups in one directory (upstream's `prune-backups`,
 * which the scheduled backups' CronJob runs before each backup): every
 * subdirectory that holds a `snapshot_*.db` is one backup, aged by the
 * newest mtime of the files in it. The policy keeps the newest N
 * (RetentionNumber) or the newest that fit in a size (RetentionSize); the
 * newest backup is always kept. Directories that are not backups are never
 * touched. The plan is pure (unit-tested); scanning and removing do the I/O. */
#pragma once

#include <stdint.h>

#include "base/timeutil.h"

typedef enum RetentionType {
        RETENTION_NUMBER,
        RETENTION_SIZE,
        _RETENTION_TYPE_MAX,
        _RETENTION_TYPE_INVALID = -EINVAL,
} RetentionType;

/* "RetentionNumber", "RetentionSize" (the Backup CRD's retentionType values). */
RetentionType retention_type_from_string(const char *s);
const char *retention_type_to_string(RetentionType t);

typedef struct BackupEntry {
        char *name;     /* the directory's name in the backup directory */
        usec_t newest;  /* CLOCK_REALTIME mtime of its newest file */
        uint64_t bytes; /* the regular files in it, recursively */
        bool prune;     /* what the plan decided */
} BackupEntry;

/* Sorts newest first (newest file, then the name, larger first: upstream's
 * names end in a timestamp) and marks what the policy removes: with
 * RETENTION_NUMBER every entry past the first `max`; with RETENTION_SIZE
 * (`max` in bytes) every entry from the first whose running total exceeds
 * `max` on. The first entry is never marked. Returns how many are marked. */
size_t backup_retention_plan(BackupEntry *e, size_t n, RetentionType t, uint64_t max);

/* The backups under `dir` (subdirectories holding a snapshot_*.db); what is
 * left out and why goes to the log at info level. */
int backup_retention_scan(const char *dir, BackupEntry **ret, size_t *ret_n);
void backup_entries_free(BackupEntry *e, size_t n);

/* Whether `avail` bytes hold a backup beside the last one: twice the largest
 * member's database (upstream's check before a backup Job runs).
 * *ret_needed gets the bytes needed (saturating). */
bool backup_storage_enough(uint64_t avail, uint64_t largest_db, uint64_t *ret_needed);

/* Removes `dir`/`name` and everything in it, never following a symlink out of it. */
int backup_retention_remove(const char *dir, const char *name);
