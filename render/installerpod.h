/* The installer pod's shape (manifests/etcd-pod/installer-pod.yaml): the
 * InstallerController names the pod, the node and the revision; the rest is
 * the manifest's. Pure. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* `etcd_endpoints` (n of them, may be 0) become the installer's
 * --etcd-endpoints: the quorum guard's seeds. -EINVAL when a value is not
 * what a Pod can carry (a node name that is no DNS-1123 subdomain, an image
 * that is no image reference, a revision < 1, an endpoint that is no
 * https:// URL or holds a comma or a space). */
/* What --etcd-endpoints takes: an https:// URL with no comma, space, tab,
 * line break or quote (it becomes one element of a comma-separated flag). */
bool installer_pod_endpoint_is_valid(const char *endpoint);
int installer_pod_render(const char *name, const char *node, int64_t revision, const char *image,
                         char *const *etcd_endpoints, size_t n, cJSON **ret);
