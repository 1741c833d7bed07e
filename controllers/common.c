/* Shared informer set and readers for controllers. */
#include "common.h"
#include "base/json.h"
#include "base/log.h"
#include "facts.h"

const WatchSpec operator_watches[_W_MAX] = {
#define OP_WATCH_SPEC(w, r, ns, sel, name) [w] = {&r, ns, sel, name},
        OPERATOR_WATCHES(OP_WATCH_SPEC)
#undef OP_WATCH_SPEC
};

/* Whether `key` is one of the NULL-terminated `keys`. */
static bool key_in(const char *key, const char *const *keys)
{
        for (; key && *keys; keys++)
                if (streq(key, *keys))
                        return true;
        return false;
}

void operator_cache_transform(const KubeResource *res, cJSON *obj, cJSON *dropped)
{
        static const char *const container_fields[] = {
                "command",
                "args",
                "env",
                "envFrom",
                "volumeMounts",
                "ports",
                "resources",
                "lifecycle",
                "livenessProbe",
                "startupProbe",
                "securityContext",
                "imagePullPolicy",
                "terminationMessagePath",
                "terminationMessagePolicy",
                NULL,
        };
        /* Scheduling and runtime settings of the pod itself: no controller reads them. */
        static const char *const spec_fields[] = {
                "volumes",
                "tolerations",
                "dnsPolicy",
                "schedulerName",
                "restartPolicy",
                "securityContext",
                "priorityClassName",
                "priority",
                "preemptionPolicy",
                "enableServiceLinks",
                "serviceAccount", /* serviceAccountName stays: GuardController checks it */
                "terminationGracePeriodSeconds",
                "automountServiceAccountToken",
        };
        static const char *const container_lists[] = {"containers", "initContainers"};
        static const char *const status_fields[] = {"hostIPs", "podIPs", "qosClass", "startTime"};
        static const char *const status_lists[] = {"containerStatuses", "initContainerStatuses"};
        static const char *const container_status_fields[] = {"containerID", "image", "imageID", "started"};
        cJSON *spec, *status, *c, *item, *next;

        json_move_to(dropped, json_get_object(obj, "metadata"), "managedFields");
        const RevisionedObject *r = revision_copy_of(res, json_get_string(obj, "metadata.namespace"),
                                                     json_get_string(obj, "metadata.name"));
        if (r)
                (void) revision_copy_trim(r, obj, dropped); /* on OOM, fewer digests: still consistent */
        if (res != &KUBE_PODS)
                return;
        if ((status = json_get_object(obj, "status"))) {
                for (size_t k = 0; k < ELEMENTSOF(status_fields); k++)
                        json_move_to(dropped, status, status_fields[k]);
                JSON_ARRAY_FOREACH (c, json_get_array(status, "conditions"))
                        json_move_to(dropped, c, "lastProbeTime");
                for (size_t l = 0; l < ELEMENTSOF(status_lists); l++)
                        JSON_ARRAY_FOREACH (c, json_get_array(status, status_lists[l]))
                                for (size_t k = 0; k < ELEMENTSOF(container_status_fields); k++)
                                        json_move_to(dropped, c, container_status_fields[k]);
        }
        if (!(spec = json_get_object(obj, "spec")))
                return;
        for (size_t k = 0; k < ELEMENTSOF(spec_fields); k++)
                json_move_to(dropped, spec, spec_fields[k]);
        for (size_t l = 0; l < ELEMENTSOF(container_lists); l++)
                JSON_ARRAY_FOREACH (c, json_get_array(spec, container_lists[l]))
                        for (item = cJSON_IsObject(c) ? c->child : NULL; item; item = next) {
                                next = item->next;
                                if (key_in(item->string, container_fields))
                                        cJSON_AddItemToArray(dropped, cJSON_DetachItemViaPointer(c, item));
                        }
}

const OperatorState *op_state(const SyncContext *ctx)
{
        return ctx->state;
}

const char *object_data_string(const KubeObject *o, const char *key)
{
        const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(json_get_object(o->json, "data"), key) : NULL;
        return json_string(v);
}

EtcdMinor op_etcd_minor(const SyncContext *ctx)
{
        const OperatorState *st = op_state(ctx);
        return st && st->etcd_minor ? st->etcd_minor : ETCD_MINOR_DEFAULT;
}

