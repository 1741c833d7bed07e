/* NodeStatusController, registered as "NodeController" (library-go's node and static-pod-state controllers
 * in one): keeps status.nodeStatuses of etcds/cluster to one entry per
 * master, sorted by nodeName, and moves each entry's currentRevision to the
 * `revision` label of the node's etcd mirror pod (etcd-<node>) once that pod
 * is Ready, clearing a targetRevision it reaches. The CRD's rules shape the
 * writes: a new entry carries no revision (it gets one in a later write),
 * currentRevision only grows and is never unset, so an entry whose Node was
 * replaced (another uid) is dropped in one write and added back in the next.
 * It reports StaticPodsAvailable (some node runs a ready etcd pod) and
 * StaticPodsDegraded (etcd pod containers crash-looping or unready for long),
 * and keeps status.readyReplicas to the number of masters whose etcd pod is
 * ready at the latest revision. */
#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"

#define UNREADY_FOR_LONG (5 * 60 * USEC_PER_SEC)

static cJSON *ready_condition(const KubeObject *pod)
{
        cJSON *c;
        JSON_ARRAY_FOREACH (c, pod ? json_get_array(pod->json, "status.conditions") : NULL)
                if (streq_ptr(json_get_string(c, "type"), "Ready"))
                        return c;
        return NULL;
}

/* The revision a ready mirror pod runs, 0 when not ready or unlabelled. */
static int64_t running_revision(const KubeObject *pod)
{
        uint64_t rev = 0;
        const char *label = pod ? kube_object_label(pod, "revision") : NULL;
        if (!pod_is_ready(pod) || !label || parse_uint64(label, &rev) < 0 || rev > INT32_MAX)
                return 0;
        return (int64_t) rev;
}

static int64_t entry_int(const cJSON *entry, const char *key)
{
        int64_t v = 0;
        return json_get_int64(entry, key, &v) >= 0 ? v : 0;
}

/* The CRD wants a UUID here; anything else is left out. */
static const char *node_uid(const KubeObject *node)
{
        const char *uid = kube_object_uid(node);
        return uid && strlen(uid) == 36 ? uid : NULL;
}

static const cJSON *find_entry(const cJSON *list, const char *node)
{
        cJSON *e;
        JSON_ARRAY_FOREACH (e, list)
                if (streq_ptr(json_get_string(e, "nodeName"), node))
                        return e;
        return NULL;
}

static int set_int(cJSON *entry, const char *key, int64_t v)
{
        cJSON_DeleteItemFromObjectCaseSensitive(entry, key);
        return cJSON_AddNumberToObject(entry, key, (double) v) ? 0 : -ENOMEM;
}

/* The entry `node` should have, from the one it has (NULL: a new entry). */
static cJSON *next_entry(const SyncContext *ctx, const KubeObject *node, const cJSON *have)
{
        const char *uid = node_uid(node);
        cJSON *e = have ? cJSON_Duplicate(have, true) : cJSON_CreateObject();
        if (!e)
                return NULL;
        if (!have) {
                if (!cJSON_AddStringToObject(e, "nodeName", node->name) ||
                    (uid && !cJSON_AddStringToObject(e, "nodeUID", uid))) {
                        cJSON_Delete(e);
                        return NULL;
                }
                return e;
        }
        if (uid && !json_get(e, "nodeUID") && !cJSON_AddStringToObject(e, "nodeUID", uid)) {
                cJSON_Delete(e);
                return NULL;
        }
        int64_t current = entry_int(e, "currentRevision"), target = entry_int(e, "targetRevision");
        int64_t running = running_revision(etcd_pod_of_node(ctx, node->name));
        if (running > current) {
                log_info("node %s runs revision %lld (was %lld)", node->name, (long long) running,
                         (long long) current);
                current = running;
                if (set_int(e, "currentRevision", current) < 0) {
                        cJSON_Delete(e);
                        return NULL;
                }
        }
        if (json_get(e, "targetRevision") && target <= current)
                cJSON_DeleteItemFromObjectCaseSensitive(e, "targetRevision");
        return e;
}

/* status.readyReplicas ("how many replicas are ready and at the desired state", the CRD
 * says): the masters whose etcd pod is ready at status.latestAvailableRevision. */
