/* What every controller shares: the one set of informers they read from
 * (each controller watches a subset, by the indexes below, so two
 * controllers watching the same thing share one watch), the operator's
 * state beyond the Kubernetes API (the etcd view, images, harness
 * settings), and small readers over both. Syncs only read through here. */
#pragma once

#include "base/contract.h"
#include "etcd/view.h"
#include "pki/check-memo.h"
#include "pki/keypool.h"
#include "pki/pki.h"
#include "render/etcdversion.h"
#include "runtime/controller.h"

/* The one table of the watches controllers share (index, resource,
 * namespace or NULL for all, label selector or NULL): the enum and
 * operator_watches[] are both made from it. */
/* The Jobs the operator runs in openshift-etcd, by their "app" label: one
 * watch for all three kinds (a watch each would be three connections'
 * streams and three re-watches whenever the API server ends its watches). */
#define JOB_APP_BACKUP      "cluster-backup-job"     /* BackupController: one EtcdBackup */
#define JOB_APP_CRON_BACKUP "cluster-backup-cronjob" /* the periodic backup CronJob's */
#define JOB_APP_S3_PURGE    "etcd-backup-s3-purge"   /* PeriodicBackupController: a bucket's purge */
#define ETCD_JOBS_SELECTOR  "app in (" JOB_APP_BACKUP "," JOB_APP_CRON_BACKUP "," JOB_APP_S3_PURGE ")"
/* The installer's other signal that bootstrap is complete (its report-progress.sh
 * created this Event before the kube-system/bootstrap ConfigMap). Watched by this
 * name only: every other kube-system Event is nobody's business here, and any
 * node may create Events there (review M7). */
#define BOOTSTRAP_FINISHED_EVENT "bootstrap-finished"

/* clang-format off */
#define OPERATOR_WATCHES(X)                                                                        \
        X(W_MASTER_NODES,           KUBE_NODES,            NULL,           "node-role.kubernetes.io/master", NULL) \
        X(W_ARBITER_NODES,          KUBE_NODES,            NULL,           "node-role.kubernetes.io/arbiter", NULL) /* op_list_etcd_nodes */ \
        X(W_ETCD_CR,                KUBE_ETCDS,            NULL,           NULL,                  NULL) /* the singleton "cluster" */ \
        X(W_ETCD_CONFIGMAPS,        KUBE_CONFIGMAPS,       NS_ETCD,        NULL,                  NULL)                   \
        X(W_ETCD_SECRETS,           KUBE_SECRETS,          NS_ETCD,        NULL,                  NULL)                   \
        X(W_ETCD_PODS,              KUBE_PODS,             NS_ETCD,        NULL,                  NULL)                   \
        X(W_ETCD_ENDPOINTS,         KUBE_ENDPOINTS,        NS_ETCD,        NULL,                  NULL) /* host-etcd-2 */ \
        X(W_ETCD_PDBS,              KUBE_PDBS,             NS_ETCD,        NULL,                  NULL) /* etcd-guard-pdb */ \
        X(W_KUBE_SYSTEM_CONFIGMAPS, KUBE_CONFIGMAPS,       NS_KUBE_SYSTEM, NULL,                  NULL)                   \
        X(W_KUBE_SYSTEM_EVENTS,     KUBE_EVENTS,           NS_KUBE_SYSTEM, NULL,                  BOOTSTRAP_FINISHED_EVENT) \
        X(W_CONFIG_CONFIGMAPS,      KUBE_CONFIGMAPS,       NS_CONFIG,      NULL,                  NULL)                   \
        X(W_CONFIG_SECRETS,         KUBE_SECRETS,          NS_CONFIG,      NULL,                  SECRET_ETCD_CLIENT) /* our copy alone: not the pull secret */ \
        X(W_OPERATOR_CONFIGMAPS,    KUBE_CONFIGMAPS,       NS_OPERATOR,    NULL,                  NULL)                   \
        X(W_OPERATOR_SECRETS,       KUBE_SECRETS,          NS_OPERATOR,    NULL,                  NULL)                   \
        X(W_INFRASTRUCTURES,        KUBE_INFRASTRUCTURES,  NULL,           NULL,                  NULL)                   \
        X(W_NETWORKS,               KUBE_NETWORKS,         NULL,           NULL,                  NULL)                   \
        X(W_APISERVERS,             KUBE_APISERVERS,       NULL,           NULL,                  NULL) /* TLS profile; may not be served */ \
        X(W_KUBEAPISERVERS,         KUBE_KUBEAPISERVERS,   NULL,           NULL,                  NULL)                   \
        X(W_CLUSTEROPERATORS,       KUBE_CLUSTEROPERATORS, NULL,           NULL,                  "etcd")                   \
        X(W_KAS_CONFIGMAPS,         KUBE_CONFIGMAPS,       NS_KAS,         NULL,                  NULL) /* config-<N> */  \
        X(W_NAMESPACES,             KUBE_NAMESPACES,       NULL,           NULL,                  NS_ETCD) /* delayed-HA annotation */ \
        X(W_ETCD_BACKUPS,           KUBE_ETCDBACKUPS,      NULL,           NULL,                  NULL) /* may not be served */ \
        X(W_ETCD_JOBS,              KUBE_JOBS,             NS_ETCD,        ETCD_JOBS_SELECTOR,    NULL) /* op_get_job */ \
        X(W_ETCD_PVCS,              KUBE_PVCS,             NS_ETCD,        NULL,                  NULL)                   \
        X(W_BACKUPS,                KUBE_BACKUPS,          NULL,           NULL,                  NULL) /* may not be served */ \
        X(W_BACKUP_CRONJOBS,        KUBE_CRONJOBS,         NS_ETCD,        "app=" JOB_APP_CRON_BACKUP, NULL) \
        X(W_MASTER_MACHINES,        KUBE_MACHINES,         NS_MACHINE_API, "machine.openshift.io/cluster-api-machine-role=master", NULL) /* may not be served */ \
        X(W_ARBITER_MACHINES,       KUBE_MACHINES,         NS_MACHINE_API, "machine.openshift.io/cluster-api-machine-role=arbiter", NULL) /* op_list_etcd_machines */
