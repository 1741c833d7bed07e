/* Table tests for controllers: fixture caches in, planned intents out.
 * Objects go straight into the informers' caches (no server), the etcd view
 * is a hand-built snapshot, and sync is called directly. */
#pragma once

#include "controllers/common.h"

typedef struct Fixture {
        Loop *loop;
        KubeClient *client;
        InformerFactory *factory;
        OperatorState state;
        EtcdViewSnapshot *snap;
        Plan plan;
        usec_t now; /* CLOCK_REALTIME handed to sync */
        uint64_t rv;
} Fixture;

Fixture *fixture_new(void);
void fixture_free(Fixture *f);
/* Adds (or replaces) an object; metadata.resourceVersion is filled in when absent. */
void fixture_add(Fixture *f, OperatorWatch w, const char *json);
void fixture_delete(Fixture *f, OperatorWatch w, const char *ns, const char *name);
/* A master Node with an InternalIP and Ready status. */
void fixture_master(Fixture *f, const char *name, const char *ip, bool ready);
/* A Node labelled node-role.kubernetes.io/arbiter (counted on HighlyAvailableArbiter only). */
void fixture_arbiter(Fixture *f, const char *name, const char *ip, bool ready);
/* An etcd member in the snapshot (creates the snapshot on first use). */
void fixture_member(Fixture *f, uint64_t id, const char *name, const char *ip, bool learner, bool started,
                    bool healthy);
void fixture_no_etcd(Fixture *f); /* no snapshot at all */
void fixture_etcd_error(Fixture *f, int error);
/* Runs sync; returns its result. The plan stays in f->plan until the next sync. */
int fixture_sync(Fixture *f, const ControllerSpec *spec);

/* Lookups in f->plan. */
const Intent *fixture_find(Fixture *f, IntentType t, const char *plural, const char *name);
const Intent *fixture_condition(Fixture *f, const char *type);
size_t fixture_count(Fixture *f, IntentType t);
/* Fails the test unless the condition intent exists with that status and reason. */
void fixture_expect_condition(Fixture *f, const char *type, const char *status, const char *reason);

/* The cached object, NULL when absent. */
const KubeObject *fixture_get(Fixture *f, OperatorWatch w, const char *ns, const char *name);
/* Changes a member of the snapshot: learner or voter, healthy or not (refused). */
void fixture_member_set(Fixture *f, uint64_t id, bool learner, bool healthy);
/* Sets what a member's status reports about its database and revision. */
void fixture_member_db(Fixture *f, uint64_t id, uint64_t db_size, uint64_t in_use, uint64_t revision);
/* Makes `id` the leader every member reports. */
void fixture_leader(Fixture *f, uint64_t id);
/* Adds an alarm ("NOSPACE") of member `id` to the snapshot's alarm list (at most 8). */
void fixture_alarm(Fixture *f, uint64_t id, const char *alarm);
/* A maintenance record in f->state.maint (created on first use), finished at `finished`. */
void fixture_maint(Fixture *f, EtcdMaintKind kind, uint64_t id, uint64_t revision, usec_t finished,
                   int error);
/* A leader handover from `from` to `to` in the maintenance log, as fixture_maint. */
void fixture_move_leader(Fixture *f, uint64_t from, uint64_t to, usec_t finished, int error);
/* Sets the etcd version a member's status reports. */
void fixture_member_version(Fixture *f, uint64_t id, const char *version);
/* Feeds the plan's writes to the objects of watch `w` back into the cache,
 * as the API server would carry them out: APPLY merges like the runtime
 * (labels and annotations merged, other top-level fields replaced), CREATE
 * adds, UPDATE replaces all but status, UPDATE_STATUS only status, a merge
 * PATCH follows RFC 7386. Each write gets a new resourceVersion; an UPDATE
 * with a stale one fails the test. Returns how many writes were fed. */
size_t fixture_feed(Fixture *f, OperatorWatch w);

/* The same for informers outside the shared W_* set (a controller's own
 * watches), addressed by resource and namespace (NULL: cluster-scoped). */
void fixture_add_to(Fixture *f, const KubeResource *res, const char *ns, const char *json);
void fixture_delete_from(Fixture *f, const KubeResource *res, const char *ns, const char *name);
const KubeObject *fixture_get_from(Fixture *f, const KubeResource *res, const char *ns, const char *name);
size_t fixture_feed_to(Fixture *f, const KubeResource *res, const char *ns);
/* The same into the informer of a watch with a label selector. */
size_t fixture_feed_to_selected(Fixture *f, const KubeResource *res, const char *ns, const char *selector);

/* fixture_add with a printf-style JSON template. */
void fixture_addf(Fixture *f, OperatorWatch w, const char *fmt, ...) _printf_(3, 4);
/* etcds/cluster with the given spec and status members (JSON object bodies
 * without braces, e.g. "\"latestAvailableRevision\":3"; NULL for none). */
void fixture_etcd_cr(Fixture *f, const char *spec, const char *status);
/* The mirror pod etcd-<node> of the node's etcd static pod: label
 * revision=<revision>, Running, every container (and the Ready condition)
 * ready or not. */
void fixture_etcd_pod(Fixture *f, const char *node, unsigned revision, bool ready);
/* Secret openshift-etcd/<secret> (an etcd-all-certs-<N>) holding etcd-serving-<node>.crt,
 * issued by a fresh CA for `ips` (NULL-terminated) and localhost, and a key that is no
 * certificate. */
void fixture_all_certs(Fixture *f, const char *node, const char *secret, const char *const *ips);
/* Adds a cJSON object (built with cJSON, so its strings hold any byte); takes it. */
void fixture_add_object(Fixture *f, OperatorWatch w, cJSON *obj);
/* The shape of a tree: one line per member and item, "path type" (numbers,
 * booleans and null with their value; strings as "string" only). Two objects
 * built from different strings have the same shape exactly when the strings
 * added no member of their own. Freed with free(). */
char *fixture_shape(const cJSON *obj);
