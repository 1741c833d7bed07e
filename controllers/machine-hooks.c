/* MachineDeletionHooksController: where the Machine API runs, every etcd node's
 * Machine carries the pre-drain lifecycle hook {EtcdQuorumOperator,
 * clusteroperator/etcd}, so a deleted master (or, on HighlyAvailableArbiter, a
 * deleted arbiter: its Machine has role arbiter) is not drained (and its etcd
 * not stopped) while it is still a member. A hook with our name but another
 * owner is repaired. On a Machine being deleted the hook is lifted once no
 * member (learner or voter, started or not) has one of the Machine's
 * InternalIPs in the etcd view: the ClusterMemberRemovalController removed
 * it, and the ClusterMemberController adds no member for a leaving master.
 * With no member list the hook stays.
 *
 * Beyond the hook, as upstream does since its multi-machine deadlock: the
 * guard pod of a cordoned master whose Machine is being deleted and no
 * longer holds our hook is deleted outright. Its member is gone, so the
 * guard is not ready, and with two masters leaving at once the guard budget
 * can fall below minAvailable: an eviction of it would then wait forever and
 * the drain with it. */
#include "base/json.h"
#include "controllers.h"
#include "facts.h"

/* The Machine's JSON with the preDrain hooks rewritten: every hook named ours
 * dropped, then ours appended when `add`. */
static cJSON *machine_with_hook(const KubeObject *machine, bool add)
{
        _cleanup_(cJSON_Deletep) cJSON *m = cJSON_Duplicate(machine->json, true);
        cJSON *spec, *hooks, *pre, *h;

        if (!m)
                return NULL;
        spec = json_get_object(m, "spec");
        if (!spec && !(spec = cJSON_AddObjectToObject(m, "spec")))
                return NULL;
        hooks = json_get_object(spec, "lifecycleHooks");
        if (!hooks && !(hooks = cJSON_AddObjectToObject(spec, "lifecycleHooks")))
                return NULL;
        pre = json_get_array(hooks, "preDrain");
        if (!pre && !(pre = cJSON_AddArrayToObject(hooks, "preDrain")))
                return NULL;
        for (int i = cJSON_GetArraySize(pre) - 1; i >= 0; i--)
                if (streq_ptr(json_get_string(cJSON_GetArrayItem(pre, i), "name"), MACHINE_DELETION_HOOK))
                        cJSON_DeleteItemFromArray(pre, i);
        if (add) {
                if (!(h = cJSON_CreateObject()) || !cJSON_AddItemToArray(pre, h) ||
                    !cJSON_AddStringToObject(h, "name", MACHINE_DELETION_HOOK) ||
                    !cJSON_AddStringToObject(h, "owner", MACHINE_DELETION_HOOK_OWNER))
                        return NULL;
        } else if (cJSON_GetArraySize(pre) == 0)
                cJSON_DeleteItemFromObject(hooks, "preDrain");
        return TAKE_PTR(m);
}

static bool has_hook_named_ours(const KubeObject *machine)
{
        cJSON *h;
        JSON_ARRAY_FOREACH (h, json_get_array(machine->json, "spec.lifecycleHooks.preDrain"))
                if (streq_ptr(json_get_string(h, "name"), MACHINE_DELETION_HOOK))
                        return true;
        return false;
}

static int sync_machine_hooks(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        bool view_ok = s && s->error >= 0 && s->members;
        _cleanup_free_ const KubeObject **machines = NULL;
        size_t n = 0;
        int r;

        if (topology_holds_back(ctx, p))
                return 0;

        if (!machine_api_functional(ctx))
                return 0; /* no Machine API (or none Running yet): nothing drains on its own */
        if ((r = op_list_etcd_machines(ctx, &machines, &n)) < 0)
                return r;
        for (size_t k = 0; k < n; k++) {
                const KubeObject *machine = machines[k];
                _cleanup_(cJSON_Deletep) cJSON *update = NULL;

                if (!machine_pending_deletion(machine)) {
                        if (machine_has_deletion_hook(machine))
                                continue;
                        if (!(update = machine_with_hook(machine, true)))
                                return -ENOMEM;
                        plan_update(p, &KUBE_MACHINES, update);
                        continue;
                }
                if (has_hook_named_ours(machine)) {
                        const EtcdMemberState *m = view_ok ? member_of_machine(s, machine) : NULL;
                        if (!view_ok) {
                                plan_waiting(p, "MachineDeletionHookKept", "hook on Machine %s kept: %s",
                                             machine->name, op_etcd_unknown_why(s));
                                plan_requeue_after(p, 5 * USEC_PER_SEC);
                                continue;
                        }
                        if (m) {
                                char hex[17];
                                plan_waiting(p, "MachineDeletionHookKept",
                                             "hook on Machine %s kept: member %s is still in the cluster",
                                             machine->name, etcd_member_label(m, hex));
                                continue;
                        }
                        if (!(update = machine_with_hook(machine, false)))
                                return -ENOMEM;
                        plan_update(p, &KUBE_MACHINES, update);
                        plan_event(p, false, "MachineDeletionHookRemoved",
                                   "lifted the %s pre-drain hook of Machine %s: its etcd member is gone",
                                   MACHINE_DELETION_HOOK, machine->name);
                        continue;
                }
                /* Deleting, hook lifted: the guard of its cordoned node goes without an eviction. */
                const char *node_name = json_get_string(machine->json, "status.nodeRef.name");
                const KubeObject *node = node_name ? op_get_etcd_node(ctx, node_name) : NULL;
                _cleanup_free_ char *guard = node_name ? strdup_printf("etcd-guard-%s", node_name) : NULL;
                const KubeObject *pod = guard ? op_get(ctx, W_ETCD_PODS, NS_ETCD, guard) : NULL;
                if (node && json_get_bool(node->json, "spec.unschedulable", false) && pod &&
                    !json_get_string(pod->json, "metadata.deletionTimestamp"))
                        plan_delete(p, &KUBE_PODS, NS_ETCD, guard, kube_object_uid(pod));
        }
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_INFRASTRUCTURES), OP_WATCH_ETCD_MACHINES,
                                           OP_WATCH_ETCD_NODES, OP_WATCH(W_ETCD_PODS)};

const ControllerSpec controller_machine_hooks = {
        .name = "MachineDeletionHooksController",
        .degraded_condition = "MachineDeletionHooksControllerDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_machine_hooks,
};