/* clang-format on */

/* clang-format off */
typedef enum OperatorWatch {
#define OP_WATCH_ENUM(w, res, ns, sel, name) w,
        OPERATOR_WATCHES(OP_WATCH_ENUM)
#undef OP_WATCH_ENUM
        _W_MAX,
} OperatorWatch;
/* clang-format on */

/* What the informer cache keeps of an object (the factory's transform):
 * every object loses metadata.managedFields, and a Pod loses what no
 * controller reads: spec.volumes and, in every container and init
 * container, command, args, env, envFrom, volumeMounts, ports, resources,
 * lifecycle, securityContext and the liveness and startup probes. Kept: the
 * metadata, spec.nodeName and the rest of the spec, each container's name,
 * image and readinessProbe (the guard controller's check), and the
 * status but for hostIPs, podIPs, qosClass, startTime, the conditions'
 * lastProbeTime and each container status's containerID, image, imageID and
 * started. No controller writes a Pod it read (pods are created from their
 * own templates and deleted), and the API server keeps an object's
 * managedFields when a write omits them. A revision's copies in
 * openshift-etcd (etcd-pod-<N>, etcd-all-certs-<N>, ...) keep their long
 * values as digests except those a controller reads (revision_copy_trim in
 * facts.h); no controller writes a copy it read either. */
void operator_cache_transform(const KubeResource *res, cJSON *obj, cJSON *dropped);

/* An entry of a controller's `static const WatchSpec *const watches[]`. */
#define OP_WATCH(w) (&operator_watches[w])

extern const WatchSpec operator_watches[_W_MAX];

/* The operator's state beyond the Kubernetes API, handed to every sync as
 * ctx->state (the etcd view's snapshot comes as ctx->etcd). */
typedef struct OperatorState {
        EtcdView *view;
        const char *etcd_image;
        const char *operator_image;
        /* The release's versions (env OPERATOR_IMAGE_VERSION and OPERAND_IMAGE_VERSION, as
         * upstream's Deployment sets them): NULL = CEO_VERSION, and etcd's own version. */
        const char *operator_version;
        const char *operand_version;
        bool listen_on_node_ip;   /* the harness default; etcds/cluster overrides can also set it */
        PkiKeyType cert_key_type; /* the cert signer's keys: RSA 2048 (0) by contract; tests use ECDSA */
        KeyPool *keys;            /* keys of cert_key_type made off the loop; NULL: made in the sync */
        PkiCheckMemo *check_memo; /* the cert signer's remembered verdicts; NULL: judge every time */
        EtcdMaintLog *maint;      /* what the runtime did to etcd beyond membership (NULL: nothing) */
        const char *machine;      /* uname's machine for ETCD_UNSUPPORTED_ARCH (NULL: this host's) */
        EtcdMinor etcd_minor;     /* what etcd_image carries (ETCD_IMAGE_VERSION); 0: ETCD_MINOR_DEFAULT */
} OperatorState;

const OperatorState *op_state(const SyncContext *ctx);
/* A string of a ConfigMap's or Secret's .data (its keys have dots, so no json_get() paths);
 * NULL when `o` is NULL or the key is absent or no string. */
const char *object_data_string(const KubeObject *o, const char *key);
/* The etcd minor release the etcd image carries (OperatorState.etcd_minor or the default). */
EtcdMinor op_etcd_minor(const SyncContext *ctx);
/* The latest etcd snapshot, NULL until the first poll finished. While it sees a split
 * brain, a controller without reports_split_brain gets one that lists nothing, its error
 * ETCD_ERR_SPLIT_BRAIN: what it does when the member list failed, it does then. */
const EtcdViewSnapshot *op_etcd(const SyncContext *ctx);
/* Why a sync has no member list to act on, for its "waiting" message: the split brain
 * when that is why (op_etcd), else "the etcd member list is unknown". */
const char *op_etcd_unknown_why(const EtcdViewSnapshot *s);
Informer *op_informer(const SyncContext *ctx, OperatorWatch w);
const KubeObject *op_get(const SyncContext *ctx, OperatorWatch w, const char *ns, const char *name);
/* Borrowed objects sorted by key; free the array with free(). */
int op_list(const SyncContext *ctx, OperatorWatch w, const KubeObject ***ret, size_t *ret_n);
/* The Job `name` in openshift-etcd if its "app" label is `app` (W_ETCD_JOBS holds all three kinds). */
const KubeObject *op_get_job(const SyncContext *ctx, const char *app, const char *name);
/* The Jobs of one "app" label, in the cache's order; *ret is freed by the caller. */
int op_list_jobs(const SyncContext *ctx, const char *app, const KubeObject ***ret, size_t *ret_n);
/* The etcds/cluster object, NULL if it does not exist (yet). */
const KubeObject *op_etcd_cr(const SyncContext *ctx);
/* unsupportedConfigOverrides.listenOnNodeIP or the harness default. */
bool op_listen_on_node_ip(const SyncContext *ctx);
