/* A plan is what a controller's sync returns: the intents it wants carried
 * out, in order. Syncs only read caches and build plans; the runtime does
 * the I/O (docs/architecture.md, "Controllers"). Builders copy what they
 * are given, and record the first allocation failure in the plan (checked
 * once by the runtime), so syncs stay free of error plumbing. */
#pragma once

#include <cjson/cJSON.h>

#include "base/timeutil.h"
#include "conditions.h"
#include "kube/client.h"

typedef enum IntentType {
        INTENT_APPLY,         /* create, or update the fields we own if they differ */
        INTENT_CREATE,        /* POST; AlreadyExists is a failure */
        INTENT_UPDATE,        /* PUT with the object's resourceVersion */
        INTENT_UPDATE_STATUS, /* PUT .../status */
        INTENT_PATCH,
        INTENT_DELETE,    /* NotFound counts as done */
        INTENT_CONDITION, /* on the operator's status object, written once per plan */
        INTENT_EVENT,
        /* etcd membership, carried out through the runtime's EtcdClient. At most one per
         * plan: a controller takes at most one risky step per sync. */
        INTENT_ETCD_ADD_LEARNER, /* peer_url */
        INTENT_ETCD_PROMOTE,     /* member_id */
        INTENT_ETCD_REMOVE,      /* member_id */
        INTENT_ETCD_UPDATE_PEER, /* member_id's peer URLs become peer_url */
        /* etcd maintenance, also at most one etcd intent per plan: each is recorded in the
         * maintenance log (etcd/maintlog.h) and its failure is the controller's to judge
         * from there (no Degraded by itself). */
        INTENT_ETCD_DEFRAGMENT,  /* member_id at endpoint */
        INTENT_ETCD_COMPACT,     /* revision (physical: the call returns once it is applied) */
        INTENT_ETCD_DISARM,      /* alarm of member_id */
        INTENT_ETCD_MOVE_LEADER, /* to member_id, sent to the leader at endpoint */
        INTENT_ETCD_DOWNGRADE,   /* etcd's downgrade: action (ENABLE, CANCEL) to version */
        _INTENT_TYPE_MAX,
        _INTENT_TYPE_INVALID = -EINVAL,
} IntentType;

typedef struct Intent {
        IntentType type;
        const KubeResource *res;
        char *namespace;
        char *name;
        cJSON *object; /* APPLY/CREATE/UPDATE/UPDATE_STATUS: the object; PATCH: the patch */
        KubePatchType patch_type;
        char *precondition_uid; /* DELETE */
        /* CONDITION */
        char *cond_type, *cond_status, *cond_reason, *cond_message;
        /* EVENT */
        bool warning;
        char *reason, *message;
        /* ETCD_* (name: the node or member name, for logs and events) */
        char *peer_url;
        uint64_t member_id;
        char *endpoint;   /* DEFRAGMENT, MOVE_LEADER: the client URL the call goes to */
        uint64_t from_id; /* MOVE_LEADER: the leader at endpoint */
        char *alarm;      /* DISARM */
        char *action;     /* DOWNGRADE: "ENABLE" or "CANCEL" */
        char *version;    /* DOWNGRADE ENABLE: the target ("3.5") */
        uint64_t revision;
        char *detail; /* DEFRAGMENT: the sizes that made it due, for logs and events */
} Intent;

typedef struct Plan {
        Intent *intents;
        size_t n, cap;
        usec_t requeue_after; /* 0 = none */
        int error;            /* first builder failure (-ENOMEM, -EINVAL) */
        /* Why the controller holds back (plan_waiting), NULL when it does not. */
        char *waiting_reason, *waiting;
} Plan;

void plan_done(Plan *p);
/* Removes every intent but conditions and events (a failed sync writes nothing else). */
void plan_drop_writes(Plan *p);
void plan_apply(Plan *p, const KubeResource *res, const cJSON *obj);
void plan_create(Plan *p, const KubeResource *res, const cJSON *obj);
void plan_update(Plan *p, const KubeResource *res, const cJSON *obj);
void plan_update_status(Plan *p, const KubeResource *res, const cJSON *obj);
void plan_patch(Plan *p, const KubeResource *res, const char *ns, const char *name, KubePatchType type,
                const cJSON *patch);
void plan_delete(Plan *p, const KubeResource *res, const char *ns, const char *name, const char *uid);
void plan_condition(Plan *p, const char *type, const char *status, const char *reason, const char *fmt, ...)
        _printf_(5, 6);
void plan_event(Plan *p, bool warning, const char *reason, const char *fmt, ...) _printf_(4, 5);
/* Membership changes; `name` names the member in logs and events. A second
 * membership intent in one plan is a builder error (-EBUSY). */
void plan_etcd_add_learner(Plan *p, const char *name, const char *peer_url);
void plan_etcd_promote(Plan *p, const char *name, uint64_t id);
void plan_etcd_remove(Plan *p, const char *name, uint64_t id);
void plan_etcd_update_peer(Plan *p, const char *name, uint64_t id, const char *peer_url);
/* Maintenance (recorded in the maintenance log; `name` names the member). */
void plan_etcd_defragment(Plan *p, const char *name, uint64_t id, const char *endpoint, const char *detail);
void plan_etcd_compact(Plan *p, uint64_t revision);
void plan_etcd_disarm(Plan *p, const char *name, uint64_t id, const char *alarm);
void plan_etcd_move_leader(Plan *p, const char *name, uint64_t target, uint64_t leader,
                           const char *leader_endpoint);
/* etcd's downgrade: "ENABLE" to `version` (validated first), or "CANCEL" (version NULL). */
void plan_etcd_downgrade(Plan *p, const char *action, const char *version);
/* Any etcd intent (membership or maintenance). */
bool intent_is_etcd(const Intent *i);
bool intent_is_etcd_membership(const Intent *i);

/* Says why the controller waits ("master-2 not added: its etcd container is
 * not running"). The runtime logs it and records a Normal event with
 * `reason` only when the text changes from the last sync's, so a controller
 * that waits says so once per change, not once per sync. The first call
 * of a plan wins. */
void plan_waiting(Plan *p, const char *reason, const char *fmt, ...) _printf_(3, 4);

/* Keeps the shortest requeue asked for. */
void plan_requeue_after(Plan *p, usec_t delay);

const char *intent_type_to_string(IntentType t);
/* "apply configmaps openshift-etcd/etcd-pod" for logs and tests. */
char *intent_describe(const Intent *i);
