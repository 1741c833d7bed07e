/* RevisionController: snapshots the objects a node's etcd is built from
 * (ConfigMaps etcd-pod, etcd-endpoints, etcd-all-bundles; Secret
 * etcd-all-certs) as numbered revisions, as library-go's revision controller
 * does. When the current content differs from revision N =
 * status.latestAvailableRevision (or spec.forceRedeploymentReason differs
 * from the one revision N recorded), it creates the copies <name>-(N+1) and
 * revision-status-(N+1), and only once every copy is in the cache with the
 * current content does it publish N+1 in latestAvailableRevision. The
 * runtime carries on after a failed intent, so this order is what keeps
 * "latestAvailableRevision N => every copy of N exists" true: a half-created
 * N+1 is simply completed (or refreshed) by the next sync. After bootstrap,
 * a new revision (which restarts every member in turn) needs a
 * fault-tolerant etcd (as upstream's: a rollout must not cost quorum), unless a master is
 * waiting to join, or a voter is down because its etcd does not come up at the latest
 * revision: then the InstallerController takes the revision to that master first and
 * restarts no voter without quorum to spare. */
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"

#define FORCE_KEY "forceRedeploymentReason"

static const KubeObject *get_rev(const SyncContext *ctx, size_t i, int64_t rev)
{
        char name[128];
        if (rev <= 0)
                return op_get(ctx, revisioned_objects[i].w, NS_ETCD, revisioned_objects[i].name);
        (void) snprintf(name, sizeof name, "%s-%lld", revisioned_objects[i].name, (long long) rev);
        return op_get(ctx, revisioned_objects[i].w, NS_ETCD, name);
}

static const KubeObject *status_cm(const SyncContext *ctx, int64_t rev)
{
        char name[64];
        (void) snprintf(name, sizeof name, "%s-%lld", REVISION_STATUS_NAME, (long long) rev);
        return op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, name);
}

/* Whether the copy `copy` holds what `cur` holds now (the cache keeps a copy's long
 * values as digests: revision_copy_trim). */
static bool same_content(const KubeObject *cur, const KubeObject *copy)
{
        return revision_copy_map_matches(json_get_object(copy->json, "data"),
                                         json_get_object(cur->json, "data")) &&
               revision_copy_map_matches(json_get_object(copy->json, "binaryData"),
                                         json_get_object(cur->json, "binaryData"));
}

static const char *force_reason(const KubeObject *cr)
{
        return strempty(json_get_string(cr->json, "spec.forceRedeploymentReason"));
}

static const char *recorded_force_reason(const KubeObject *status)
{
        return status ? strempty(json_get_string(status->json, "data." FORCE_KEY)) : "";
}

/* The quorum gate: a new revision restarts every member in turn. While the
 * bootstrap runs (until its member has left, as upstream) and on a cluster
 * of one member by design, revisions roll out freely. */
static bool revision_allowed(const SyncContext *ctx, int64_t latest, char *why, size_t n)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        bool known = s && s->error >= 0 && s->members;
        BootstrapPhase phase = bootstrap_phase(ctx, s);

        if (phase == BOOTSTRAP_IN_PROGRESS || (phase == BOOTSTRAP_REPORTED && known) ||
            scaling_is_single_member(scaling_strategy(ctx)))
                return true;
        if (!known) {
                (void) snprintf(why, n, "the etcd membership is unknown");
                return false;
        }
        /* A master waiting to join needs a revision that carries it (its certificates, its
         * address), or a cluster short of a member could never grow back. The installer
         * takes it to the new master first and restarts no voter without quorum to spare. */
        /* The same for a voter whose etcd does not start at the latest revision (the release
         * broke it there): only a newer one, the fixed release, brings it back, and it goes
         * to that master first; upstream's gate would wait for ever here. */
        if (!etcd_view_is_fault_tolerant(s) && !master_joining(ctx, s) &&
            !voter_down_at_revision(ctx, s, latest)) {
                (void) snprintf(why, n,
                                "%zu of %zu voting members are healthy; quorum is %zu and a revision "
                                "rollout needs at least 3 healthy members and one to spare",
                                etcd_view_count_healthy_voters(s), etcd_view_count_voters(s),
                                etcd_view_quorum(s));
                return false;
        }
        return true;
}

