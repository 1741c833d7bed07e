/* The facts of the bootstrap (facts.h): the bootstrap host's address and member,
 * whether the installer has reported the bootstrap complete, and the phase. */
#include "facts.h"

#include "base/json.h"

const char *bootstrap_ip_of(const KubeObject *o)
{
        return kube_object_annotation(o, BOOTSTRAP_IP_ANNOTATION);
}

const char *bootstrap_ip(const SyncContext *ctx)
{
        return bootstrap_ip_of(op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_ENDPOINTS));
}

bool is_bootstrap_member(const SyncContext *ctx, const EtcdMemberState *m, const char *ip)
{
        IpAddr a;
        if (streq_ptr(m->name, BOOTSTRAP_MEMBER_NAME))
                return true;
        if (m->name && op_get_etcd_node(ctx, m->name))
                return false;
        return ip && ip_parse(ip, &a) >= 0 && etcd_member_has_ip(m, &a);
}

const EtcdMemberState *bootstrap_member(const SyncContext *ctx, const EtcdViewSnapshot *s)
{
        const char *ip = bootstrap_ip(ctx);
        for (size_t i = 0; s && i < s->n_members; i++)
                if (is_bootstrap_member(ctx, &s->states[i], ip))
                        return &s->states[i];
        return NULL;
}

bool bootstrap_reported_complete(const SyncContext *ctx)
{
        const KubeObject *cm = op_get(ctx, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "bootstrap");

        if (cm && streq_ptr(json_get_string(cm->json, "data.status"), "complete"))
                return true;
        /* The seed's other signal: the Event the installer names bootstrap-finished, and only
         * that one (it sets no reason; an Event of another name is no signal). */
        return op_get(ctx, W_KUBE_SYSTEM_EVENTS, NS_KUBE_SYSTEM, BOOTSTRAP_FINISHED_EVENT) != NULL;
}

BootstrapPhase bootstrap_phase(const SyncContext *ctx, const EtcdViewSnapshot *s)
{
        if (!bootstrap_reported_complete(ctx))
                return BOOTSTRAP_IN_PROGRESS;
        if (!s || s->error < 0 || !s->members || bootstrap_member(ctx, s))
                return BOOTSTRAP_REPORTED;
        return BOOTSTRAP_OVER;
}

static const char *const phase_names[_BOOTSTRAP_PHASE_MAX] = {
        [BOOTSTRAP_IN_PROGRESS] = "in progress",
        [BOOTSTRAP_REPORTED] = "reported complete, bootstrap member not yet removed",
        [BOOTSTRAP_OVER] = "over",
};

const char *bootstrap_phase_to_string(BootstrapPhase p)
{
        return p >= 0 && p < _BOOTSTRAP_PHASE_MAX ? phase_names[p] : NULL;
}
