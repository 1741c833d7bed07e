/* PruneController: deletes the API copies of old revisions (<name>-N and
 * revision-status-N) and the finished installer and pruner pods that belong
 * to them, keeping the last spec.succeededRevisionLimit revisions (default
 * 5, -1 keeps everything) and every revision a node still uses: its
 * current, target and last failed revision. Nothing at or above
 * latestAvailableRevision is touched (RevisionController may be creating
 * it).
 *
 * On the nodes, as library-go's prune controller: once a master runs the
 * latest revision (no target pending), a pod revision-pruner-<latest>-<node>
 * (render/installerpod.h) runs `cluster-etcd-operator prune` there, which
 * removes the revision directories the installer wrote below the kept
 * window (--max-eligible-revision), but the node's own current, target and
 * last failed revisions (--protected-revisions) and whatever revision its
 * running manifest has. One such pod per node and
 * revision; none while the node rolls out. */
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"
#include "render/installerpod.h"

#define DEFAULT_KEEP      5
#define PRUNER_POD_PREFIX "revision-pruner-"
#define MAX_PER_SYNC      50

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

/* The revisions a nodeStatuses entry says the node uses. */
static const char *const in_use_keys[] = {"currentRevision", "targetRevision", "lastFailedRevision"};

static int load_keep(const KubeObject *cr, Keep *k)
{
        cJSON *statuses = json_get_array(cr->json, "status.nodeStatuses"), *e;
        int64_t limit = 0;

        k->keep = DEFAULT_KEEP;
        if (json_get_int64(cr->json, "spec.succeededRevisionLimit", &limit) >= 0 && limit != 0)
                k->keep = limit < 0 ? -1 : limit;
        k->in_use = calloc((size_t) cJSON_GetArraySize(statuses) * ELEMENTSOF(in_use_keys) + 1,
                           sizeof *k->in_use);
        if (!k->in_use)
                return -ENOMEM;
        JSON_ARRAY_FOREACH (e, statuses)
                for (size_t i = 0; i < ELEMENTSOF(in_use_keys); i++) {
                        int64_t v = 0;
                        if (json_get_int64(e, in_use_keys[i], &v) >= 0 && v > 0)
                                k->in_use[k->n_in_use++] = v;
                }
        return 0;
}

static size_t prune_copies(const SyncContext *ctx, Plan *p, const Keep *k, size_t budget)
{
        size_t done = 0;
        /* Each revisioned object's copies, then revision-status-<N>. */
        for (size_t t = 0; t <= N_REVISIONED_OBJECTS; t++) {
                bool status = t == N_REVISIONED_OBJECTS;
                OperatorWatch w = status ? W_ETCD_CONFIGMAPS : revisioned_objects[t].w;
                const KubeResource *res = status ? &KUBE_CONFIGMAPS : revisioned_objects[t].res;
                _cleanup_free_ const KubeObject **objs = NULL;
                size_t n = 0;
                if (op_list(ctx, w, &objs, &n) < 0)
                        continue;
                for (size_t i = 0; i < n && done < budget; i++) {
                        const char *name = objs[i]->name;
                        int64_t rev = revision_copy_number(name, status ? REVISION_STATUS_NAME
                                                                        : revisioned_objects[t].name);
                        if (!deletable(k, rev))
                                continue;
                        log_info("deleting %s %s/%s", res->kind, NS_ETCD, name);
                        plan_delete(p, res, NS_ETCD, name, kube_object_uid(objs[i]));
                        done++;
                }
        }
        return done;
}

/* The pods the operator runs on the masters: name prefix, label app. */
static const struct {
        const char *prefix, *app;
} node_pods[] = {
        {"installer-", "installer"},
        {PRUNER_POD_PREFIX, "pruner"},
};

static size_t prune_node_pods(const SyncContext *ctx, Plan *p, const Keep *k, size_t budget)
{
        _cleanup_free_ const KubeObject **pods = NULL;
        size_t n = 0, done = 0;
        if (op_list(ctx, W_ETCD_PODS, &pods, &n) < 0)
                return 0;
        for (size_t i = 0; i < n && done < budget; i++) {
                const char *phase = json_get_string(pods[i]->json, "status.phase");
                if (!streq_ptr(phase, "Succeeded") && !streq_ptr(phase, "Failed"))
                        continue;
                for (size_t t = 0; t < ELEMENTSOF(node_pods); t++) {
                        if (!startswith(pods[i]->name, node_pods[t].prefix) ||
                            !streq_ptr(kube_object_label(pods[i], "app"), node_pods[t].app) ||
                            !deletable(k, revision_number(pods[i]->name + strlen(node_pods[t].prefix), '-')))
                                continue;
                        log_info("deleting finished %s pod %s/%s", node_pods[t].app, NS_ETCD, pods[i]->name);
                        plan_delete(p, &KUBE_PODS, NS_ETCD, pods[i]->name, kube_object_uid(pods[i]));
                        done++;
                }
        }
        return done;
}

/* A pruner pod for each master that runs the latest revision and has none for it yet. */
static int prune_nodes(const SyncContext *ctx, Plan *p, const Keep *k)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        cJSON *e;

        if (k->latest <= k->keep)
                return 0; /* every revision is in the kept window */
        JSON_ARRAY_FOREACH (e, json_get_array(cr->json, "status.nodeStatuses")) {
                const char *node = json_get_string(e, "nodeName");
                int64_t current = 0, target = 0, protect[ELEMENTSOF(in_use_keys)];
                size_t n = 0;
                char name[300];
                if (!node || json_get_int64(e, "currentRevision", &current) < 0 || current != k->latest ||
                    (json_get_int64(e, "targetRevision", &target) >= 0 && target > 0))
                        continue; /* not at the latest revision yet, or rolling out */
                (void) snprintf(name, sizeof name, PRUNER_POD_PREFIX "%lld-%s", (long long) k->latest, node);
                if (op_get(ctx, W_ETCD_PODS, NS_ETCD, name))
                        continue;
                /* Eligible: below the kept window; protected: what the node uses there. */
                for (size_t i = 0; i < ELEMENTSOF(in_use_keys); i++) {
                        int64_t v = 0;
                        if (json_get_int64(e, in_use_keys[i], &v) >= 0 && v > 0 && v <= k->latest - k->keep)
                                protect[n++] = v;
                }
                _cleanup_(cJSON_Deletep) cJSON *obj = NULL;
                int r = pruner_pod_render(name, node, strempty(op_state(ctx)->operator_image),
                                          k->latest - k->keep, protect, n, &obj);
                if (r < 0)
                        return log_error_errno(r, "cannot render pruner pod %s for node %s", name, node);
                log_info("pruning old revision directories on node %s (%s)", node, name);
                plan_create(p, &KUBE_PODS, obj);
                return 0; /* one pod per sync: the next sync sees it and goes on */
        }
        return 0;
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
        done += prune_node_pods(ctx, p, &k, MAX_PER_SYNC - done);
        if (done == MAX_PER_SYNC) {
                plan_requeue_after(p, USEC_PER_SEC); /* more to do */
                return 0;
        }
        return prune_nodes(ctx, p, &k);
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
