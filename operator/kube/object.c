/* Cached objects. */
#include "object.h"
#include "base/json.h"

KubeObject *kube_object_new(cJSON *json)
{
        /* Cached objects are immutable and long-lived: freeze them into one block. */
        size_t size = 0;
        _cleanup_free_ cJSON *frozen =
                json && json_get_string(json, "metadata.name") ? json_freeze_sized(json, &size) : NULL;
        cJSON_Delete(json);
        if (!frozen)
                return NULL;
        const char *name = json_get_string(frozen, "metadata.name");
        const char *ns = json_get_string(frozen, "metadata.namespace");
        uint64_t rv = 0;

        if (!ns)
                ns = "";
        size_t kl = (*ns ? strlen(ns) + 1 : 0) + strlen(name) + 1;
        KubeObject *o = malloc(sizeof *o + kl);
        if (!o)
                return NULL;
        (void) json_get_uint64(frozen, "metadata.resourceVersion", &rv);
        *o = (KubeObject){.n_ref = 1,
                          .json = TAKE_PTR(frozen),
                          .namespace = ns,
                          .name = name,
                          .resource_version = rv,
                          .size = sizeof *o + kl + size};
        if (*ns)
                (void) snprintf(o->key, kl, "%s/%s", ns, name);
        else
                memcpy(o->key, name, kl);
        return o;
}

KubeObject *kube_object_ref(const KubeObject *o)
{
        KubeObject *m = (KubeObject *) o;
        if (m)
                m->n_ref++;
        return m;
}

KubeObject *kube_object_unref(KubeObject *o)
{
        if (!o || --o->n_ref > 0)
                return NULL;
        free(o->json); /* frozen: one block */
        return mfree(o);
}

void kube_object_unref_void(void *o)
{
        kube_object_unref(o);
}

/* A copy of o's JSON without the fields heartbeats change; NULL on OOM. */
static cJSON *without_heartbeats(const KubeObject *o)
{
        cJSON *j = cJSON_Duplicate(o->json, true), *md, *c;
        if (!j)
                return NULL;
        if ((md = json_get_object(j, "metadata"))) {
                cJSON_DeleteItemFromObjectCaseSensitive(md, "resourceVersion");
                cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
        }
        JSON_ARRAY_FOREACH (c, json_get_array(j, "status.conditions"))
                if (cJSON_IsObject(c))
                        cJSON_DeleteItemFromObjectCaseSensitive(c, "lastHeartbeatTime");
        return j;
}

bool kube_object_heartbeat_only(const KubeObject *old, const KubeObject *new)
{
        if (!old || !new || old == new || old->resource_version == new->resource_version)
                return false;
        _cleanup_(cJSON_Deletep) cJSON *a = without_heartbeats(old);
        _cleanup_(cJSON_Deletep) cJSON *b = without_heartbeats(new);
        return a && b && cJSON_Compare(a, b, true);
}

const char *kube_object_label(const KubeObject *o, const char *key)
{
        cJSON *labels = json_get_object(o->json, "metadata.labels");
        cJSON *v = labels ? cJSON_GetObjectItemCaseSensitive(labels, key) : NULL;
        return json_string(v);
}

const char *kube_object_annotation(const KubeObject *o, const char *key)
{
        cJSON *ann = o ? json_get_object(o->json, "metadata.annotations") : NULL;
        return json_string(ann ? cJSON_GetObjectItemCaseSensitive(ann, key) : NULL);
}

const char *kube_object_uid(const KubeObject *o)
{
        return json_get_string(o->json, "metadata.uid");
}

const char *kube_object_rv_string(const KubeObject *o)
{
        return json_get_string(o->json, "metadata.resourceVersion");
}

cJSON *kube_object_skeleton(const KubeResource *res, const char *ns, const char *name)
{
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        char buf[128];
        cJSON *md;

        assert_return(res && name, NULL);
        if (!o ||
            !cJSON_AddStringToObject(o, "apiVersion", kube_resource_api_version(res, buf, sizeof buf)) ||
            !cJSON_AddStringToObject(o, "kind", res->kind) ||
            !(md = cJSON_AddObjectToObject(o, "metadata")) || !cJSON_AddStringToObject(md, "name", name) ||
            (ns && !cJSON_AddStringToObject(md, "namespace", ns)))
                return NULL;
        return TAKE_PTR(o);
}
