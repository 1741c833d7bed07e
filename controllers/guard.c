/* GuardController: the quorum guard (library-go's static-pod guard, as
 * upstream runs it for etcd). One pod etcd-guard-<node> per master that runs
 * an etcd pod, ready exactly while that member's readyz answers, and the
 * PodDisruptionBudget etcd-guard-pdb over them with minAvailable = masters
 * - 1. A drain evicts pods through the budget, so it cannot take a second
 * member's guard while one member is down or already drained: the drain
 * waits instead of costing quorum.
 *
 * Not on a single-member control plane (nothing to keep). A cordoned master
 * gets no new guard (the drain of that node is the one the budget spends
 * its disruption on). A guard whose node is no longer a master, or whose
 * probe points at an old address or image, is deleted and made again. A
 * Ready master with no etcd pod for 10 minutes is Degraded, as upstream
 * (upstream says so at once; a master is Ready before its etcd pod exists
 * during every installation). */
#include "base/json.h"
#include "controllers.h"
#include "facts.h"
#include "runtime/conditions.h"

#define GUARD_PREFIX     "etcd-guard-"
#define GUARD_PDB        "etcd-guard-pdb"
#define GUARD_SA         "guard-sa"
#define DEGRADED_COND    "GuardControllerDegraded"
#define READYZ_PORT      9980
#define NO_OPERAND_GRACE (10 * 60 * USEC_PER_SEC)

static bool node_unschedulable(const KubeObject *node)
{
        return json_get_bool(node->json, "spec.unschedulable", false);
}

/* Where the guard's probe goes: the etcd pod's IP (host network: the node's), else the node's. */
static const char *probe_host(const KubeObject *etcd_pod, const KubeObject *node)
{
        const char *ip = etcd_pod ? json_get_string(etcd_pod->json, "status.podIP") : NULL;
        return ip && *ip ? ip : node_internal_ip(node);
}

/* The guard pod's constant parts; node, image and probe host are set with cJSON. The container
 * only waits; the readiness probe is the whole point. As upstream's: ServiceAccount guard-sa
 * with no token mounted (the guard never talks to the API), its own user namespace, and every
 * taint tolerated (a guard must stay on its master whatever the master is tainted with, or the
 * budget would count it gone). */
