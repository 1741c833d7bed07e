/* The facts of the etcd nodes' Machines (facts.h), where the Machine API runs:
 * whether it works, a Machine being deleted, the operator's pre-drain hook, and which
 * Machine has which member and Node. */
#include "facts.h"

#include "base/json.h"

int op_list_etcd_machines(const SyncContext *ctx, const KubeObject ***ret, size_t *ret_n)
{
        return op_list_with_arbiters(ctx, W_MASTER_MACHINES, W_ARBITER_MACHINES, ret, ret_n);
}

bool machine_api_functional(const SyncContext *ctx)
{
        _cleanup_free_ const KubeObject **machines = NULL;
        size_t n = 0;
        if (op_list_etcd_machines(ctx, &machines, &n) < 0)
                return false;
        for (size_t k = 0; k < n; k++)
                if (streq_ptr(json_get_string(machines[k]->json, "status.phase"), "Running"))
                        return true;
        return false;
}

bool machine_pending_deletion(const KubeObject *machine)
{
        return machine && json_get_string(machine->json, "metadata.deletionTimestamp");
}

bool machine_has_deletion_hook(const KubeObject *machine)
{
        cJSON *h;
        JSON_ARRAY_FOREACH (h,
                            machine ? json_get_array(machine->json, "spec.lifecycleHooks.preDrain") : NULL)
                if (streq_ptr(json_get_string(h, "name"), MACHINE_DELETION_HOOK) &&
                    streq_ptr(json_get_string(h, "owner"), MACHINE_DELETION_HOOK_OWNER))
                        return true;
        return false;
}

/* One of the Machine's InternalIP addresses is among the member's peer URL hosts. */
static bool machine_has_member_ip(const KubeObject *machine, const EtcdMemberState *m)
{
        cJSON *a;
        JSON_ARRAY_FOREACH (a, json_get_array(machine->json, "status.addresses")) {
                IpAddr ip;
                if (streq_ptr(json_get_string(a, "type"), "InternalIP") &&
                    ip_parse(strempty(json_get_string(a, "address")), &ip) >= 0 &&
                    etcd_member_has_ip(m, &ip))
                        return true;
        }
        return false;
}

const KubeObject *machine_of_member(const SyncContext *ctx, const EtcdMemberState *m)
{
        _cleanup_free_ const KubeObject **machines = NULL;
        size_t n = 0;
        if (!m || op_list_etcd_machines(ctx, &machines, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (machine_has_member_ip(machines[k], m))
                        return machines[k];
        return NULL;
}

const EtcdMemberState *member_of_machine(const EtcdViewSnapshot *s, const KubeObject *machine)
{
        for (size_t i = 0; s && machine && i < s->n_members; i++)
                if (machine_has_member_ip(machine, &s->states[i]))
                        return &s->states[i];
        return NULL;
}

const KubeObject *machine_of_node(const SyncContext *ctx, const char *node)
{
        _cleanup_free_ const KubeObject **machines = NULL;
        size_t n = 0;
        if (!node || op_list_etcd_machines(ctx, &machines, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (streq_ptr(json_get_string(machines[k]->json, "status.nodeRef.name"), node))
                        return machines[k];
        return NULL;
}
