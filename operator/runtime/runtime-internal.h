/* What the runtime's three parts share (controller.c: queues, scheduling
 * and the public API; executor.c: carrying out a plan, intent by intent;
 * status-writer.c: the conditions on the operator's status object). Not for
 * controllers: they see runtime/controller.h only. */
#pragma once

#include "controller.h"
#include "runtime/expectations.h"
#include "runtime/workqueue.h"

#define MAX_CONTROLLERS 32
#define MAX_CONFLICTS   3
/* Every controller writes conditions on the same object: conflicts are expected. */
#define MAX_STATUS_CONFLICTS 10
#define CONTROLLER_KEY       "key"
/* How long a sync waits for the informers to see its controller's last writes. */
/* How long a sync waits for the informers to show the controller's own last writes. A watch
 * shows them in milliseconds; under load (or resuming after a GOAWAY, with backoff) seconds.
 * Past it a plan may repeat what landed (recreate what it just deleted), so it is long: only a
 * watch that is broken outlasts it (client-go's controllers wait 5 minutes). */
#define EXPECTATION_TIMEOUT (30 * USEC_PER_SEC)
#define EXPECTATION_POLL    (25 * USEC_PER_MSEC)
#define UNMANAGED_POLL      (5 * USEC_PER_SEC) /* how often an unmanaged controller looks again */
/* Aliveness (/healthz): one plan carried out for longer than ALIVE_PLAN_MAX, or a
 * controller with a resync period idle for 3 periods (at least ALIVE_IDLE_MIN),
 * means the controller stopped. */
#define ALIVE_PLAN_MAX (5 * 60 * USEC_PER_SEC)
#define ALIVE_IDLE_MIN (2 * 60 * USEC_PER_SEC)
/* A defragmentation blocks its member; the call's deadline stays below ALIVE_PLAN_MAX,
 * so a slow one ends as a failure in the maintenance log, never as a stopped controller. */
#define DEFRAG_TIMEOUT (4 * 60 * USEC_PER_SEC)
_Static_assert(DEFRAG_TIMEOUT < ALIVE_PLAN_MAX, "a defragmentation must not outlive the aliveness check");
#define MAINT_RETRY_DELAY  (15 * USEC_PER_SEC) /* the controller looks again after a failed step */
#define CONFLICT_DELAY     (200 * USEC_PER_MSEC)
#define CONFLICT_DELAY_MAX (10 * USEC_PER_SEC)

typedef struct Controller Controller;

struct Controller {
        Runtime *rt;
        const ControllerSpec *spec;
        WorkQueue *queue;
        sd_event_source *timer;   /* next delayed key */
        sd_event_source *process; /* deferred: run the next key */
        sd_event_source *resync;
        /* The plan in flight. */
        char *key;
        Plan plan;
        size_t next;
        unsigned conflicts;
        int first_error;
        char *first_error_what;
        char *first_error_message; /* the API server's Status message or etcd's error, as they wrote it */
        char *waiting;             /* what the last sync said it waits for (plan_waiting), NULL: nothing */
        Expectations *expect;      /* writes of the last plans the informers have not shown yet */
        usec_t sync_started;
        usec_t cost; /* moving average of the sync function's own run time */
        ControllerStats stats;
        bool unmanaged;    /* the last sync was skipped for spec.managementState (logged once) */
        usec_t last_alive; /* CLOCK_MONOTONIC: started, or last took a key off its queue or finished one */
        /* Plans in a row that met a Conflict or AlreadyExists: each waits longer
         * (CONFLICT_DELAY doubling to CONFLICT_DELAY_MAX) and until the informers
         * have caught up with the object; a plan without one resets it. */
        unsigned conflict_streak;
        bool conflicted; /* the plan in flight met one */
        /* A write whose outcome is unknown (a 504, a broken connection) and that no read
         * has settled yet ("plural ns/name", NULL: none): the next write of that object
         * reads it first. `settling`: a read of the current intent's object is in flight,
         * before (true) or after its write. */
        char *unsettled;
        int unsettled_error;
        int settling_error;
        bool settling_before_send;
        uint64_t settling_cached_rv; /* the object's version in our cache when the read went out */
        usec_t etcd_started;         /* CLOCK_REALTIME: the etcd maintenance step in flight began */
};

/* Whether an informer update changed only heartbeats (see heartbeat_only()). */
typedef struct HeartbeatVerdict {
        const KubeObject *old, *obj;
        uint64_t old_rv, obj_rv;
        bool heartbeat_only;
} HeartbeatVerdict;

struct Runtime {
        KubeClient *client;
        InformerFactory *informers;
        EventRecorder *recorder;
        RuntimeConfig cfg;
        Controller *controllers[MAX_CONTROLLERS];
        size_t n;
        bool started;
        bool shutting_down;
        usec_t last_etcd_change;    /* CLOCK_MONOTONIC of the last membership change carried out */
        Informer *status_informer;  /* of cfg.status_res, when it has one */
        uint64_t status_rv_written; /* resourceVersion of our newest conditions write, or of the object read
                                       live */
        HeartbeatVerdict last_verdict; /* of the informer event being handed out */
        void (*on_drained)(Runtime *rt, void *userdata);
        void *drained_userdata;
};

/* A write that failed with this may still have been carried out: a 504 Timeout ("may still be
 * processing the request"), another 5xx, a connection that broke or timed out once the request
 * was out. Its writer reads the object back before it writes it again. */
static inline bool runtime_outcome_unknown(int error)
{
        return error == -ETIMEDOUT || error == -ECONNRESET || error == -EREMOTEIO || error == -EPIPE ||
               error == -ECONNABORTED;
}

/* controller.c: the key's plan is done (or abandoned); requeue or forget it. */
void runtime_finish_key(Controller *c);
/* executor.c: carry out c->plan from its first intent; ends in runtime_write_conditions(). */
void runtime_execute(Controller *c);
/* executor.c: count a failure and keep the first one for the Degraded condition. `message`: what
 * the server said, or NULL for the error in the words of the API it came from. */
void runtime_note_failure(Controller *c, int error, const Intent *i, const char *message);
/* status-writer.c: the plan's conditions and the Degraded condition, in one status write (none
 * when the cached object already says so); ends in runtime_finish_key(). `live`: read the object
 * from the server first (after a conflict). */
void runtime_write_conditions(Controller *c, bool live);
