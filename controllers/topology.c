/* ControlPlaneTopologyController: infrastructures/cluster status.controlPlaneTopology names a
 * topology this operator does not manage etcd on (facts.h topology_unsupported(): DualReplica,
 * where the cluster's fencing agent runs etcd; External, a hosted control plane): condition
 * ControlPlaneTopologyDegraded True, reason UnsupportedControlPlaneTopology, saying so, while the
 * controllers that change etcd's pods or membership hold back (topology_holds_back()); rather that than
 * acting as on three masters. False (AsExpected) on HighlyAvailable, HighlyAvailableArbiter (the arbiter
 * node runs the third member: facts.h op_list_etcd_nodes), SingleReplica, or none set. */
#include "controllers.h"
#include "facts.h"

#define CONDITION "ControlPlaneTopologyDegraded"

static int sync_topology(const SyncContext *ctx, Plan *p)
{
        const char *why = topology_unsupported(ctx);

        if (!why) {
                plan_condition(p, CONDITION, "False", "AsExpected", "%s", "");
                return 0;
        }
        plan_condition(
                p, CONDITION, "True", "UnsupportedControlPlaneTopology",
                "controlPlaneTopology %s (%s) is not supported by this operator: it makes no revision "
                "rollout, member change, defragmentation, quorum guard or bootstrap teardown here",
                control_plane_topology(ctx), why);
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_INFRASTRUCTURES)};

const ControllerSpec controller_topology = {
        .name = "ControlPlaneTopologyController",
        .degraded_condition = CONDITION, /* its own: True is its finding, as a failed sync's */
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_topology,
};
