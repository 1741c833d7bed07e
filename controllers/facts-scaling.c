/* The facts of the control plane's size (facts.h): the scaling strategy the cluster
 * was installed with (upstream's ceohelpers.GetBootstrapScalingStrategy), what it
 * asks of the bootstrap teardown, and the masters the install-config wants. */
#include "facts.h"

#include "base/json.h"
#include "base/yaml.h"

bool etcd_unsafe_non_ha(const SyncContext *ctx)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        cJSON *v = cr ? json_get(cr->json, "spec.unsupportedConfigOverrides." UNSAFE_NON_HA_OVERRIDE) : NULL;
        return cJSON_IsTrue(v) || streq_ptr(json_string(v), "true");
}

static bool bootstrap_in_place(const SyncContext *ctx)
{
        const KubeObject *cm = op_get(ctx, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "cluster-config-v1");
        const char *text = cm ? json_get_string(cm->json, "data.install-config") : NULL;
        _cleanup_(cJSON_Deletep) cJSON *ic = NULL;

        /* Teardown and revisions ask on every sync: parse the install-config only when it can say yes. */
        if (!text || !strstr(text, "bootstrapInPlace") || yaml_parse(text, strlen(text), &ic, NULL) < 0)
                return false;
        return json_get_object(ic, "bootstrapInPlace") != NULL;
}

static bool delayed_bootstrap(const SyncContext *ctx)
{
        const KubeObject *ns = op_get(ctx, W_NAMESPACES, NULL, NS_ETCD);
        cJSON *ann = ns ? json_get_object(ns->json, "metadata.annotations") : NULL;
        return ann && (cJSON_GetObjectItemCaseSensitive(ann, DELAYED_BOOTSTRAP_ANNOTATION) ||
                       cJSON_GetObjectItemCaseSensitive(ann, DELAYED_HA_BOOTSTRAP_ANNOTATION));
}

const char *control_plane_topology(const SyncContext *ctx)
{
        const KubeObject *infra = op_get(ctx, W_INFRASTRUCTURES, NULL, "cluster");
        return infra ? json_get_string(infra->json, "status.controlPlaneTopology") : NULL;
}

const char *topology_unsupported(const SyncContext *ctx)
{
        static const struct {
                const char *topology, *why;
        } unsupported[] = {
                {"DualReplica", "two masters whose etcd the cluster's fencing agent runs"},
                {"External", "a control plane hosted outside the cluster"},
        };
        const char *t = control_plane_topology(ctx);

        for (size_t i = 0; t && i < ELEMENTSOF(unsupported); i++)
                if (streq(t, unsupported[i].topology))
                        return unsupported[i].why;
        return NULL;
}

bool topology_holds_back(const SyncContext *ctx, Plan *p)
{
        const char *why = topology_unsupported(ctx);
        if (!why)
                return false;
        plan_waiting(p, "UnsupportedControlPlaneTopology",
                     "nothing done: controlPlaneTopology is %s (%s), which this operator does not manage",
                     control_plane_topology(ctx), why);
        return true;
}

ScalingStrategy scaling_strategy(const SyncContext *ctx)
{
        const char *topology = control_plane_topology(ctx);

        if (etcd_unsafe_non_ha(ctx))
                return SCALING_UNSAFE;
        if (bootstrap_in_place(ctx))
                return SCALING_BOOTSTRAP_IN_PLACE;
        if (streq_ptr(topology, "SingleReplica"))
                return SCALING_UNSAFE;
        if (delayed_bootstrap(ctx))
                return SCALING_DELAYED_HA;
        return SCALING_HA;
}

static const char *const strategy_names[_SCALING_STRATEGY_MAX] = {
        [SCALING_HA] = "HAScalingStrategy",
        [SCALING_DELAYED_HA] = "DelayedHAScalingStrategy",
        [SCALING_UNSAFE] = "UnsafeScalingStrategy",
        [SCALING_BOOTSTRAP_IN_PLACE] = "BootstrapInPlaceStrategy",
};

const char *scaling_strategy_to_string(ScalingStrategy s)
{
        return s >= 0 && s < _SCALING_STRATEGY_MAX ? strategy_names[s] : NULL;
}

size_t scaling_members_before_teardown(ScalingStrategy s)
{
        switch (s) {
        case SCALING_HA:
                return 4;
        case SCALING_DELAYED_HA:
                return 3;
        default:
                return 2;
        }
}

bool scaling_is_single_member(ScalingStrategy s)
{
        return s == SCALING_UNSAFE || s == SCALING_BOOTSTRAP_IN_PLACE;
}

bool single_node_by_design(const SyncContext *ctx)
{
        return streq_ptr(control_plane_topology(ctx), "SingleReplica") || bootstrap_in_place(ctx);
}

size_t desired_control_plane_replicas(const SyncContext *ctx)
{
        const KubeObject *cm = op_get(ctx, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "cluster-config-v1");
        const char *text = cm ? json_get_string(cm->json, "data.install-config") : NULL;
        _cleanup_(cJSON_Deletep) cJSON *ic = NULL;
        int64_t replicas = 0;

        int64_t arbiters = 0;

        if (!text || yaml_parse(text, strlen(text), &ic, NULL) < 0 ||
            json_get_int64(ic, "controlPlane.replicas", &replicas) < 0 || replicas < 1 || replicas > 15)
                return 0;
        /* Two masters and an arbiter: the arbiter's member is one of the voters. */
        if (topology_has_arbiter(ctx) &&
            (json_get_int64(ic, "arbiter.replicas", &arbiters) < 0 || arbiters < 0 || arbiters > 15))
                return 0;
        return (size_t) (replicas + arbiters);
}