static const char guard_skeleton[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"\",\"namespace\":\"" NS_ETCD
        "\",\"labels\":{\"app\":\"guard\"},\"annotations\":{\"target.workload.openshift.io/management\":"
        "\"{\\\"effect\\\": \\\"PreferredDuringScheduling\\\"}\"}},\"spec\":{\"nodeName\":\"\","
        "\"priorityClassName\":\"system-cluster-critical\",\"terminationGracePeriodSeconds\":3,"
        "\"serviceAccountName\":\"" GUARD_SA "\",\"automountServiceAccountToken\":false,\"hostUsers\":false,"
        "\"tolerations\":[{\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"guard\",\"image\":\"\","
        "\"imagePullPolicy\":"
        "\"IfNotPresent\",\"terminationMessagePolicy\":\"FallbackToLogsOnError\",\"command\":["
        "\"/bin/bash\",\"-c\",\"trap 'exit 0' TERM; sleep infinity & wait\"],\"readinessProbe\":{"
        "\"httpGet\":{\"host\":\"\",\"port\":0,\"path\":\"readyz\",\"scheme\":\"HTTPS\"},"
        "\"periodSeconds\":5,\"timeoutSeconds\":5,\"failureThreshold\":3,\"successThreshold\":1},"
        "\"resources\":{\"requests\":{\"cpu\":\"10m\",\"memory\":\"5Mi\"}}}]}}";

static cJSON *guard_pod(const SyncContext *ctx, const char *node, const char *host)
{
        _cleanup_free_ char *name = strdup_printf(GUARD_PREFIX "%s", node);
        _cleanup_(cJSON_Deletep) cJSON *pod = NULL;

        if (!name || json_parse(guard_skeleton, strlen(guard_skeleton), &pod) < 0)
                return NULL;
        if (json_set_path_string(pod, "metadata.name", name) < 0 ||
            json_set_path_string(pod, "spec.nodeName", node) < 0 ||
            json_set_path_string(pod, "spec.containers.0.image", strempty(op_state(ctx)->operator_image)) <
                    0 ||
            json_set_path_string(pod, "spec.containers.0.readinessProbe.httpGet.host", host) < 0 ||
            json_set_path_number(pod, "spec.containers.0.readinessProbe.httpGet.port", READYZ_PORT) < 0)
                return NULL;
        return TAKE_PTR(pod);
}

/* The existing guard still probes the right address with the right image, as guard-sa (a
 * pod's ServiceAccount cannot change: a guard of an older release is made again). */
static bool guard_current(const KubeObject *pod, const char *host, const char *image)
{
        cJSON *c = cJSON_GetArrayItem(json_get_array(pod->json, "spec.containers"), 0);
        return c && streq_ptr(json_get_string(c, "readinessProbe.httpGet.host"), host) &&
               streq_ptr(json_get_string(c, "image"), image) &&
               streq_ptr(json_get_string(pod->json, "spec.serviceAccountName"), GUARD_SA) &&
               !json_get_string(pod->json, "metadata.deletionTimestamp");
}

static cJSON *guard_pdb(size_t masters)
{
        static const char skeleton[] =
                "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":"
                "\"" GUARD_PDB "\",\"namespace\":\"" NS_ETCD "\"},\"spec\":{\"minAvailable\":0,"
                "\"selector\":{\"matchLabels\":{\"app\":\"guard\"}}}}";
        _cleanup_(cJSON_Deletep) cJSON *pdb = NULL;

        if (json_parse(skeleton, strlen(skeleton), &pdb) < 0 ||
            json_set_path_number(pdb, "spec.minAvailable", (double) (masters > 0 ? masters - 1 : 0)) < 0)
                return NULL;
        return TAKE_PTR(pdb);
}

/* How long the node has been Ready (0 when it is not). */
static usec_t ready_for(const SyncContext *ctx, const KubeObject *node)
{
        cJSON *c;
        JSON_ARRAY_FOREACH (c, json_get_array(node->json, "status.conditions")) {
                usec_t since = 0;
                if (!streq_ptr(json_get_string(c, "type"), "Ready"))
                        continue;
                if (!streq_ptr(json_get_string(c, "status"), "True"))
                        return 0;
                if (parse_rfc3339(json_get_string(c, "lastTransitionTime"), &since) < 0 || since > ctx->now)
                        return 1;
                return ctx->now - since;
        }
        return 0;
}

static int sync_guard(const SyncContext *ctx, Plan *p)
{
        _cleanup_free_ const KubeObject **nodes = NULL, **pods = NULL;
        size_t n_nodes = 0, n_pods = 0;
        const char *image = op_state(ctx)->operator_image;
        char missing[256] = "";
        int r;

        if (topology_holds_back(ctx, p))
                return 0;

        if (scaling_is_single_member(scaling_strategy(ctx))) {
                plan_condition(p, DEGRADED_COND, "False", "AsExpected", "%s",
                               "a single-member control plane has no quorum to guard");
                return 0;
        }
        if ((r = op_list_etcd_nodes(ctx, &nodes, &n_nodes)) < 0 ||
            (r = op_list(ctx, W_ETCD_PODS, &pods, &n_pods)) < 0)
                return r;
        if (n_nodes == 0)
                return 0;

        for (size_t k = 0; k < n_nodes; k++) {
                const KubeObject *node = nodes[k], *etcd = etcd_pod_of_node(ctx, node->name);
                _cleanup_free_ char *name = strdup_printf(GUARD_PREFIX "%s", node->name);
                const KubeObject *guard = name ? op_get(ctx, W_ETCD_PODS, NS_ETCD, name) : NULL;
                const char *host = probe_host(etcd, node);
                if (!name)
                        return -ENOMEM;
                if (!etcd) {
                        if (ready_for(ctx, node) > NO_OPERAND_GRACE && !missing[0])
                                (void) snprintf(missing, sizeof missing, "%s", node->name);
                        continue; /* nothing to guard yet */
                }
                if (guard && (!host || !guard_current(guard, host, image))) {
                        if (!json_get_string(guard->json, "metadata.deletionTimestamp"))
                                plan_delete(p, &KUBE_PODS, NS_ETCD, name, kube_object_uid(guard));
                        continue; /* made again once it is gone */
                }
                if (guard || !host || node_unschedulable(node) || !image)
                        continue;
                _cleanup_(cJSON_Deletep) cJSON *pod = guard_pod(ctx, node->name, host);
                if (!pod)
                        return -ENOMEM;
                plan_create(p, &KUBE_PODS, pod);
        }
        /* Guards of nodes that are no longer masters. */
        for (size_t k = 0; k < n_pods; k++) {
                const char *pname = pods[k]->name;
                bool wanted = false;
                if (!startswith(pname, GUARD_PREFIX) ||
                    !streq_ptr(json_get_string(pods[k]->json, "metadata.labels.app"), "guard"))
                        continue;
                for (size_t j = 0; j < n_nodes && !wanted; j++)
                        wanted = streq(pname + strlen(GUARD_PREFIX), nodes[j]->name);
                if (!wanted && !json_get_string(pods[k]->json, "metadata.deletionTimestamp"))
                        plan_delete(p, &KUBE_PODS, NS_ETCD, pname, kube_object_uid(pods[k]));
        }
        _cleanup_(cJSON_Deletep) cJSON *pdb = guard_pdb(n_nodes);
        if (!pdb)
                return -ENOMEM;
        /* Every pod event wakes this controller: write (and read) the budget only when the cache differs. */
        const KubeObject *have = op_get(ctx, W_ETCD_PDBS, NS_ETCD, GUARD_PDB);
        if (!have ||
            !cJSON_Compare(json_get(have->json, "spec.minAvailable"), json_get(pdb, "spec.minAvailable"),
                           true) ||
            !cJSON_Compare(json_get(have->json, "spec.selector"), json_get(pdb, "spec.selector"), true))
                plan_apply(p, &KUBE_PDBS, pdb);
        if (missing[0])
                plan_condition(p, DEGRADED_COND, "True", "Error",
                               "master %s has been Ready for over 10 minutes without an etcd pod to guard",
                               missing);
        else
                plan_condition(p, DEGRADED_COND, "False", "AsExpected", "%s", "");
        return 0;
}

static const WatchSpec *const watches[] = {
        OP_WATCH_ETCD_NODES,         OP_WATCH(W_ETCD_PODS), OP_WATCH(W_ETCD_PDBS),
        OP_WATCH(W_INFRASTRUCTURES), OP_WATCH(W_ETCD_CR),   OP_WATCH(W_KUBE_SYSTEM_CONFIGMAPS),
        OP_WATCH(W_NAMESPACES),
};

const ControllerSpec controller_guard = {
        .name = "GuardController",
        .degraded_condition = DEGRADED_COND,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_guard,
};
