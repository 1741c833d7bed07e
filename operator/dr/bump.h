/* The arithmetic of a restore's revision bump (bump-revision, in
 * operator/node/bump.c, drives the private etcd that does it). */
#pragma once

#include <stdint.h>

/* The revision every pre-disaster client revision must be below
 * (maxRevision of revision.json plus the margin); 0 when unknown. */
uint64_t bump_target(uint64_t max_revision, uint64_t margin);
