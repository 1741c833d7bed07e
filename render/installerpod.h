/* The shapes of the pods the operator runs on a master: the installer pod
 * (manifests/etcd-pod/installer-pod.yaml), named by the InstallerController
 * with the node and the revision, and the revision pruner pod
 * (manifests/etcd-pod/pruner-pod.yaml), named by the PruneController with
 * the node and the revisions; the rest is the manifests'. Pure. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "etcd/client.h"

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

/* Appends --etcd-address-alias=NEW=OLD per alias (etcd/client.h) to the installer's
 * command: its quorum guard reaches a moved master's member where it serves. -EINVAL
 * for an alias that is not two addresses. */
int installer_pod_add_aliases(cJSON *pod, const EtcdAddressAlias *a, size_t n);
/* Appends --etcd-sole-voter-may-restart: the quorum guard lets this node's member
 * restart while it is the only voting member (the disaster-recovery runbooks' unsafe
 * non-HA override, after a quorum restore on a master that moved). */
int installer_pod_allow_sole_voter_restart(cJSON *pod);
/* `protected_revisions`: n revisions (each >= 1) kept whatever their number;
 * revisions at or below `max_eligible` (>= 1) may go. -EINVAL like
 * installer_pod_render. */
int pruner_pod_render(const char *name, const char *node, const char *image, int64_t max_eligible,
                      const int64_t *protected_revisions, size_t n, cJSON **ret);
