/* What every controller shares: the one set of informers they read from
 * (each controller watches a subset, by the indexes below, so two
 * controllers watching the same thing share one watch), the operator's
 * state beyond the Kubernetes API (the etcd view, images, harness
 * settings), and small readers over both. Syncs only read through here. */
#pragma once

#include "etcd/view.h"
#include "pki/check-memo.h"
#include "pki/keypool.h"
#include "pki/pki.h"
#include "runtime/controller.h"

#define NS_ETCD           "openshift-etcd"
#define NS_OPERATOR       "openshift-etcd-operator"
#define NS_CONFIG         "openshift-config"
#define NS_CONFIG_MANAGED "openshift-config-managed"
#define NS_KUBE_SYSTEM    "kube-system"
#define NS_KAS            "openshift-kube-apiserver"

typedef enum OperatorWatch {
        W_MASTER_NODES,    /* nodes with node-role.kubernetes.io/master */
        W_ETCD_CR,         /* etcds.operator.openshift.io (the singleton "cluster") */
        W_ETCD_CONFIGMAPS, /* configmaps in openshift-etcd */
        W_ETCD_SECRETS,
        W_ETCD_PODS,
        W_ETCD_ENDPOINTS, /* endpoints in openshift-etcd (host-etcd-2) */
        W_KUBE_SYSTEM_CONFIGMAPS,
        W_KUBE_SYSTEM_EVENTS,
        W_CONFIG_CONFIGMAPS, /* openshift-config */
        W_CONFIG_SECRETS,
        W_OPERATOR_CONFIGMAPS, /* openshift-etcd-operator */
        W_OPERATOR_SECRETS,
        W_INFRASTRUCTURES,
        W_NETWORKS,
        W_KUBEAPISERVERS,
        W_CLUSTEROPERATORS,
        W_KAS_CONFIGMAPS, /* configmaps in openshift-kube-apiserver (config-<N>) */
        W_NAMESPACES,     /* the openshift-etcd namespace's annotations (delayed-HA bootstrap) */
        _W_MAX,
} OperatorWatch;

/* Initializers for a controller's `static const WatchSpec watches[]`. */
/* clang-format off */
#define WATCH_MASTER_NODES           {&KUBE_NODES, NULL, "node-role.kubernetes.io/master"}
#define WATCH_ETCD_CR                {&KUBE_ETCDS, NULL, NULL}
#define WATCH_ETCD_CONFIGMAPS        {&KUBE_CONFIGMAPS, NS_ETCD, NULL}
#define WATCH_ETCD_SECRETS           {&KUBE_SECRETS, NS_ETCD, NULL}
#define WATCH_ETCD_PODS              {&KUBE_PODS, NS_ETCD, NULL}
#define WATCH_ETCD_ENDPOINTS         {&KUBE_ENDPOINTS, NS_ETCD, NULL}
#define WATCH_KUBE_SYSTEM_CONFIGMAPS {&KUBE_CONFIGMAPS, NS_KUBE_SYSTEM, NULL}
#define WATCH_KUBE_SYSTEM_EVENTS     {&KUBE_EVENTS, NS_KUBE_SYSTEM, NULL}
#define WATCH_CONFIG_CONFIGMAPS      {&KUBE_CONFIGMAPS, NS_CONFIG, NULL}
#define WATCH_CONFIG_SECRETS         {&KUBE_SECRETS, NS_CONFIG, NULL}
#define WATCH_OPERATOR_CONFIGMAPS    {&KUBE_CONFIGMAPS, NS_OPERATOR, NULL}
#define WATCH_OPERATOR_SECRETS       {&KUBE_SECRETS, NS_OPERATOR, NULL}
#define WATCH_INFRASTRUCTURES        {&KUBE_INFRASTRUCTURES, NULL, NULL}
#define WATCH_NETWORKS               {&KUBE_NETWORKS, NULL, NULL}
#define WATCH_KUBEAPISERVERS         {&KUBE_KUBEAPISERVERS, NULL, NULL}
#define WATCH_CLUSTEROPERATORS       {&KUBE_CLUSTEROPERATORS, NULL, NULL}
#define WATCH_KAS_CONFIGMAPS         {&KUBE_CONFIGMAPS, NS_KAS, NULL}
#define WATCH_NAMESPACES             {&KUBE_NAMESPACES, NULL, NULL}
/* clang-format on */

extern const WatchSpec operator_watches[_W_MAX];

/* The operator's state beyond the Kubernetes API, handed to every sync as
 * ctx->state (the etcd view's snapshot comes as ctx->etcd). */
typedef struct OperatorState {
        EtcdView *view;
        const char *etcd_image;
        const char *operator_image;
        bool listen_on_node_ip;   /* the harness default; etcds/cluster overrides can also set it */
        PkiKeyType cert_key_type; /* the cert signer's keys: RSA 2048 (0) by contract; tests use ECDSA */
        KeyPool *keys;            /* keys of cert_key_type made off the loop; NULL: made in the sync */
        PkiCheckMemo *check_memo; /* the cert signer's remembered verdicts; NULL: judge every time */
} OperatorState;

const OperatorState *op_state(const SyncContext *ctx);
/* The latest etcd snapshot, NULL until the first poll finished. */
const EtcdViewSnapshot *op_etcd(const SyncContext *ctx);
Informer *op_informer(const SyncContext *ctx, OperatorWatch w);
const KubeObject *op_get(const SyncContext *ctx, OperatorWatch w, const char *ns, const char *name);
/* Borrowed objects sorted by key; free the array with free(). */
int op_list(const SyncContext *ctx, OperatorWatch w, const KubeObject ***ret, size_t *ret_n);
/* The etcds/cluster object, NULL if it does not exist (yet). */
const KubeObject *op_etcd_cr(const SyncContext *ctx);
/* unsupportedConfigOverrides.listenOnNodeIP or the harness default. */
bool op_listen_on_node_ip(const SyncContext *ctx);

/* Builds the WatchSpec array a ControllerSpec needs from a list of indexes. */
#define OP_WATCHES(...) ((const OperatorWatch[]){__VA_ARGS__})
