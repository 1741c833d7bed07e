/* ResourceSyncController: the copies other components read (the contract's
 * "Copies (resource sync)"): the CA bundles and client certificates out of
 * openshift-etcd for the kube-apiserver and the operator, and the install
 * config into openshift-etcd. A copy takes the source's data (and a
 * secret's type) and keeps the target's other metadata; it is written only
 * when it differs, under the cached resourceVersion. A missing source
 * leaves the target alone: a vanished source is more likely a transient
 * state than a wish to cut the kube-apiserver off from etcd. */
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"

typedef struct Copy {
        bool secret;
        OperatorWatch from_w;
        const char *from_ns, *from;
        OperatorWatch to_w;
        const char *to_ns, *to;
} Copy;

static const Copy copies[] = {
        {false, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_CA_BUNDLE, W_CONFIG_CONFIGMAPS, NS_CONFIG,
         "etcd-serving-ca"},
        {false, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_CA_BUNDLE, W_CONFIG_CONFIGMAPS, NS_CONFIG,
         CM_ETCD_CA_BUNDLE},
        {false, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_CA_BUNDLE, W_OPERATOR_CONFIGMAPS, NS_OPERATOR,
         CM_ETCD_CA_BUNDLE},
        {false, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_METRICS_CA_BUNDLE, W_OPERATOR_CONFIGMAPS, NS_OPERATOR,
         "etcd-metric-serving-ca"},
        {true, W_ETCD_SECRETS, NS_ETCD, SECRET_ETCD_CLIENT, W_CONFIG_SECRETS, NS_CONFIG, SECRET_ETCD_CLIENT},
        {true, W_ETCD_SECRETS, NS_ETCD, SECRET_ETCD_CLIENT, W_OPERATOR_SECRETS, NS_OPERATOR,
         SECRET_ETCD_CLIENT},
        {true, W_ETCD_SECRETS, NS_ETCD, SECRET_ETCD_METRIC_CLIENT, W_OPERATOR_SECRETS, NS_OPERATOR,
         SECRET_ETCD_METRIC_CLIENT},
        {false, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "cluster-config-v1", W_ETCD_CONFIGMAPS, NS_ETCD,
         "cluster-config-v1"},
};

/* The members a copy carries: data (and binaryData) for both kinds, type for secrets. */
static const char *const carried[] = {"data", "binaryData", "type"};

static bool field_equal(const cJSON *a, const cJSON *b, bool secret, const char *field)
{
        /* Absent and empty data are the same content; the API server drops empty maps. */
        bool a_empty = !a || (cJSON_IsObject(a) && !a->child),
             b_empty = !b || (cJSON_IsObject(b) && !b->child);
        if (a_empty && b_empty)
                return true;
        /* A secret without a type is Opaque. */
        if (secret && streq(field, "type"))
                return streq(json_string(a) ?: "Opaque", json_string(b) ?: "Opaque");
        return a && b && cJSON_Compare(a, b, true);
}

static int sync_copy(const SyncContext *ctx, Plan *p, const Copy *c)
{
        const KubeObject *src = op_get(ctx, c->from_w, c->from_ns, c->from);
        const KubeObject *dst = op_get(ctx, c->to_w, c->to_ns, c->to);
        const KubeResource *res = c->secret ? &KUBE_SECRETS : &KUBE_CONFIGMAPS;
        size_t n_fields = c->secret ? ELEMENTSOF(carried) : ELEMENTSOF(carried) - 1;
        bool same = dst != NULL;

        if (!src)
                return 0;
        for (size_t k = 0; same && k < n_fields; k++)
                same = field_equal(cJSON_GetObjectItemCaseSensitive(src->json, carried[k]),
                                   cJSON_GetObjectItemCaseSensitive(dst->json, carried[k]), c->secret,
                                   carried[k]);
        if (same)
                return 0;

        /* A secret's type is immutable: another type means delete and create. */
        if (dst && c->secret &&
            !field_equal(cJSON_GetObjectItemCaseSensitive(src->json, "type"),
                         cJSON_GetObjectItemCaseSensitive(dst->json, "type"), true, "type")) {
                plan_delete(p, res, c->to_ns, c->to, kube_object_uid(dst));
                dst = NULL;
        }
        _cleanup_(cJSON_Deletep) cJSON *o =
                dst ? cJSON_Duplicate(dst->json, true) : kube_object_skeleton(res, c->to_ns, c->to);
        if (!o)
                return -ENOMEM;
        for (size_t k = 0; k < n_fields; k++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(src->json, carried[k]);
                cJSON_DeleteItemFromObjectCaseSensitive(o, carried[k]);
                cJSON *copy = v ? cJSON_Duplicate(v, true) : NULL;
                if (v && !copy)
                        return -ENOMEM;
                if (copy)
                        cJSON_AddItemToObject(o, carried[k], copy);
        }
        log_info("%s %s/%s: %s from %s/%s", c->secret ? "secret" : "configmap", c->to_ns, c->to,
                 dst ? "updating" : "creating", c->from_ns, c->from);
        if (dst)
                plan_update(p, res, o);
        else
                plan_create(p, res, o);
        return 0;
}

static int sync_resources(const SyncContext *ctx, Plan *p)
{
        int r;

        for (size_t i = 0; i < ELEMENTSOF(copies); i++)
                if ((r = sync_copy(ctx, p, &copies[i])) < 0)
                        return r;
        return 0;
}

static const WatchSpec *const watches[] = {
        OP_WATCH(W_ETCD_CONFIGMAPS),        OP_WATCH(W_ETCD_SECRETS),     OP_WATCH(W_CONFIG_CONFIGMAPS),
        OP_WATCH(W_CONFIG_SECRETS),         OP_WATCH(W_OPERATOR_SECRETS), OP_WATCH(W_OPERATOR_CONFIGMAPS),
        OP_WATCH(W_KUBE_SYSTEM_CONFIGMAPS),
};

const ControllerSpec controller_resource_sync = {
        .name = "ResourceSyncController",
        .degraded_condition = "ResourceSyncControllerDegraded",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_resources,
};
