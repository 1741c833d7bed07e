/* StaticResourcesController: keeps the operand's fixed objects (namespace,
 * Service, service accounts, the installer's RBAC, the NetworkPolicies, the ServiceMonitors and
 * Prometheus's Role where monitoring is installed) as manifests/static/
 * describes them. Each object is applied (labels and annotations merged,
 * every other field we set wins) only when the cached copy does not
 * already hold what we set: the API server fills in defaults (a Service's
 * clusterIP, a port's targetPort) that a plain comparison would fight
 * forever. Objects of kinds we do not watch are applied on every sync; the
 * runtime's apply writes nothing when they are already right. */
#include "base/json.h"
#include "base/log.h"
#include "base/yaml.h"
#include "controllers.h"
#include "facts.h"
#include "render/assets.h"

#define STATIC_PREFIX "static/"

/* What it applies, beyond the shared watches. */
static const WatchSpec own[] = {
        {&KUBE_SERVICES, NS_ETCD, NULL, NULL},
        {&KUBE_SERVICEACCOUNTS, NS_ETCD, NULL, NULL},
        {&KUBE_ROLES, NS_ETCD, NULL, NULL},
        {&KUBE_ROLEBINDINGS, NS_ETCD, NULL, NULL},
        {&KUBE_NETWORKPOLICIES, NS_ETCD, NULL, NULL},
        /* Cluster-wide kinds: only ours (manifests/static/backup-rbac.yaml carries the label). */
        {&KUBE_CLUSTERROLES, NULL, "app=etcd-backup", NULL},
        {&KUBE_CLUSTERROLEBINDINGS, NULL, "app=etcd-backup", NULL},
        /* Optional: an empty cache, and nothing applied, while monitoring's CRD is not served. */
        {&KUBE_SERVICEMONITORS, NS_OPERATOR, NULL, NULL},
};
static const WatchSpec *const watches[] = {
        OP_WATCH(W_NAMESPACES), &own[0], &own[1], &own[2], &own[3], &own[4], &own[5], &own[6], &own[7]};

/* Every member of `want` is in `have` with the same value; arrays match
 * element by element and in length. */
static bool json_subset(const cJSON *want, const cJSON *have)
{
        const cJSON *w, *h;

        if (!want || !have)
                return want == have;
        if (cJSON_IsObject(want)) {
                if (!cJSON_IsObject(have))
                        return false;
                JSON_ARRAY_FOREACH (w, want)
                        if (!json_subset(w, cJSON_GetObjectItemCaseSensitive(have, w->string)))
                                return false;
                return true;
        }
        if (cJSON_IsArray(want)) {
                if (!cJSON_IsArray(have) || cJSON_GetArraySize(want) != cJSON_GetArraySize(have))
                        return false;
                for (w = want->child, h = have->child; w && h; w = w->next, h = h->next)
                        if (!json_subset(w, h))
                                return false;
                return true;
        }
        return cJSON_Compare(want, have, true);
}

/* Whether the cached object already holds every field we set. */
static bool up_to_date(const cJSON *want, const KubeObject *have)
{
        const cJSON *f;

        if (!have)
                return false;
        JSON_ARRAY_FOREACH (f, want) {
                const cJSON *h = cJSON_GetObjectItemCaseSensitive(have->json, f->string);
                if (streq(f->string, "apiVersion") || streq(f->string, "kind"))
                        continue; /* list items may come without them */
                if (streq(f->string, "metadata")) {
                        static const char *const maps[] = {"labels", "annotations"};
                        for (size_t k = 0; k < ELEMENTSOF(maps); k++) {
                                const cJSON *m = cJSON_GetObjectItemCaseSensitive(f, maps[k]);
                                if (m && !json_subset(m, cJSON_GetObjectItemCaseSensitive(h, maps[k])))
                                        return false;
                        }
                        continue;
                }
                if (!json_subset(f, h))
                        return false;
        }
        return true;
}

static Informer *watched(const SyncContext *ctx, const KubeResource *res, const char *ns)
{
        for (size_t i = 0; i < ELEMENTSOF(watches); i++)
                if (watches[i]->res == res && (!res->namespaced || streq_ptr(watches[i]->namespace, ns)))
                        return informer_factory_find(ctx->informers, res, watches[i]->namespace,
                                                     watches[i]->label_selector, watches[i]->name);
        return NULL;
}

static int sync_object(const SyncContext *ctx, Plan *p, const char *path, const cJSON *obj)
{
        const char *api_version = json_get_string(obj, "apiVersion"), *kind = json_get_string(obj, "kind");
        const char *name = json_get_string(obj, "metadata.name"),
                   *ns = json_get_string(obj, "metadata.namespace");
        const KubeResource *res = kube_resource_by_kind(api_version, kind);
        Informer *inf;

        if (!res || !name || (res->namespaced && !ns))
                return log_error_errno(-EINVAL, "%s: %s %s is not a known object kind with a name", path,
                                       strempty(api_version), strempty(kind));
        inf = watched(ctx, res, ns);
        if (res->optional && (!inf || informer_is_absent(inf)))
                return 0; /* the cluster does not serve it (monitoring not installed): nothing to apply */
        if (inf && up_to_date(obj, informer_get(inf, res->namespaced ? ns : NULL, name)))
                return 0;
        if (inf)
                log_info("%s %s%s%s: applying %s", res->plural, strempty(ns), ns ? "/" : "", name, path);
        plan_apply(p, res, obj);
        return 0;
}

static int sync_static(const SyncContext *ctx, Plan *p)
{
        int r;

        for (const Asset *a = assets; a->path; a++) {
                _cleanup_(cJSON_Deletep) cJSON *docs = NULL;
                _cleanup_free_ char *err = NULL;
                cJSON *d;

                if (!startswith(a->path, STATIC_PREFIX))
                        continue;
                if (yaml_parse_all(a->data, a->len, &docs, &err) < 0)
                        return log_error_errno(-EINVAL, "%s: %s", a->path, strempty(err));
                JSON_ARRAY_FOREACH (d, docs)
                        if (cJSON_IsObject(d) && (r = sync_object(ctx, p, a->path, d)) < 0)
                                return r;
        }
        return 0;
}

const ControllerSpec controller_static_resources = {
        .name = "StaticResourcesController",
        .degraded_condition = "EtcdStaticResourcesDegraded",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 300 * USEC_PER_SEC, /* drift is rare; the watches see deletions */
        .sync = sync_static,
};
