/* What `s3 gc`, `s3 purge` and `cluster-backup --s3-gc-policy` share: the
 * garbage collection of a store's full snapshots (with their tarballs) and
 * the removal of everything under a prefix. Both log what they do and print
 * one line per object ("keep", "delete", "would delete"). */
#pragma once

#include <stdbool.h>

#include "s3/s3.h"

/* Garbage-collects <prefix>/v2/ by `policy` ("LimitBased" keeping
 * max_backups, or "Exponential") among the snapshots whose checksum file
 * (<prefix>/checksums/<name>.json) is signed with the store's backupKey;
 * the others are left alone. A deleted snapshot's checksum file goes first,
 * its tarball after it. 0, -ENOKEY without backupKey, or -EIO when listing
 * or some deletion failed (logged). */
int s3_backups_gc(const S3Store *s, const char *policy, unsigned max_backups, bool dry_run);

/* Fetches a full snapshot (`which`: "latest", or its name) and its tarball
 * into `dir` as snapshot_<ts>.db and static_kuberesources_<ts>.tar.gz (<ts>
 * the snapshot's time, local), with checksums_<ts>.json beside them. Only
 * snapshots whose checksum file is signed with the store's backupKey (and
 * agrees with the name) count, for "latest" and by name; both files must
 * match it. Never over files that exist (-EEXIST), unless `reuse` and both
 * are there and match (a restore run again). *ret_snapshot: its path.
 * 1 fetched, 0 reused, < 0 failed (logged; what it fetched is removed). */
int s3_backups_fetch(const S3Store *s, const char *which, const char *dir, bool reuse, char **ret_snapshot);

/* ".../snapshot_<ts>.db" -> ".../static_kuberesources_<ts>.tar.gz" (NULL on ENOMEM or another name). */
char *s3_backups_tarball_of(const char *snapshot_path);

/* Deletes every object under the store's prefix (which must not be empty:
 * -EINVAL, nothing deleted). 0, or -EIO when listing or a deletion failed. */
int s3_backups_purge(const S3Store *s, bool dry_run);
