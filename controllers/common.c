/* Shared informer set and readers for controllers. */
#include "common.h"
#include "base/json.h"

const WatchSpec operator_watches[_W_MAX] = {
        [W_MASTER_NODES] = WATCH_MASTER_NODES,
        [W_ETCD_CR] = WATCH_ETCD_CR,
        [W_ETCD_CONFIGMAPS] = WATCH_ETCD_CONFIGMAPS,
        [W_ETCD_SECRETS] = WATCH_ETCD_SECRETS,
        [W_ETCD_PODS] = WATCH_ETCD_PODS,
        [W_ETCD_ENDPOINTS] = WATCH_ETCD_ENDPOINTS,
        [W_KUBE_SYSTEM_CONFIGMAPS] = WATCH_KUBE_SYSTEM_CONFIGMAPS,
        [W_KUBE_SYSTEM_EVENTS] = WATCH_KUBE_SYSTEM_EVENTS,
        [W_CONFIG_CONFIGMAPS] = WATCH_CONFIG_CONFIGMAPS,
        [W_CONFIG_SECRETS] = WATCH_CONFIG_SECRETS,
        [W_OPERATOR_CONFIGMAPS] = WATCH_OPERATOR_CONFIGMAPS,
        [W_OPERATOR_SECRETS] = WATCH_OPERATOR_SECRETS,
        [W_INFRASTRUCTURES] = WATCH_INFRASTRUCTURES,
        [W_NETWORKS] = WATCH_NETWORKS,
        [W_KUBEAPISERVERS] = WATCH_KUBEAPISERVERS,
        [W_CLUSTEROPERATORS] = WATCH_CLUSTEROPERATORS,
        [W_KAS_CONFIGMAPS] = WATCH_KAS_CONFIGMAPS,
        [W_NAMESPACES] = WATCH_NAMESPACES,
};

const OperatorState *op_state(const SyncContext *ctx)
{
        return ctx->userdata;
}

const EtcdViewSnapshot *op_etcd(const SyncContext *ctx)
{
        const OperatorState *s = op_state(ctx);
        if (!s)
                return NULL;
        if (s->snapshot)
                return s->snapshot;
        return s->view ? etcd_view_get(s->view) : NULL;
}

Informer *op_informer(const SyncContext *ctx, OperatorWatch w)
{
        const WatchSpec *ws = &operator_watches[w];
        return informer_factory_get(ctx->informers, ws->res, ws->namespace, ws->label_selector);
}

const KubeObject *op_get(const SyncContext *ctx, OperatorWatch w, const char *ns, const char *name)
{
        return informer_get(op_informer(ctx, w), ns, name);
}

int op_list(const SyncContext *ctx, OperatorWatch w, const KubeObject ***ret, size_t *ret_n)
{
        Informer *inf = op_informer(ctx, w);
        if (!inf)
                return -ENOMEM;
        return informer_list(inf, ret, ret_n);
}

const KubeObject *op_etcd_cr(const SyncContext *ctx)
{
        return op_get(ctx, W_ETCD_CR, NULL, "cluster");
}

bool op_listen_on_node_ip(const SyncContext *ctx)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        cJSON *v = cr ? json_get(cr->json, "spec.unsupportedConfigOverrides.listenOnNodeIP") : NULL;
        if (cJSON_IsBool(v))
                return cJSON_IsTrue(v);
        const OperatorState *s = op_state(ctx);
        return s && s->listen_on_node_ip;
}
