/* Immutable, reference-counted Kubernetes objects as the informer cache holds
 * them. Never modify `json`; duplicate it to build a changed object. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/macro.h"
#include "kube/resource.h"

/* A new object to write: {"apiVersion", "kind", "metadata": {"name",
 * "namespace"}} for `res` (ns NULL for a cluster-scoped one). Owned; NULL on
 * allocation failure. The one way controllers and render start an object. */
cJSON *kube_object_skeleton(const KubeResource *res, const char *ns, const char *name);

typedef struct KubeObject {
        unsigned n_ref;
        cJSON *json;
        const char *namespace; /* "" for cluster-scoped; points into json */
        const char *name;      /* points into json */
        uint64_t resource_version;
        size_t size; /* bytes this object holds: the struct, its key and its frozen JSON */
        char key[];  /* "ns/name" or "name", as client-go's MetaNamespaceKeyFunc */
} KubeObject;

/* Consumes `json` (also on failure): it is copied into one frozen block (see
 * json_freeze()) and deleted, so use o->json afterwards. NULL when it lacks a
 * name or on OOM. */
KubeObject *kube_object_new(cJSON *json);
KubeObject *kube_object_ref(const KubeObject *o);
KubeObject *kube_object_unref(KubeObject *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeObject *, kube_object_unref);
void kube_object_unref_void(void *o);

/* Whether `new` is a real update of `old` (another resourceVersion) that
 * changed nothing but heartbeats: metadata.resourceVersion,
 * metadata.managedFields and status.conditions[].lastHeartbeatTime (a Node's
 * status report every few seconds). False for a resync (same object) and
 * for every other difference. */
bool kube_object_heartbeat_only(const KubeObject *old, const KubeObject *new);

const char *kube_object_label(const KubeObject *o, const char *key);
/* metadata.annotations[key] when it is a string, else NULL (keys may hold dots and slashes). */
const char *kube_object_annotation(const KubeObject *o, const char *key);
const char *kube_object_uid(const KubeObject *o);
const char *kube_object_rv_string(const KubeObject *o);
