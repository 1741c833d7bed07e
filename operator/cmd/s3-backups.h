/* What `s3 gc`, `s3 purge` and `cluster-backup --s3-gc-policy` share: the
 * garbage collection of a store's full snapshots (with their tarballs) and
 * the removal of everything under a prefix. Both log what they do and print
 * one line per object ("keep", "delete", "would delete"). */
#pragma once

#include <stdbool.h>

#include "s3/s3.h"

/* Garbage-collects <prefix>/v2/ by `policy` ("LimitBased" keeping
 * max_backups, or "Exponential"); a snapshot's tarball goes with it.
 * 0, or -EIO when listing or some deletion failed (logged). */
int s3_backups_gc(const S3Store *s, const char *policy, unsigned max_backups, bool dry_run);

/* Deletes every object under the store's prefix (which must not be empty:
 * -EINVAL, nothing deleted). 0, or -EIO when listing or a deletion failed. */
int s3_backups_purge(const S3Store *s, bool dry_run);
