/* Backups in an object store, laid out as etcd-backup-restore lays them
 * out, and their garbage collection. Pure: names in, decisions out; the
 * clock is the caller's.
 *
 * Layout: <prefix>/v2/<Kind>-<start %08d>-<last %08d>-<unix seconds>[.gz][.final],
 * Kind "Full" (start 0) or "Incr". We write Full snapshots only; Incr
 * objects (another tool's deltas) are understood and left alone, as are
 * names that are no snapshot.
 *
 * Garbage collection, as etcd-backup-restore does it for full snapshots
 * (sorted by last revision, the newest always kept):
 * - LimitBased: all but the newest max_backups go.
 * - Exponential, against eod = the end (23:59:59 UTC) of now's day: every
 *   snapshot of the current hour; the newest of each hour of the last 24 h;
 *   the newest of each day up to 8 days back; the newest of each week up to
 *   5 weeks back (the week windows end the day before eod); nothing older. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define S3_SNAPSHOT_DIR "v2"
/* Ours, beside v2/: a backup's static pod resources, <that snapshot's name>.tar.gz. */
#define S3_RESOURCES_DIR "kuberesources"
/* Ours, beside v2/: a backup's checksum file, <that snapshot's name>.json (dr/backup-manifest.h).
 * Only snapshots with one signed by this cluster's backupKey count. */
#define S3_CHECKSUMS_DIR "checksums"

typedef enum S3SnapshotKind {
        S3_SNAPSHOT_FULL,
        S3_SNAPSHOT_INCR,
} S3SnapshotKind;

typedef struct S3Snapshot {
        uint64_t start, last; /* revisions */
        time_t created;       /* the name's unix seconds */
        S3SnapshotKind kind;
        bool gz, final;
} S3Snapshot;

/* "Full-00000000-00001234-1700000000" into buf (>= 64 bytes). */
char *s3_snapshot_name(uint64_t last_revision, time_t created, char *buf, size_t n);
/* Parses the last path component of `key`; -EINVAL when it is no snapshot name. */
int s3_snapshot_parse(const char *key, S3Snapshot *ret);

typedef enum S3GcPolicy {
        S3_GC_LIMIT_BASED,
        S3_GC_EXPONENTIAL,
} S3GcPolicy;

/* Decides for n full snapshots, sorted by last revision (oldest first),
 * which go: ret_delete[i] true. The newest (v[n-1]) never goes. */
void s3_gc_plan(const S3Snapshot *v, size_t n, S3GcPolicy policy, unsigned max_backups, time_t now,
                bool *ret_delete);