static int64_t ready_replicas(const SyncContext *ctx, const KubeObject *cr, const KubeObject **nodes,
                              size_t n)
{
        int64_t ready = 0, latest = 0;
        if (json_get_int64(cr->json, "status.latestAvailableRevision", &latest) < 0 || latest <= 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                ready += running_revision(etcd_pod_of_node(ctx, nodes[i]->name)) == latest;
        return ready;
}

static int sync_entries(const SyncContext *ctx, Plan *p, const KubeObject *cr, const KubeObject **nodes,
                        size_t n, cJSON **ret)
{
        int64_t ready = ready_replicas(ctx, cr, nodes, n), had_ready = -1;
        const cJSON *have = json_get_array(cr->json, "status.nodeStatuses");
        _cleanup_(cJSON_Deletep) cJSON *want = cJSON_CreateArray();
        *ret = NULL;
        if (!want)
                return -ENOMEM;
        /* Nodes come sorted by name, so the list is too. */
        for (size_t i = 0; i < n; i++) {
                const cJSON *e = find_entry(have, nodes[i]->name);
                const char *had_uid = e ? json_get_string(e, "nodeUID") : NULL;
                const char *uid = node_uid(nodes[i]);
                if (had_uid && uid && !streq(had_uid, uid)) {
                        log_info("node %s was replaced (uid %s, was %s): dropping its status",
                                 nodes[i]->name, uid, had_uid);
                        continue;
                }
                cJSON *next = next_entry(ctx, nodes[i], e);
                if (!next)
                        return -ENOMEM;
                cJSON_AddItemToArray(want, next);
        }
        (void) json_get_int64(cr->json, "status.readyReplicas", &had_ready);
        if (((have && cJSON_Compare(have, want, true)) || (!have && !want->child)) && had_ready == ready) {
                *ret = TAKE_PTR(want);
                return 0;
        }
        _cleanup_(cJSON_Deletep) cJSON *obj = cJSON_Duplicate(cr->json, true);
        cJSON *status = obj ? json_ensure_object(obj, "status") : NULL;
        cJSON *copy = cJSON_Duplicate(want, true);
        if (!status || !copy) {
                cJSON_Delete(copy);
                return -ENOMEM;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(status, "nodeStatuses");
        cJSON_AddItemToObject(status, "nodeStatuses", copy);
        cJSON_DeleteItemFromObjectCaseSensitive(status, "readyReplicas");
        if (!cJSON_AddNumberToObject(status, "readyReplicas", (double) ready))
                return -ENOMEM;
        plan_update_status(p, &KUBE_ETCDS, obj);
        *ret = TAKE_PTR(want);
        return 0;
}

/* Crash loops now, or not ready for longer than UNREADY_FOR_LONG. */
static void pod_problems(const SyncContext *ctx, const KubeObject *pod, Buf *out, usec_t *ret_recheck)
{
        static const char *const lists[] = {"status.initContainerStatuses", "status.containerStatuses"};
        char line[768];
        cJSON *cs;

        for (size_t k = 0; k < ELEMENTSOF(lists); k++)
                JSON_ARRAY_FOREACH (cs, json_get_array(pod->json, lists[k])) {
                        if (!streq_ptr(json_get_string(cs, "state.waiting.reason"), "CrashLoopBackOff"))
                                continue;
                        /* What the container said as it last exited, when it said anything: that is
                         * the cause (the etcd image refused, a database that does not open), where
                         * the kubelet's own "back-off 40s restarting failed container" is not. No
                         * restart count, back-off or age in the text: each restart or passing
                         * minute would be another status write while nothing else changed. */
                        char said[401] = "", detail[480]; /* 400 characters said */
                        termination_line(strempty(json_get_string(cs, "lastState.terminated.message")), said,
                                         sizeof said);
                        const cJSON *code = json_get(cs, "lastState.terminated.exitCode");
                        if (said[0] && cJSON_IsNumber(code))
                                (void) snprintf(detail, sizeof detail, ", last exit code %d: %s",
                                                (int) code->valuedouble, said);
                        else
                                (void) snprintf(detail, sizeof detail, ": %s",
                                                strempty(json_get_string(cs, "state.waiting.message")));
                        (void) snprintf(line, sizeof line, "%spod/%s container \"%s\" is crash-looping%s",
                                        out->len ? "; " : "", pod->name,
                                        strempty(json_get_string(cs, "name")), detail);
                        (void) buf_append(out, line, strlen(line));
                }
        cJSON *ready = ready_condition(pod);
        usec_t since = 0;
        if (!ready || pod_is_ready(pod) ||
            parse_rfc3339(json_get_string(ready, "lastTransitionTime"), &since) < 0)
                return;
        if (ctx->now >= since + UNREADY_FOR_LONG) {
                (void) snprintf(line, sizeof line, "%spod/%s has not been ready since %s",
                                out->len ? "; " : "", pod->name,
                                strempty(json_get_string(ready, "lastTransitionTime")));
                (void) buf_append(out, line, strlen(line));
        } else if (!*ret_recheck || since + UNREADY_FOR_LONG - ctx->now < *ret_recheck)
                *ret_recheck = since + UNREADY_FOR_LONG - ctx->now;
}

/* "2 nodes are at revision 3; 1 node is at revision 4", from the entries just computed. */
static void describe_revisions(const cJSON *entries, char *buf, size_t n)
{
        int64_t prev = -1;
        size_t off = 0;
        buf[0] = 0;
        for (;;) {
                int64_t rev = INT64_MAX;
                size_t count = 0;
                const cJSON *e;
                JSON_ARRAY_FOREACH (e, entries)
                        if (entry_int(e, "currentRevision") > prev && entry_int(e, "currentRevision") < rev)
                                rev = entry_int(e, "currentRevision");
                if (rev == INT64_MAX)
                        return;
                JSON_ARRAY_FOREACH (e, entries)
                        count += entry_int(e, "currentRevision") == rev;
                int k = snprintf(buf + off, n - off, "%s%zu node%s %s at revision %lld", off ? "; " : "",
                                 count, count == 1 ? "" : "s", count == 1 ? "is" : "are", (long long) rev);
                off = MIN(off + (size_t) MAX(k, 0), n - 1);
                prev = rev;
        }
}

static void plan_pod_conditions(const SyncContext *ctx, Plan *p, const KubeObject **nodes, size_t n,
                                const cJSON *entries)
{
        Buf problems = BUF_INIT(0);
        usec_t recheck = 0;
        size_t active = 0;
        char revs[512];

        for (size_t i = 0; i < n; i++) {
                const KubeObject *pod = etcd_pod_of_node(ctx, nodes[i]->name);
                if (!pod)
                        continue;
                active += pod_is_ready(pod);
                pod_problems(ctx, pod, &problems, &recheck);
        }
        describe_revisions(entries, revs, sizeof revs);
        if (active > 0)
                plan_condition(p, "StaticPodsAvailable", "True", "AsExpected", "%zu node%s %s active; %s",
                               active, active == 1 ? "" : "s", active == 1 ? "is" : "are", revs);
        else
                plan_condition(p, "StaticPodsAvailable", "False", "ZeroNodesActive",
                               "0 nodes are active; %s", revs);
        if (problems.len)
                plan_condition(p, "StaticPodsDegraded", "True", "Error", "%.*s", (int) problems.len,
                               problems.data);
        else
                plan_condition(p, "StaticPodsDegraded", "False", "AsExpected", "all etcd pods are healthy");
        if (recheck)
                plan_requeue_after(p, recheck);
        buf_free(&problems);
}

static int sync_node_status(const SyncContext *ctx, Plan *p)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n = 0;
        int r;

        if (!cr)
                return 0;
        r = op_list_etcd_nodes(ctx, &nodes, &n);
        if (r < 0)
                return r;
        _cleanup_(cJSON_Deletep) cJSON *entries = NULL;
        r = sync_entries(ctx, p, cr, nodes, n, &entries);
        if (r < 0)
                return r;
        plan_pod_conditions(ctx, p, nodes, n, entries);
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_ETCD_CR), OP_WATCH_ETCD_NODES,
                                           OP_WATCH(W_INFRASTRUCTURES), OP_WATCH(W_ETCD_PODS)};

const ControllerSpec controller_node_status = {
        .name = "NodeController",
        .degraded_condition = "NodeControllerDegraded",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 30 * USEC_PER_SEC,
        .sync = sync_node_status,
};
