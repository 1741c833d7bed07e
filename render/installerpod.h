/* The installer pod's shape (manifests/etcd-pod/installer-pod.yaml): the
 * InstallerController names the pod, the node and the revision; the rest is
 * the manifest's. Pure. */
#pragma once

#include <stdint.h>

#include <cjson/cJSON.h>

/* -EINVAL when a value is not what a Pod can carry (a node name that is no
 * DNS-1123 subdomain, an image that is no image reference, a revision < 1). */
int installer_pod_render(const char *name, const char *node, int64_t revision, const char *image,
                         cJSON **ret);
