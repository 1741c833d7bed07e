/* cluster-restore's pure parts, for unit tests. */
#pragma once
#include <stddef.h>

/* Of the file names of a backup directory: the newest snapshot_<ts>[sfx].db
 * and the static_kuberesources_<ts>[sfx].tar.gz of the same stamp (NULL
 * when there is none). -ENOENT without a snapshot. */
int restore_pick_backup(const char *const *names, size_t n, char **ret_snapshot, char **ret_tar);

/* bump-revision: the revision every pre-disaster client revision must be
 * below (maxRevision of revision.json plus the margin); 0 when unknown. */
#include <stdint.h>
uint64_t bump_target(uint64_t max_revision, uint64_t margin);
