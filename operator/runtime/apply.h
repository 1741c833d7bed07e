/* What the runtime's APPLY intent writes over the object the server has:
 * every top-level field we give but metadata and status replaces the
 * server's, labels and annotations merge key by key (APPLY never drops one:
 * a merge patch with null does), ownerReferences are replaced when we give
 * them, and everything else (status, server-set metadata) is kept. The test
 * fixture feeds the same function, so what a table test sees is what the
 * runtime sends. */
#pragma once

#include <cjson/cJSON.h>

/* Owned result; NULL on allocation failure. */
cJSON *apply_merge(const cJSON *current, const cJSON *desired);
