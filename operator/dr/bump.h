/* What a restore's revision bump does (bump-revision, in
 * operator/node/bump.c, drives the private etcd that does it): the revision
 * every revision a client saw before the disaster must be below, and which
 * of its three outcomes a run takes. */
#pragma once

#include <errno.h>
#include <stdint.h>

/* The revision every pre-disaster client revision must be below
 * (maxRevision of revision.json plus the margin); 0 when unknown. */
uint64_t bump_target(uint64_t max_revision, uint64_t margin);

typedef enum BumpPath {
        BUMP_WRITES,      /* "writes": one key written up to the target, then compacted there */
        BUMP_NONE_NEEDED, /* "none-needed": the revision is past the target already */
        BUMP_UNAVAILABLE, /* "unavailable": no target, or one over max_writes away */
        _BUMP_PATH_MAX,
        _BUMP_PATH_INVALID = -EINVAL,
} BumpPath;

/* The name the status file and the logs give a path; NULL for none. */
const char *bump_path_to_string(BumpPath p);

/* The path of a bump from revision `from`, given the highest revision a
 * revision.json reported (`max_revision`, 0 when none did; `source` the file
 * that did) and --margin and --max-writes. *ret_target: the revision to write
 * up to (bump_target()); *ret_reason: the status file's reason, owned (NULL
 * on OOM, as a reason is only ever reported). */
BumpPath bump_decide(uint64_t max_revision, const char *source, uint64_t from, uint64_t margin,
                     uint64_t max_writes, uint64_t *ret_target, char **ret_reason);
