/* The installer pod's shape (manifests/etcd-pod/installer-pod.yaml): the
 * InstallerController names the pod, the node and the revision; the rest is
 * the manifest's. Pure. */
#pragma once

#include <stdint.h>

#include <cjson/cJSON.h>

/* `etcd_endpoints` (n of them, may be 0) become the installer's
 * --etcd-endpoints: the quorum guard's seeds. -EINVAL when a value is not
 * what a Pod can carry (a node name that is no DNS-1123 subdomain, an image
 * that is no image reference, a revision < 1, an endpoint that is no
 * https:// URL or holds a comma or a space). */
int installer_pod_render(const char *name, const char *node, int64_t revision, const char *image,
                         char *const *etcd_endpoints, size_t n, cJSON **ret);
