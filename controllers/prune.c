/* PruneController: deletes the API copies of old revisions (<name>-N and
 * revision-status-N) and the finished installer pods that belong to them,
 * keeping the last spec.succeededRevisionLimit revisions (default 5, -1
 * keeps everything) and every revision a node still uses: its current,
 * target and last failed revision. Nothing at or above
 * latestAvailableRevision is touched (RevisionController may be creating
 * it). Old revision directories on the nodes are not pruned here. */
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"

#define DEFAULT_KEEP 5
#define MAX_PER_SYNC 50

static const struct {
        OperatorWatch w;
        const KubeResource *res;
        const char *prefix;
} pruned[] = {
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "etcd-pod-"},
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "etcd-endpoints-"},
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "etcd-all-bundles-"},
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "revision-status-"},
        {W_ETCD_SECRETS, &KUBE_SECRETS, "etcd-all-certs-"},
};

/* The revision in `s` (decimal, no sign or leading zero), up to `end` or the string's end. */
static int64_t parse_rev(const char *s, char end)
{
        int64_t v = 0;
        if (!s || *s < '1' || *s > '9')
                return -1;
        for (; *s && *s != end; s++) {
                if (*s < '0' || *s > '9' || v > INT32_MAX / 10)
                        return -1;
                v = v * 10 + (*s - '0');
        }
        return end && !*s ? -1 : v;
}

typedef struct Keep {
        int64_t latest, keep;
        int64_t *in_use;
        size_t n_in_use;
} Keep;

static bool deletable(const Keep *k, int64_t rev)
{
        if (rev <= 0 || rev >= k->latest || rev > k->latest - k->keep)
                return false;
        for (size_t i = 0; i < k->n_in_use; i++)
                if (k->in_use[i] == rev)
                        return false;
        return true;
}

static int load_keep(const KubeObject *cr, Keep *k)
{
        static const char *const keys[] = {"currentRevision", "targetRevision", "lastFailedRevision"};
        cJSON *statuses = json_get_array(cr->json, "status.nodeStatuses"), *e;
        int64_t limit = 0;

        k->keep = DEFAULT_KEEP;
        if (json_get_int64(cr->json, "spec.succeededRevisionLimit", &limit) >= 0 && limit != 0)
                k->keep = limit < 0 ? -1 : limit;
        k->in_use = calloc((size_t) cJSON_GetArraySize(statuses) * ELEMENTSOF(keys) + 1, sizeof *k->in_use);
        if (!k->in_use)
                return -ENOMEM;
        JSON_ARRAY_FOREACH (e, statuses)
                for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                        int64_t v = 0;
                        if (json_get_int64(e, keys[i], &v) >= 0 && v > 0)
                                k->in_use[k->n_in_use++] = v;
                }
        return 0;
}

static size_t prune_copies(const SyncContext *ctx, Plan *p, const Keep *k, size_t budget)
{
        size_t done = 0;
        for (size_t t = 0; t < ELEMENTSOF(pruned); t++) {
                _cleanup_free_ const KubeObject **objs = NULL;
                size_t n = 0;
                if (op_list(ctx, pruned[t].w, &objs, &n) < 0)
                        continue;
                for (size_t i = 0; i < n && done < budget; i++) {
                        const char *name = objs[i]->name;
                        if (!startswith(name, pruned[t].prefix) ||
                            !deletable(k, parse_rev(name + strlen(pruned[t].prefix), 0)))
                                continue;
                        log_info("deleting %s %s/%s", pruned[t].res->kind, NS_ETCD, name);
                        plan_delete(p, pruned[t].res, NS_ETCD, name, kube_object_uid(objs[i]));
                        done++;
                }
        }
        return done;
}

static size_t prune_installers(const SyncContext *ctx, Plan *p, const Keep *k, size_t budget)
{
        _cleanup_free_ const KubeObject **pods = NULL;
        size_t n = 0, done = 0;
        if (op_list(ctx, W_ETCD_PODS, &pods, &n) < 0)
                return 0;
        for (size_t i = 0; i < n && done < budget; i++) {
                const char *phase = json_get_string(pods[i]->json, "status.phase");
                if (!startswith(pods[i]->name, "installer-") ||
                    !streq_ptr(kube_object_label(pods[i], "app"), "installer") ||
                    (!streq_ptr(phase, "Succeeded") && !streq_ptr(phase, "Failed")) ||
                    !deletable(k, parse_rev(pods[i]->name + strlen("installer-"), '-')))
                        continue;
                log_info("deleting finished installer pod %s/%s", NS_ETCD, pods[i]->name);
                plan_delete(p, &KUBE_PODS, NS_ETCD, pods[i]->name, kube_object_uid(pods[i]));
                done++;
        }
        return done;
}

static int sync_prune(const SyncContext *ctx, Plan *p)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        Keep k = {};
        int r;

        if (!cr || json_get_int64(cr->json, "status.latestAvailableRevision", &k.latest) < 0 ||
            k.latest <= 1)
                return 0;
        r = load_keep(cr, &k);
        if (r < 0)
                return r;
        _cleanup_free_ _unused_ int64_t *in_use = k.in_use; /* freed at scope exit */
        if (k.keep < 0)
                return 0;
        size_t done = prune_copies(ctx, p, &k, MAX_PER_SYNC);
        done += prune_installers(ctx, p, &k, MAX_PER_SYNC - done);
        if (done == MAX_PER_SYNC)
                plan_requeue_after(p, USEC_PER_SEC); /* more to do */
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_ETCD_CR), OP_WATCH(W_ETCD_CONFIGMAPS),
                                           OP_WATCH(W_ETCD_SECRETS), OP_WATCH(W_ETCD_PODS)};

const ControllerSpec controller_prune = {
        .name = "PruneController",
        .degraded_condition = "PruneControllerDegraded",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 10 * 60 * USEC_PER_SEC,
        .sync = sync_prune,
};
