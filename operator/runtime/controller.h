/* The controller runtime: each controller is a spec (name, informers it
 * watches, resync period, sync function); the runtime gives it a work
 * queue, calls sync with the caches, carries out the returned plan one
 * intent at a time, and records the spec's Degraded condition on the operator's status
 * object from the outcome. A key stays "processing" until its whole plan is
 * done; failures requeue it with per-key backoff. */
#pragma once

#include "etcd/client.h"
#include "etcd/maintlog.h"
#include "kube/informer.h"
#include "plan.h"
#include "runtime/events.h"

struct ControllerSpec;
struct EtcdViewSnapshot;
struct OperatorState;

typedef struct SyncContext {
        const struct ControllerSpec *spec; /* whose sync this is: its watches bound what it may read */
        const char *key;
        usec_t now; /* CLOCK_REALTIME; tests inject it */
        InformerFactory *informers;
        /* The etcd view's latest snapshot (NULL before the first round); read
         * it through op_etcd(), which checks the spec declared it. */
        const struct EtcdViewSnapshot *etcd;
        const struct OperatorState *state; /* the operator's state beyond the API (controllers/common.h) */
} SyncContext;

/* Returns < 0 when it could not decide (the controller is Degraded and retried). */
typedef int (*SyncFunc)(const SyncContext *ctx, Plan *plan);

typedef struct WatchSpec {
        const KubeResource *res;
        const char *namespace; /* NULL = all */
        const char *label_selector;
        const char *name; /* non-NULL: only the object of this name (informer_set_name) */
} WatchSpec;

typedef struct ControllerSpec {
        const char *name; /* "ClusterMemberController": logs, metrics, events */
        /* The condition the runtime sets from each sync's outcome. Part of the
         * contract other components read (test/data/contract.json), so it is spelled
         * out, never derived from the name: "BootstrapTeardownDegraded". */
        const char *degraded_condition;
        const WatchSpec *const *watches; /* each entry shared with other controllers' specs */
        size_t n_watches;
        usec_t resync; /* 0 = only on events */
        /* The sync reads the etcd view: it is woken when what the view says
         * changes (runtime_kick_etcd_readers), and only then. */
        bool reads_etcd_view;
        /* While the view sees a split brain (members report different cluster IDs), a
         * sync is handed a snapshot that says so and lists nothing (error
         * ETCD_ERR_SPLIT_BRAIN), so that it acts on neither side's member list; a
         * controller that only reports what etcd is sees the view as it is. */
        bool reports_split_brain;
        /* Syncs even while the status object's spec.managementState is Unmanaged or
         * Removed (the ClusterOperator status, which reports that state); every
         * other controller stops acting then, as library-go's do. */
        bool runs_unmanaged;
        SyncFunc sync;
} ControllerSpec;

typedef struct Runtime Runtime;

typedef struct RuntimeConfig {
        const KubeResource *status_res;    /* &KUBE_ETCDS */
        const char *status_name;           /* "cluster" */
        const struct OperatorState *state; /* handed to every sync as ctx->state */
        /* The etcd snapshot handed to every sync as ctx->etcd (NULL: none). */
        const struct EtcdViewSnapshot *(*etcd_snapshot)(void *userdata);
        void *userdata; /* for the callbacks here */
        /* Membership intents go through this client (NULL: they fail with -ENOTCONN);
         * after each change the runtime calls on_etcd_change (refresh the view). */
        EtcdClient *etcd;
        void (*on_etcd_change)(void *userdata);
        /* Maintenance intents (defragment, compact, disarm, move leader) are recorded here
         * (NULL: not recorded); the controllers read the same log through their state. */
        EtcdMaintLog *maint_log;
        /* Whether the caches controllers read show etcd as of `since` (CLOCK_MONOTONIC).
         * After a membership change, the next one waits until they do, so no
         * controller acts twice on a member list from before its own change. */
        bool (*etcd_view_fresh)(void *userdata, usec_t since);
} RuntimeConfig;

Runtime *runtime_new(KubeClient *c, InformerFactory *f, EventRecorder *rec, const RuntimeConfig *cfg);
Runtime *runtime_free(Runtime *rt);
DEFINE_TRIVIAL_CLEANUP_FUNC(Runtime *, runtime_free);

/* Registers a controller and the informers it needs (before or after start). */
int runtime_add(Runtime *rt, const ControllerSpec *spec);
int runtime_start(Runtime *rt);
/* Asks every controller to sync now. */
void runtime_kick(Runtime *rt);
/* Asks the controllers that read the etcd view to sync (its digest changed). */
void runtime_kick_etcd_readers(Runtime *rt);
/* Asks one controller (by its spec name) to sync; -ENOENT if there is none. */
int runtime_enqueue(Runtime *rt, const char *controller);
/* Stops accepting work; `done` runs once no plan is in flight. */
void runtime_shutdown(Runtime *rt, void (*done)(Runtime *rt, void *userdata), void *userdata);

typedef struct ControllerStats {
        uint64_t syncs, failures, intents;
        usec_t last_sync_duration; /* from the sync's start to its plan carried out */
        usec_t sync_cost;          /* moving average of the sync function alone: its scheduling rank */
} ControllerStats;
/* Aliveness, for /healthz: false (with the reason in `why`) when a controller
 * has carried out one plan for over 5 minutes, or one with a resync period has
 * not taken a key for 3 periods (at least 2 minutes). True while not started
 * (a standby) and while shutting down. `now` is CLOCK_MONOTONIC. */
bool runtime_check_alive(Runtime *rt, usec_t now, char *why, size_t size);
int runtime_get_stats(Runtime *rt, const char *controller, ControllerStats *ret);
/* The i-th registered controller's name and stats; -ENOENT past the last. */
int runtime_get_stats_at(Runtime *rt, size_t i, const char **ret_name, ControllerStats *ret);