/* Why revision N is not current (a short text for latestAvailableRevisionReason), or NULL. */
static char *what_changed(const SyncContext *ctx, const KubeObject *cr, int64_t n)
{
        char buf[512] = "";
        size_t off = 0;

        if (n <= 0)
                return strdup("initial revision");
        for (size_t i = 0; i < N_REVISIONED_OBJECTS; i++) {
                const KubeObject *copy = get_rev(ctx, i, n);
                char item[160];
                if (copy && same_content(get_rev(ctx, i, 0), copy))
                        continue;
                (void) snprintf(item, sizeof item, copy ? "%s/%s has changed" : "%s/%s-%lld is missing",
                                revisioned_objects[i].kind, revisioned_objects[i].name, (long long) n);
                off += (size_t) snprintf(buf + off, sizeof buf - MIN(off, sizeof buf), "%s%s",
                                         off ? ", " : "", item);
                off = MIN(off, sizeof buf - 1);
        }
        if (!streq(force_reason(cr), recorded_force_reason(status_cm(ctx, n))))
                (void) snprintf(buf + off, sizeof buf - off, "%sforced redeployment: %s", off ? ", " : "",
                                force_reason(cr));
        return buf[0] ? strdup(buf) : NULL;
}

static int add_copy_of(cJSON *to, const cJSON *from, const char *key)
{
        cJSON *v = json_get_object(from, key);
        if (!v || !v->child)
                return 0;
        cJSON *d = cJSON_Duplicate(v, true);
        if (!d)
                return -ENOMEM;
        cJSON_AddItemToObject(to, key, d);
        return 0;
}

/* Phase one: the copies and revision-status-(N+1). Re-applied until they match. */
static int plan_copies(const SyncContext *ctx, Plan *p, const KubeObject *cr, int64_t next,
                       const char *reason)
{
        char name[128], rev[24];
        (void) snprintf(rev, sizeof rev, "%lld", (long long) next);
        (void) snprintf(name, sizeof name, "%s-%lld", REVISION_STATUS_NAME, (long long) next);
        _cleanup_(cJSON_Deletep) cJSON *st = kube_object_skeleton(&KUBE_CONFIGMAPS, NS_ETCD, name);
        cJSON *data = st ? cJSON_AddObjectToObject(st, "data") : NULL;
        if (!data || !cJSON_AddStringToObject(data, "status", "InProgress") ||
            !cJSON_AddStringToObject(data, "reason", reason) ||
            !cJSON_AddStringToObject(data, "revision", rev) ||
            !cJSON_AddStringToObject(data, FORCE_KEY, force_reason(cr)))
                return -ENOMEM;
        plan_apply(p, &KUBE_CONFIGMAPS, st);

        for (size_t i = 0; i < N_REVISIONED_OBJECTS; i++) {
                const KubeObject *cur = get_rev(ctx, i, 0);
                bool secret = revisioned_objects[i].res == &KUBE_SECRETS;
                (void) snprintf(name, sizeof name, "%s-%lld", revisioned_objects[i].name, (long long) next);
                _cleanup_(cJSON_Deletep) cJSON *copy =
                        kube_object_skeleton(secret ? &KUBE_SECRETS : &KUBE_CONFIGMAPS, NS_ETCD, name);
                const char *type = json_get_string(cur->json, "type");
                if (!copy || (secret && type && !cJSON_AddStringToObject(copy, "type", type)) ||
                    add_copy_of(copy, cur->json, "data") < 0 ||
                    add_copy_of(copy, cur->json, "binaryData") < 0)
                        return -ENOMEM;
                plan_apply(p, revisioned_objects[i].res, copy);
        }
        return 0;
}

/* Every copy of `next` is cached with the current content, and its status
 * recorded the current force reason. */
