/* Templates and static resources from manifests/, embedded into the binary
 * at build time (cmake/embed.cmake), so the binary needs no files beside it. */
#pragma once

#include <stddef.h>

typedef struct Asset {
        const char *path; /* relative to manifests/, e.g. "bootstrap/etcd-member-pod.yaml" */
        const char *data; /* NUL-terminated */
        size_t len;
} Asset;

extern const Asset assets[];

/* NULL when there is no such asset. */
const Asset *asset_find(const char *path);
