/* The pure parts of `cluster-backup` (backup.c), unit-tested. */
#pragma once

#include "base/macro.h"
#include "base/timeutil.h"

/* "static-pod-resources/<resource>-pod-<N>" as the first whole mention in a
 * static pod manifest; -ENOENT when there is none. */
int backup_revision_dir(const char *manifest, const char *resource, char **ret);
/* static_kuberesources_<ts>.tar.gz and snapshot_<ts>.db, <ts> as `date +%F_%H%M%S`
 * in local time, with __POSSIBLY_DIRTY__ appended when `force`. */
int backup_names(usec_t now, bool force, char **ret_tar, char **ret_snapshot);
