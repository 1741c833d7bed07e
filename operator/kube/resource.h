/* Descriptors of the API resources we talk to, and REST path building. */
#pragma once

#include "base/macro.h"

typedef struct KubeResource {
        const char *group; /* "" for core */
        const char *version;
        const char *plural;
        const char *kind;
        bool namespaced;
        /* Served only while its CRD is installed (a feature-gated API): informers of it
         * take a 404 as an empty list (informer_set_optional). */
        bool optional;
} KubeResource;

extern const KubeResource KUBE_NODES, KUBE_PODS, KUBE_CONFIGMAPS, KUBE_SECRETS, KUBE_ENDPOINTS,
        KUBE_SERVICES, KUBE_NAMESPACES, KUBE_EVENTS, KUBE_SERVICEACCOUNTS, KUBE_LEASES, KUBE_ROLES,
        KUBE_ROLEBINDINGS, KUBE_CLUSTERROLES, KUBE_CLUSTERROLEBINDINGS, KUBE_DEPLOYMENTS, KUBE_PDBS,
        KUBE_CRDS, KUBE_ETCDS, KUBE_ETCDBACKUPS, KUBE_KUBEAPISERVERS, KUBE_CLUSTEROPERATORS,
        KUBE_INFRASTRUCTURES, KUBE_NETWORKS, KUBE_JOBS, KUBE_PVCS, KUBE_CRONJOBS, KUBE_BACKUPS,
        KUBE_MACHINES, KUBE_APISERVERS, KUBE_TOKENREVIEWS, KUBE_SUBJECTACCESSREVIEWS, KUBE_SERVICEMONITORS,
        KUBE_NETWORKPOLICIES;

/* "/api/v1/namespaces/ns/configmaps/name/status"; ns NULL for all namespaces
 * or cluster-scoped, name NULL for the collection, sub NULL for none. Names
 * are validated (DNS-1123 subdomain charset) so they cannot alter the path.
 * Returns NULL on OOM or invalid input. */
char *kube_resource_path(const KubeResource *r, const char *ns, const char *name, const char *sub);
/* "v1" or "group/version". Returns a static or internal buffer. */
const char *kube_resource_api_version(const KubeResource *r, char *buf, size_t n);
/* Finds a descriptor by apiVersion and kind, among the ones above. */
const KubeResource *kube_resource_by_kind(const char *api_version, const char *kind);

/* A name safe in an API path: at most 253 of a DNS-1123 subdomain's characters
 * ([a-z0-9.-]) or ':', not starting or ending with '-' or '.'. ':' for RBAC
 * objects, whose names are path segments ("system:openshift:operator:..."). The
 * characters and ends only, not the labels ("a..b" passes; the API finds no such
 * object): an object name's whole rule is dns1123_subdomain_is_valid() (base/names.h). */
bool kube_name_is_valid(const char *name);
/* Percent-encodes a query value. */
char *kube_query_escape(const char *s);