const EtcdViewSnapshot *op_etcd(const SyncContext *ctx)
{
        if (ctx->spec && !ctx->spec->reads_etcd_view) {
                log_error("%s reads the etcd view without declaring it (reads_etcd_view)", ctx->spec->name);
#ifndef NDEBUG
                abort();
#endif
                return NULL;
        }
        const EtcdViewSnapshot *s = ctx->etcd;
        if (s && s->split_brain && !(ctx->spec && ctx->spec->reports_split_brain)) {
                /* Neither side's member list is one to act on: the sync sees none. One
                 * thread runs every sync, one at a time, so one copy serves them all. */
                static EtcdViewSnapshot split;
                split = (EtcdViewSnapshot){.n_ref = 1,
                                           .started_at = s->started_at,
                                           .taken_at = s->taken_at,
                                           .error = ETCD_ERR_SPLIT_BRAIN,
                                           .split_brain = true,
                                           .split_brain_detail = s->split_brain_detail,
                                           .quorate_at = s->quorate_at};
                return &split;
        }
        return s;
}

const char *op_etcd_unknown_why(const EtcdViewSnapshot *s)
{
        return s && s->error == ETCD_ERR_SPLIT_BRAIN ? etcd_strerror(s->error)
                                                     : "the etcd member list is unknown";
}

/* Reads match declared watches: a sync that reads an informer its spec does
 * not declare would never be woken by that informer's changes, and in
 * production would see it only because another controller declared it.
 * Debug builds stop right there; release builds read nothing. */
static bool declared(const SyncContext *ctx, const WatchSpec *ws)
{
        if (!ctx->spec)
                return true; /* a context made outside the runtime (tests of single helpers) */
        for (size_t i = 0; i < ctx->spec->n_watches; i++) {
                const WatchSpec *d = ctx->spec->watches[i];
                if (d->res == ws->res && streq_ptr(d->namespace, ws->namespace) &&
                    streq_ptr(d->label_selector, ws->label_selector) && streq_ptr(d->name, ws->name))
                        return true;
        }
        return false;
}

Informer *op_informer(const SyncContext *ctx, OperatorWatch w)
{
        const WatchSpec *ws = &operator_watches[w];
        if (!declared(ctx, ws)) {
                log_error("%s reads %s%s%s without declaring that watch in its spec", ctx->spec->name,
                          ws->res->plural, ws->namespace ? " in " : "", strempty(ws->namespace));
#ifndef NDEBUG
                abort();
#endif
                return NULL;
        }
        /* Find, never create: a sync starts no informer and does no I/O. */
        return informer_factory_find(ctx->informers, ws->res, ws->namespace, ws->label_selector, ws->name);
}

const KubeObject *op_get(const SyncContext *ctx, OperatorWatch w, const char *ns, const char *name)
{
        return informer_get(op_informer(ctx, w), ns, name);
}

int op_list(const SyncContext *ctx, OperatorWatch w, const KubeObject ***ret, size_t *ret_n)
{
        return informer_list(op_informer(ctx, w), ret, ret_n);
}

const KubeObject *op_get_job(const SyncContext *ctx, const char *app, const char *name)
{
        const KubeObject *job = op_get(ctx, W_ETCD_JOBS, NS_ETCD, name);
        return job && streq_ptr(json_get_string(job->json, "metadata.labels.app"), app) ? job : NULL;
}

int op_list_jobs(const SyncContext *ctx, const char *app, const KubeObject ***ret, size_t *ret_n)
{
        const KubeObject **all = NULL;
        size_t n = 0, k = 0;
        int r = op_list(ctx, W_ETCD_JOBS, &all, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(json_get_string(all[i]->json, "metadata.labels.app"), app))
                        all[k++] = all[i];
        if (k == 0)
                all = mfree(all);
        *ret = all;
        *ret_n = k;
        return 0;
}

const KubeObject *op_etcd_cr(const SyncContext *ctx)
{
        return op_get(ctx, W_ETCD_CR, NULL, "cluster");
}

bool op_listen_on_node_ip(const SyncContext *ctx)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        cJSON *v = cr ? json_get(cr->json, "spec.unsupportedConfigOverrides.listenOnNodeIP") : NULL;
        if (cJSON_IsBool(v))
                return cJSON_IsTrue(v);
        const OperatorState *s = op_state(ctx);
        return s && s->listen_on_node_ip;
}
