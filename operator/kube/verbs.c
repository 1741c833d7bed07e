/* Typed verbs over kube_call(): path and query building for get, list,
 * create, update, patch and delete. */
#include "base/json.h"
#include "client.h"

static const char *object_namespace(const KubeResource *r, const cJSON *obj)
{
        return r->namespaced ? json_get_string(obj, "metadata.namespace") : NULL;
}

int kube_get(KubeClient *c, const KubeResource *r, const char *ns, const char *name, KubeCallback cb,
             void *userdata)
{
        assert_return(name, -EINVAL);
        _cleanup_free_ char *path = kube_resource_path(r, ns, name, NULL);
        if (!path)
                return -EINVAL;
        return kube_call(c, "GET", path, NULL, NULL, cb, userdata, NULL);
}

static int append_param(char **q, const char *key, const char *value)
{
        _cleanup_free_ char *esc = kube_query_escape(value);
        if (!esc)
                return -ENOMEM;
        char *n = strdup_printf("%s%s%s=%s", *q ? *q : "", *q ? "&" : "?", key, esc);
        if (!n)
                return -ENOMEM;
        free(*q);
        *q = n;
        return 0;
}

int kube_list(KubeClient *c, const KubeResource *r, const char *ns, const KubeListOpts *o, KubeCallback cb,
              void *userdata)
{
        _cleanup_free_ char *path = kube_resource_path(r, ns, NULL, NULL), *q = NULL, *full = NULL;
        char limit[32];
        int e = 0;

        if (!path)
                return -EINVAL;
        if (o && o->label_selector)
                e = append_param(&q, "labelSelector", o->label_selector);
        if (e >= 0 && o && o->field_selector)
                e = append_param(&q, "fieldSelector", o->field_selector);
        if (e >= 0 && o && o->resource_version)
                e = append_param(&q, "resourceVersion", o->resource_version);
        if (e >= 0 && o && o->cont)
                e = append_param(&q, "continue", o->cont);
        if (e >= 0 && o && o->limit) {
                (void) snprintf(limit, sizeof limit, "%u", o->limit);
                e = append_param(&q, "limit", limit);
        }
        if (e < 0)
                return e;
        full = strdup_printf("%s%s", path, strempty(q));
        if (!full)
                return -ENOMEM;
        return kube_call(c, "GET", full, NULL, NULL, cb, userdata, NULL);
}

int kube_create(KubeClient *c, const KubeResource *r, const char *ns, const cJSON *obj, KubeCallback cb,
                void *userdata)
{
        assert_return(obj, -EINVAL);
        if (!ns)
                ns = object_namespace(r, obj);
        if (r->namespaced && !ns)
                return -EINVAL;
        _cleanup_free_ char *path = kube_resource_path(r, r->namespaced ? ns : NULL, NULL, NULL);
        if (!path)
                return -EINVAL;
        return kube_call(c, "POST", path, obj, "application/json", cb, userdata, NULL);
}

static int update(KubeClient *c, const KubeResource *r, const cJSON *obj, const char *sub, KubeCallback cb,
                  void *userdata)
{
        const char *name = json_get_string(obj, "metadata.name");
        const char *ns = object_namespace(r, obj);

        assert_return(name, -EINVAL);
        if (r->namespaced && !ns)
                return -EINVAL;
        _cleanup_free_ char *path = kube_resource_path(r, ns, name, sub);
        if (!path)
                return -EINVAL;
        return kube_call(c, "PUT", path, obj, "application/json", cb, userdata, NULL);
}

int kube_update(KubeClient *c, const KubeResource *r, const cJSON *obj, KubeCallback cb, void *userdata)
{
        return update(c, r, obj, NULL, cb, userdata);
}

int kube_update_status(KubeClient *c, const KubeResource *r, const cJSON *obj, KubeCallback cb,
                       void *userdata)
{
        return update(c, r, obj, "status", cb, userdata);
}

int kube_patch(KubeClient *c, const KubeResource *r, const char *ns, const char *name, const char *sub,
               KubePatchType type, const cJSON *patch, const char *field_manager, bool force,
               KubeCallback cb, void *userdata)
{
        static const char *const types[_KUBE_PATCH_TYPE_MAX] = {
                [KUBE_PATCH_MERGE] = "application/merge-patch+json",
                [KUBE_PATCH_JSON] = "application/json-patch+json",
                [KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
                [KUBE_PATCH_APPLY] = "application/apply-patch+yaml",
        };
        _cleanup_free_ char *path = kube_resource_path(r, ns, name, sub), *q = NULL, *full = NULL;
        int e = 0;

        assert_return(type >= 0 && type < _KUBE_PATCH_TYPE_MAX && patch && name, -EINVAL);
        assert_return(type != KUBE_PATCH_APPLY || field_manager, -EINVAL);
        if (!path)
                return -EINVAL;
        if (field_manager)
                e = append_param(&q, "fieldManager", field_manager);
        if (e >= 0 && type == KUBE_PATCH_APPLY && force)
                e = append_param(&q, "force", "true");
        if (e < 0)
                return e;
        full = strdup_printf("%s%s", path, strempty(q));
        if (!full)
                return -ENOMEM;
        return kube_call(c, "PATCH", full, patch, types[type], cb, userdata, NULL);
}

int kube_delete(KubeClient *c, const KubeResource *r, const char *ns, const char *name,
                const char *precondition_uid, const char *precondition_rv, KubeCallback cb, void *userdata)
{
        _cleanup_free_ char *path = kube_resource_path(r, ns, name, NULL);
        _cleanup_(cJSON_Deletep) cJSON *opts = cJSON_CreateObject();

        assert_return(name, -EINVAL);
        if (!path)
                return -EINVAL;
        if (!opts || !cJSON_AddStringToObject(opts, "kind", "DeleteOptions") ||
            !cJSON_AddStringToObject(opts, "apiVersion", "v1") ||
            !cJSON_AddStringToObject(opts, "propagationPolicy", "Background"))
                return -ENOMEM;
        if (precondition_uid || precondition_rv) {
                cJSON *p = cJSON_AddObjectToObject(opts, "preconditions");
                if (!p || (precondition_uid && !cJSON_AddStringToObject(p, "uid", precondition_uid)) ||
                    (precondition_rv && !cJSON_AddStringToObject(p, "resourceVersion", precondition_rv)))
                        return -ENOMEM;
        }
        return kube_call(c, "DELETE", path, opts, "application/json", cb, userdata, NULL);
}