static bool copies_ready(const SyncContext *ctx, const KubeObject *cr, int64_t next)
{
        const KubeObject *st = status_cm(ctx, next);
        if (!st || !streq(force_reason(cr), recorded_force_reason(st)))
                return false;
        /* etcd-pod carries the reason too (TargetConfigController writes it on the same
         * change): publishing before it does would make a second revision right after. */
        const char *pod_reason = json_get_string(get_rev(ctx, 0, 0)->json, "data." FORCE_KEY);
        if (pod_reason && !streq(pod_reason, force_reason(cr)))
                return false;
        for (size_t i = 0; i < N_REVISIONED_OBJECTS; i++) {
                const KubeObject *copy = get_rev(ctx, i, next);
                if (!copy || !same_content(get_rev(ctx, i, 0), copy))
                        return false;
        }
        return true;
}

/* Phase two: publish. A PUT on the cached object with only our two fields changed. */
static int plan_publish(const SyncContext *ctx, Plan *p, const KubeObject *cr, int64_t next)
{
        const char *reason = json_get_string(status_cm(ctx, next)->json, "data.reason");
        _cleanup_(cJSON_Deletep) cJSON *obj = cJSON_Duplicate(cr->json, true);
        cJSON *status = obj ? json_ensure_object(obj, "status") : NULL;
        if (!status)
                return -ENOMEM;
        cJSON_DeleteItemFromObjectCaseSensitive(status, "latestAvailableRevision");
        cJSON_DeleteItemFromObjectCaseSensitive(status, "latestAvailableRevisionReason");
        if (!cJSON_AddNumberToObject(status, "latestAvailableRevision", (double) next) ||
            !cJSON_AddStringToObject(status, "latestAvailableRevisionReason", strempty(reason)))
                return -ENOMEM;
        log_info("revision %lld is complete, publishing it (%s)", (long long) next, strempty(reason));
        plan_update_status(p, &KUBE_ETCDS, obj);
        plan_event(p, false, "RevisionTriggered", "new revision %lld triggered by \"%s\"", (long long) next,
                   strempty(reason));
        return 0;
}

static int sync_revision(const SyncContext *ctx, Plan *p)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        int64_t latest = 0;
        char why[256];

        if (!cr)
                return 0;
        (void) json_get_int64(cr->json, "status.latestAvailableRevision", &latest);
        for (size_t i = 0; i < N_REVISIONED_OBJECTS; i++)
                if (!get_rev(ctx, i, 0)) {
                        plan_waiting(p, "RevisionWaiting", "no revision yet: %s %s/%s does not exist",
                                     revisioned_objects[i].kind, NS_ETCD, revisioned_objects[i].name);
                        plan_requeue_after(p, 10 * USEC_PER_SEC);
                        return 0;
                }
        _cleanup_free_ char *reason = what_changed(ctx, cr, latest);
        if (!reason)
                return 0; /* revision N is current */
        if (!revision_allowed(ctx, latest, why, sizeof why)) {
                plan_waiting(p, "RevisionWaiting", "not starting revision %lld (%s): %s",
                             (long long) latest + 1, reason, why);
                plan_requeue_after(p, 15 * USEC_PER_SEC);
                return 0;
        }
        if (copies_ready(ctx, cr, latest + 1))
                return plan_publish(ctx, p, cr, latest + 1);
        /* A source that changes while revision N+1 is being copied joins it: re-copy, one revision. */
        if (status_cm(ctx, latest + 1))
                log_info("creating revision %lld: the sources changed while copying, copying again: %s",
                         (long long) latest + 1, reason);
        else
                log_info("creating revision %lld: %s", (long long) latest + 1, reason);
        return plan_copies(ctx, p, cr, latest + 1, reason);
}

static const WatchSpec *const watches[] = {
        OP_WATCH(W_ETCD_CR),    OP_WATCH(W_ETCD_CONFIGMAPS),        OP_WATCH(W_ETCD_SECRETS),
        OP_WATCH(W_ETCD_PODS),  OP_WATCH(W_KUBE_SYSTEM_CONFIGMAPS), OP_WATCH(W_KUBE_SYSTEM_EVENTS),
        OP_WATCH_ETCD_MACHINES, OP_WATCH(W_INFRASTRUCTURES),        OP_WATCH_ETCD_NODES,
        OP_WATCH(W_NAMESPACES)};

const ControllerSpec controller_revision = {
        .name = "RevisionController",
        .degraded_condition = "RevisionControllerDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_revision,
};
