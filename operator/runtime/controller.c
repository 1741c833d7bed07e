/* Controller runtime: work queues on the loop, sync, and the plan executor. */
#include "controller.h"
#include "base/json.h"
#include "base/log.h"
#include "runtime/apply.h"
#include "runtime/expectations.h"
#include "runtime/workqueue.h"

#define MAX_CONTROLLERS 32
#define MAX_CONFLICTS   3
/* Every controller writes conditions on the same object: conflicts are expected. */
#define MAX_STATUS_CONFLICTS 10
#define CONTROLLER_KEY       "key"
/* How long a sync waits for the informers to see its controller's last writes. */
#define EXPECTATION_TIMEOUT (2 * USEC_PER_SEC)
#define EXPECTATION_POLL    (25 * USEC_PER_MSEC)

/* Scheduling. Syncs run from deferred sources below everything else on the
 * loop (sockets, timers, informer deliveries: priority 0), so a write one
 * sync planned goes out before the next sync starts. Among themselves, the
 * cheaper a controller's recent syncs, the earlier it runs (shortest job
 * first): a reaction that takes a millisecond does not wait behind the cert
 * signer verifying a dozen certificates. Every pending sync still runs in
 * its turn; only the order within one turn of the loop changes. */
#define SYNC_PRIORITY_BASE 100
#define SYNC_COST_UNIT     (250 * USEC_PER_MSEC / 1000) /* 250 us: bucket 0 */
#define SYNC_COST_BUCKETS  16

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
        usec_t last_etcd_change;       /* CLOCK_MONOTONIC of the last membership change carried out */
        Informer *status_informer;     /* of cfg.status_res, when it has one */
        uint64_t status_rv_written;    /* resourceVersion of our newest conditions write */
        HeartbeatVerdict last_verdict; /* of the informer event being handed out */
        void (*on_drained)(Runtime *rt, void *userdata);
        void *drained_userdata;
};

static void controller_free(Controller *c)
{
        if (!c)
                return;
        c->timer = sd_event_source_disable_unref(c->timer);
        c->process = sd_event_source_disable_unref(c->process);
        c->resync = sd_event_source_disable_unref(c->resync);
        workqueue_free(c->queue);
        plan_done(&c->plan);
        free(c->key);
        free(c->first_error_what);
        free(c->first_error_message);
        free(c->waiting);
        expectations_free(c->expect);
        free(c);
}

Runtime *runtime_new(KubeClient *c, InformerFactory *f, EventRecorder *rec, const RuntimeConfig *cfg)
{
        Runtime *rt = calloc(1, sizeof *rt);
        if (!rt)
                return NULL;
        rt->client = c;
        rt->informers = f;
        rt->recorder = rec;
        if (cfg)
                rt->cfg = *cfg;
        if (rt->cfg.status_res && rt->cfg.status_name && f) {
                rt->status_informer = informer_factory_get(f, rt->cfg.status_res, NULL, NULL);
                if (!rt->status_informer)
                        return mfree(rt);
        }
        return rt;
}

Runtime *runtime_free(Runtime *rt)
{
        if (!rt)
                return NULL;
        for (size_t i = 0; i < rt->n; i++)
                controller_free(rt->controllers[i]);
        return mfree(rt);
}

static sd_event *event_of(Controller *c)
{
        return loop_get_event(kube_client_get_loop(c->rt->client));
}

static void kick(Controller *c)
{
        if (c->process && !c->key && workqueue_len(c->queue) > 0)
                (void) sd_event_source_set_enabled(c->process, SD_EVENT_ONESHOT);
}

static void arm_timer(Controller *c)
{
        usec_t now = now_usec(CLOCK_MONOTONIC);
        usec_t next = workqueue_advance(c->queue, now);

        kick(c);
        if (!c->timer)
                return;
        if (next == USEC_INFINITY) {
                (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(c->timer, next);
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

static void enqueue(Controller *c)
{
        if (workqueue_add(c->queue, CONTROLLER_KEY) >= 0)
                kick(c);
}

/* One informer event reaches every controller watching it, one handler call
 * each: the verdict is worked out once per event and kept on the runtime.
 * The resourceVersions make the key unambiguous even if freed objects'
 * addresses come back. */
static bool heartbeat_only(HeartbeatVerdict *v, const KubeObject *old, const KubeObject *obj)
{
        if (!old || !obj)
                return false;
        if (old != v->old || obj != v->obj || old->resource_version != v->old_rv ||
            obj->resource_version != v->obj_rv)
                *v = (HeartbeatVerdict){.old = old,
                                        .obj = obj,
                                        .old_rv = old->resource_version,
                                        .obj_rv = obj->resource_version,
                                        .heartbeat_only = kube_object_heartbeat_only(old, obj)};
        return v->heartbeat_only;
}

static void on_informer_event(Informer *inf, InformerEvent ev, const KubeObject *old, const KubeObject *obj,
                              void *userdata)
{
        (void) inf;
        /* A Node reporting it is still there changes nothing a controller decides on;
         * resyncs (old == obj) and every real change still enqueue. */
        Controller *c = userdata;
        if (ev == INFORMER_UPDATED && heartbeat_only(&c->rt->last_verdict, old, obj))
                return;
        enqueue(userdata);
}

/* ---- executing a plan ---- */

static void run_next_intent(Controller *c);
static void write_conditions(Controller *c, bool live);

static bool is_etcd_intent(const Intent *i)
{
        return i && (i->type == INTENT_ETCD_ADD_LEARNER || i->type == INTENT_ETCD_PROMOTE ||
                     i->type == INTENT_ETCD_REMOVE);
}

/* `message`: what the server said (a Status message, etcd's error), or NULL;
 * without one, the error in the words of the API it came from. */
static void note_failure(Controller *c, int error, const Intent *i, const char *message)
{
        _cleanup_free_ char *what = i ? intent_describe(i) : NULL;

        if (!message || !*message)
                message = is_etcd_intent(i) ? etcd_strerror(error)
                          : i               ? kube_strerror(error)
                                            : strerror(-error);
        c->stats.failures++;
        log_warning("%s failed: %s", what ? what : "sync", message);
        if (c->first_error < 0)
                return;
        c->first_error = error;
        free(c->first_error_what);
        c->first_error_what = what ? TAKE_PTR(what) : strdup("sync");
        free(c->first_error_message);
        c->first_error_message = strdup(message);
}

static void finish_key(Controller *c)
{
        Runtime *rt = c->rt;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        c->stats.last_sync_duration = now - c->sync_started;
        if (c->first_error < 0) {
                usec_t d = 0;
                (void) workqueue_add_rate_limited(c->queue, c->key, now, &d);
                log_debug("%s: requeued after %llu ms", c->spec->name,
                          (unsigned long long) (d / USEC_PER_MSEC));
        } else {
                workqueue_forget(c->queue, c->key);
                if (c->plan.requeue_after)
                        (void) workqueue_add_after(c->queue, c->key, now + c->plan.requeue_after);
        }
        workqueue_done(c->queue, c->key);
        c->key = mfree(c->key);
        plan_done(&c->plan);
        c->first_error = 0;
        c->first_error_what = mfree(c->first_error_what);
        c->first_error_message = mfree(c->first_error_message);
        log_set_controller(NULL);
        arm_timer(c);

        if (rt->shutting_down && rt->on_drained) {
                for (size_t i = 0; i < rt->n; i++)
                        if (rt->controllers[i]->key)
                                return;
                void (*f)(Runtime *, void *) = TAKE_PTR(rt->on_drained);
                f(rt, rt->drained_userdata);
        }
}

static void intent_finished(Controller *c, int error, const char *message)
{
        const Intent *i = &c->plan.intents[c->next];
        /* A conflict or an object that already exists means our cache is behind the
         * server: sync again shortly from fresher caches instead of reporting Degraded. */
        if ((error == -ESTALE || error == -EEXIST) && i->type != INTENT_ETCD_ADD_LEARNER) {
                _cleanup_free_ char *what = intent_describe(i);
                log_debug("%s: %s; syncing again", strempty(what), strerror(-error));
                plan_requeue_after(&c->plan, 200 * USEC_PER_MSEC);
                error = 0;
        }
        if (error < 0)
                note_failure(c, error, i, message);
        c->next++;
        c->conflicts = 0;
        run_next_intent(c);
}

/* The next sync of this controller waits until its informers show this write. */
static void expect_write(Controller *c, const Intent *i, const KubeResponse *resp)
{
        const char *ns = i->namespace, *name = i->name;
        uint64_t rv = 0;

        if (i->type != INTENT_DELETE) {
                if (!resp->body || json_get_uint64(resp->body, "metadata.resourceVersion", &rv) < 0 ||
                    rv == 0)
                        return;
                ns = json_get_string(resp->body, "metadata.namespace");
                name = json_get_string(resp->body, "metadata.name");
        }
        if (!name)
                return;
        (void) expectations_add(c->expect, c->spec->watches, c->spec->n_watches, i->res, ns, name, rv,
                                now_usec(CLOCK_MONOTONIC) + EXPECTATION_TIMEOUT);
}

static void on_intent_done(KubeClient *kc, const KubeResponse *resp, void *userdata)
{
        Controller *c = userdata;
        int e = resp->error;

        (void) kc;
        if (e == -ECANCELED)
                return; /* the runtime is being freed: `c` may be gone */
        log_set_controller(c->spec->name);
        const Intent *i = &c->plan.intents[c->next];
        if (i->type == INTENT_DELETE && e == -ENOENT)
                e = 0;
        if (e == -ESTALE && i->type == INTENT_APPLY && ++c->conflicts < MAX_CONFLICTS) {
                run_next_intent(c); /* re-read and merge again */
                return;
        }
        if (e >= 0 && i->type != INTENT_EVENT && i->type != INTENT_CONDITION) {
                _cleanup_free_ char *what = intent_describe(i);
                log_debug("%s done", what);
                expect_write(c, i, resp);
        }
        intent_finished(c, e, resp->status ? resp->status->message : NULL);
}

static void on_apply_get(KubeClient *kc, const KubeResponse *resp, void *userdata)
{
        Controller *c = userdata;
        int r;

        if (resp->error == -ECANCELED)
                return; /* the runtime is being freed: `c` may be gone */
        log_set_controller(c->spec->name);
        const Intent *i = &c->plan.intents[c->next];
        if (resp->error == -ENOENT) {
                r = kube_create(kc, i->res, i->namespace, i->object, on_intent_done, c);
                if (r < 0)
                        intent_finished(c, r, NULL);
                return;
        }
        if (resp->error < 0) {
                intent_finished(c, resp->error, resp->status ? resp->status->message : NULL);
                return;
        }
        _cleanup_(cJSON_Deletep) cJSON *merged = apply_merge(resp->body, i->object);
        if (!merged) {
                intent_finished(c, -ENOMEM, NULL);
                return;
        }
        if (cJSON_Compare(merged, resp->body, true)) {
                intent_finished(c, 0, NULL); /* already as we want it */
                return;
        }
        r = kube_update(kc, i->res, merged, on_intent_done, c);
        if (r < 0)
                intent_finished(c, r, NULL);
}

/* ---- etcd membership ---- */

static void on_etcd_done(EtcdClient *ec, const EtcdResponse *resp, void *userdata)
{
        Controller *c = userdata;
        int e = resp->error;

        (void) ec;
        if (e == -ECANCELED)
                return; /* the client is being freed: `c` may be gone */
        log_set_controller(c->spec->name);
        const Intent *i = &c->plan.intents[c->next];
        _cleanup_free_ char *what = intent_describe(i);
        /* The change may already have happened (a stale view, or a restart mid-way):
         * etcd's "already so" answers mean done. */
        if ((i->type == INTENT_ETCD_REMOVE && e == ETCD_ERR_MEMBER_NOT_FOUND) ||
            (i->type == INTENT_ETCD_PROMOTE && e == ETCD_ERR_NOT_LEARNER) ||
            (i->type == INTENT_ETCD_ADD_LEARNER && e == ETCD_ERR_PEER_URL_EXISTS)) {
                log_info("%s: already done (%s)", what, etcd_strerror(e));
                c->rt->last_etcd_change = now_usec(CLOCK_MONOTONIC);
                if (c->rt->cfg.on_etcd_change)
                        c->rt->cfg.on_etcd_change(c->rt->cfg.userdata);
                intent_finished(c, 0, NULL);
                return;
        }
        /* etcd's "not yet" answers are part of the protocol, not failures: ask again soon. */
        if (e == ETCD_ERR_LEARNER_NOT_READY || e == ETCD_ERR_UNHEALTHY || e == ETCD_ERR_NOT_ENOUGH_STARTED) {
                log_info("%s: %s; retrying shortly", what, etcd_strerror(e));
                plan_requeue_after(&c->plan, 2 * USEC_PER_SEC);
                intent_finished(c, 0, NULL);
                return;
        }
        if (e < 0) {
                event_record(c->rt->recorder, true, "MemberChangeFailed", "%s failed: %s%s%s", what,
                             etcd_strerror(e), resp->message ? ": " : "", strempty(resp->message));
                intent_finished(c, e, resp->message);
                return;
        }
        log_info("%s: done", what);
        static const char *const reasons[] = {
                [INTENT_ETCD_ADD_LEARNER] = "MemberAddAsLearner",
                [INTENT_ETCD_PROMOTE] = "MemberPromote",
                [INTENT_ETCD_REMOVE] = "MemberRemove",
        };
        event_record(c->rt->recorder, false, reasons[i->type], "%s", what);
        c->rt->last_etcd_change = now_usec(CLOCK_MONOTONIC);
        if (c->rt->cfg.on_etcd_change)
                c->rt->cfg.on_etcd_change(c->rt->cfg.userdata);
        intent_finished(c, 0, NULL);
}

static int run_etcd_intent(Controller *c, const Intent *i)
{
        EtcdClient *ec = c->rt->cfg.etcd;
        _cleanup_free_ char *what = intent_describe(i);

        if (!ec)
                return -ENOTCONN;
        /* The plan came from a member list older than our last change: decide again on a fresh one. */
        if (c->rt->last_etcd_change && c->rt->cfg.etcd_view_fresh &&
            !c->rt->cfg.etcd_view_fresh(c->rt->cfg.userdata, c->rt->last_etcd_change)) {
                log_debug("%s: waiting for a member list newer than the last change", what);
                plan_requeue_after(&c->plan, 300 * USEC_PER_MSEC);
                return 1; /* skipped */
        }
        /* Every risky step is logged before and after. */
        log_info("%s: starting", what);
        switch (i->type) {
        case INTENT_ETCD_ADD_LEARNER:
                return etcd_member_add(ec, i->peer_url, true, on_etcd_done, c);
        case INTENT_ETCD_PROMOTE:
                return etcd_member_promote(ec, i->member_id, on_etcd_done, c);
        case INTENT_ETCD_REMOVE:
                return etcd_member_remove(ec, i->member_id, on_etcd_done, c);
        default:
                return -EINVAL;
        }
}

static void run_next_intent(Controller *c)
{
        Runtime *rt = c->rt;
        int r = 0;

        /* Skip conditions (written together at the end) and record events inline. */
        while (c->next < c->plan.n) {
                const Intent *i = &c->plan.intents[c->next];
                if (i->type == INTENT_CONDITION) {
                        c->next++;
                        continue;
                }
                if (i->type == INTENT_EVENT) {
                        event_record(rt->recorder, i->warning, i->reason, "%s", i->message);
                        c->next++;
                        continue;
                }
                break;
        }
        if (c->next >= c->plan.n) {
                write_conditions(c, false);
                return;
        }
        const Intent *i = &c->plan.intents[c->next];
        c->stats.intents++;
        switch (i->type) {
        case INTENT_APPLY:
                r = kube_get(rt->client, i->res, i->namespace, i->name, on_apply_get, c);
                break;
        case INTENT_CREATE:
                r = kube_create(rt->client, i->res, i->namespace, i->object, on_intent_done, c);
                break;
        case INTENT_UPDATE:
                r = kube_update(rt->client, i->res, i->object, on_intent_done, c);
                break;
        case INTENT_UPDATE_STATUS:
                r = kube_update_status(rt->client, i->res, i->object, on_intent_done, c);
                break;
        case INTENT_PATCH:
                r = kube_patch(rt->client, i->res, i->namespace, i->name, NULL, i->patch_type, i->object,
                               "cluster-etcd-operator", false, on_intent_done, c);
                break;
        case INTENT_DELETE:
                r = kube_delete(rt->client, i->res, i->namespace, i->name, i->precondition_uid, NULL,
                                on_intent_done, c);
                break;
        case INTENT_ETCD_ADD_LEARNER:
        case INTENT_ETCD_PROMOTE:
        case INTENT_ETCD_REMOVE:
                r = run_etcd_intent(c, i);
                if (r > 0) {
                        intent_finished(c, 0, NULL);
                        return;
                }
                break;
        default:
                r = -EINVAL;
        }
        if (r < 0)
                intent_finished(c, r, NULL);
}

/* ---- conditions on the operator's status object ---- */

static int apply_conditions(Controller *c, cJSON *status_obj)
{
        usec_t now = now_usec(CLOCK_REALTIME);
        bool changed = false;
        int r;

        cJSON *status = json_ensure_object(status_obj, "status");
        cJSON *conds = status ? cJSON_GetObjectItemCaseSensitive(status, "conditions") : NULL;
        if (!status)
                return -ENOMEM;
        if (!cJSON_IsArray(conds)) {
                cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
                conds = cJSON_AddArrayToObject(status, "conditions");
                if (!conds)
                        return -ENOMEM;
        }
        for (size_t k = 0; k < c->plan.n; k++) {
                const Intent *i = &c->plan.intents[k];
                if (i->type != INTENT_CONDITION)
                        continue;
                Condition cd = {i->cond_type, i->cond_status, i->cond_reason, i->cond_message};
                r = conditions_set(conds, &cd, now);
                if (r < 0)
                        return r;
                changed |= r > 0;
        }
        _cleanup_free_ char *msg = c->first_error < 0
                                           ? strdup_printf("%s: %s", strempty(c->first_error_what),
                                                           strempty(c->first_error_message))
                                           : NULL;
        Condition d = {c->spec->degraded_condition, c->first_error < 0 ? "True" : "False",
                       c->first_error < 0 ? "SyncError" : "AsExpected", msg};
        r = conditions_set(conds, &d, now);
        if (r < 0)
                return r;
        return changed || r > 0;
}

static void on_status_written(KubeClient *kc, const KubeResponse *resp, void *userdata)
{
        Controller *c = userdata;

        (void) kc;
        if (resp->error == -ECANCELED)
                return; /* the runtime is being freed: `c` may be gone */
        log_set_controller(c->spec->name);
        if (resp->error == 0 && resp->body) {
                uint64_t rv = 0;
                if (json_get_uint64(resp->body, "metadata.resourceVersion", &rv) >= 0 &&
                    rv > c->rt->status_rv_written)
                        c->rt->status_rv_written = rv;
        }
        if (resp->error == -ESTALE && ++c->conflicts < MAX_STATUS_CONFLICTS) {
                write_conditions(c, true);
                return;
        }
        if (resp->error < 0) {
                c->stats.failures++;
                if (c->first_error >= 0)
                        c->first_error = resp->error;
                log_warning_errno(resp->error, "writing conditions failed");
        }
        finish_key(c);
}

static void on_status_get(KubeClient *kc, const KubeResponse *resp, void *userdata)
{
        Controller *c = userdata;
        int r;

        if (resp->error == -ECANCELED)
                return; /* the runtime is being freed: `c` may be gone */
        log_set_controller(c->spec->name);
        if (resp->error < 0) {
                /* Without the operator object there is nowhere to report; the key retries. */
                if (c->first_error >= 0)
                        note_failure(c, resp->error, NULL,
                                     resp->status && resp->status->message ? resp->status->message
                                                                           : kube_strerror(resp->error));
                finish_key(c);
                return;
        }
        _cleanup_(cJSON_Deletep) cJSON *obj = cJSON_Duplicate(resp->body, true);
        r = obj ? apply_conditions(c, obj) : -ENOMEM;
        if (r <= 0) {
                if (r < 0)
                        note_failure(c, r, NULL, NULL);
                finish_key(c);
                return;
        }
        r = kube_update_status(kc, c->rt->cfg.status_res, obj, on_status_written, c);
        if (r < 0) {
                note_failure(c, r, NULL, NULL);
                finish_key(c);
        }
}

/* The cached operator object, when it is at least as new as our own newest
 * conditions write: comparing against an older copy could find "nothing to
 * change" where our previous write is still to be undone. */
static const KubeObject *status_cached(Runtime *rt)
{
        if (!rt->status_informer || !informer_has_synced(rt->status_informer))
                return NULL;
        const KubeObject *o = informer_get(rt->status_informer, NULL, rt->cfg.status_name);
        return o && o->resource_version >= rt->status_rv_written ? o : NULL;
}

/* Compares the plan's conditions with the cached object and writes only a
 * change, with the cached resourceVersion; a conflict (or no usable cache)
 * reads the object live first. Every controller syncs on every etcd view
 * refresh, so a live GET per sync was a dozen requests a second at rest. */
static void write_conditions(Controller *c, bool live)
{
        Runtime *rt = c->rt;
        if (!rt->cfg.status_res || !rt->cfg.status_name) {
                finish_key(c);
                return;
        }
        const KubeObject *cached = live ? NULL : status_cached(rt);
        if (cached) {
                _cleanup_(cJSON_Deletep) cJSON *obj = cJSON_Duplicate(cached->json, true);
                int r = obj ? apply_conditions(c, obj) : -ENOMEM;
                if (r == 0) {
                        finish_key(c);
                        return;
                }
                if (r > 0)
                        r = kube_update_status(rt->client, rt->cfg.status_res, obj, on_status_written, c);
                if (r < 0) {
                        note_failure(c, r, NULL, NULL);
                        finish_key(c);
                }
                return;
        }
        int r = kube_get(rt->client, rt->cfg.status_res, NULL, rt->cfg.status_name, on_status_get, c);
        if (r < 0) {
                note_failure(c, r, NULL, NULL);
                finish_key(c);
        }
}

/* ---- processing keys ---- */

static int64_t cost_priority(usec_t cost)
{
        int64_t bucket = 0;
        for (usec_t u = SYNC_COST_UNIT; cost > u && bucket < SYNC_COST_BUCKETS; u *= 2)
                bucket++;
        return SYNC_PRIORITY_BASE + bucket;
}

static void note_cost(Controller *c, usec_t d)
{
        c->cost = c->stats.syncs <= 1 ? d : (3 * c->cost + d) / 4;
        c->stats.sync_cost = c->cost;
        if (c->process)
                (void) sd_event_source_set_priority(c->process, cost_priority(c->cost));
}

/* A controller that waits says so once per change of what it waits for. */
static void note_waiting(Controller *c)
{
        const char *now = c->plan.waiting;
        if (streq_ptr(now, c->waiting))
                return;
        if (now) {
                log_info("waiting: %s", now);
                event_record(c->rt->recorder, false, c->plan.waiting_reason, "%s", now);
        } else
                log_info("no longer waiting (was: %s)", c->waiting);
        free(c->waiting);
        c->waiting = now ? strdup(now) : NULL;
}

static int on_process(sd_event_source *s, void *userdata)
{
        Controller *c = userdata;
        Runtime *rt = c->rt;

        (void) s;
        if (c->key || rt->shutting_down)
                return 0;
        const char *key = workqueue_get(c->queue);
        if (!key)
                return 0;
        c->key = strdup(key);
        if (!c->key) {
                workqueue_done(c->queue, key);
                return 0;
        }
        /* Syncs see consistent caches only once every informer has listed. */
        if (!informer_factory_has_synced(rt->informers)) {
                /* `key` belongs to the queue until done; use our copy afterwards. */
                workqueue_done(c->queue, c->key);
                (void) workqueue_add_after(c->queue, c->key,
                                           now_usec(CLOCK_MONOTONIC) + 100 * USEC_PER_MSEC);
                c->key = mfree(c->key);
                arm_timer(c);
                return 0;
        }
        /* Never plan from caches that have not seen this controller's own last writes. */
        const char *awaited = NULL;
        usec_t mono = now_usec(CLOCK_MONOTONIC);
        if (!expectations_met(c->expect, rt->informers, mono, &awaited)) {
                log_debug("%s: waiting for the informers to show %s", c->spec->name, awaited);
                workqueue_done(c->queue, c->key);
                (void) workqueue_add_after(c->queue, c->key, mono + EXPECTATION_POLL);
                c->key = mfree(c->key);
                arm_timer(c);
                return 0;
        }
        SyncContext ctx = {.spec = c->spec,
                           .key = c->key,
                           .now = now_usec(CLOCK_REALTIME),
                           .informers = rt->informers,
                           .userdata = rt->cfg.userdata};
        c->sync_started = now_usec(CLOCK_MONOTONIC);
        c->stats.syncs++;
        c->plan = (Plan){};
        c->next = 0;
        c->conflicts = 0;
        c->first_error = 0;
        log_set_controller(c->spec->name);
        int r = c->spec->sync(&ctx, &c->plan);
        note_cost(c, now_usec(CLOCK_MONOTONIC) - c->sync_started);
        if (r >= 0 && c->plan.error < 0)
                r = c->plan.error;
        if (r < 0) {
                note_failure(c, r, NULL, NULL);
                /* A sync that could not decide writes nothing but its conditions and events. */
                plan_drop_writes(&c->plan);
        } else
                note_waiting(c);
        run_next_intent(c);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        (void) s;
        (void) usec;
        arm_timer(userdata);
        return 0;
}

static int on_resync(sd_event_source *s, uint64_t usec, void *userdata)
{
        Controller *c = userdata;
        enqueue(c);
        return sd_event_source_set_time(s, usec + c->spec->resync);
}

static int controller_start(Controller *c)
{
        sd_event *e = event_of(c);
        int r;

        r = sd_event_add_defer(e, &c->process, on_process, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_priority(c->process, SYNC_PRIORITY_BASE);
        (void) sd_event_source_set_enabled(c->process, SD_EVENT_OFF);
        r = sd_event_add_time(e, &c->timer, CLOCK_MONOTONIC, USEC_INFINITY, USEC_PER_MSEC, on_timer, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        if (c->spec->resync) {
                r = sd_event_add_time_relative(e, &c->resync, CLOCK_MONOTONIC, c->spec->resync, 0, on_resync,
                                               c);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_enabled(c->resync, SD_EVENT_ON);
        }
        enqueue(c);
        return 0;
}

int runtime_add(Runtime *rt, const ControllerSpec *spec)
{
        int r;

        assert_return(rt && spec && spec->name && spec->degraded_condition && spec->sync, -EINVAL);
        if (rt->n >= MAX_CONTROLLERS)
                return -E2BIG;
        Controller *c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->rt = rt;
        c->spec = spec;
        c->queue = workqueue_new(NULL, now_usec(CLOCK_MONOTONIC));
        c->expect = expectations_new();
        if (!c->queue || !c->expect) {
                controller_free(c);
                return -ENOMEM;
        }
        for (size_t k = 0; k < spec->n_watches; k++) {
                const WatchSpec *w = &spec->watches[k];
                Informer *inf = informer_factory_get(rt->informers, w->res, w->namespace, w->label_selector);
                r = inf ? informer_add_handler(inf, on_informer_event, c) : -ENOMEM;
                if (r < 0) {
                        controller_free(c);
                        return r;
                }
        }
        rt->controllers[rt->n++] = c;
        if (rt->started)
                return controller_start(c);
        return 0;
}

int runtime_start(Runtime *rt)
{
        int r;

        assert_return(rt, -EINVAL);
        rt->started = true;
        for (size_t i = 0; i < rt->n; i++) {
                r = controller_start(rt->controllers[i]);
                if (r < 0)
                        return r;
        }
        return informer_factory_start(rt->informers);
}

void runtime_kick(Runtime *rt)
{
        for (size_t i = 0; i < rt->n; i++)
                enqueue(rt->controllers[i]);
}

void runtime_kick_etcd_readers(Runtime *rt)
{
        for (size_t i = 0; i < rt->n; i++)
                if (rt->controllers[i]->spec->reads_etcd_view)
                        enqueue(rt->controllers[i]);
}

void runtime_shutdown(Runtime *rt, void (*done)(Runtime *rt, void *userdata), void *userdata)
{
        rt->shutting_down = true;
        for (size_t i = 0; i < rt->n; i++)
                workqueue_shutdown(rt->controllers[i]->queue);
        for (size_t i = 0; i < rt->n; i++)
                if (rt->controllers[i]->key) {
                        rt->on_drained = done;
                        rt->drained_userdata = userdata;
                        return;
                }
        if (done)
                done(rt, userdata);
}

int runtime_enqueue(Runtime *rt, const char *controller)
{
        assert_return(rt && controller, -EINVAL);
        for (size_t i = 0; i < rt->n; i++)
                if (streq(rt->controllers[i]->spec->name, controller)) {
                        if (rt->started && !rt->shutting_down)
                                enqueue(rt->controllers[i]);
                        return 0;
                }
        return -ENOENT;
}

int runtime_get_stats_at(Runtime *rt, size_t i, const char **ret_name, ControllerStats *ret)
{
        assert_return(rt && ret_name && ret, -EINVAL);
        if (i >= rt->n)
                return -ENOENT;
        *ret_name = rt->controllers[i]->spec->name;
        *ret = rt->controllers[i]->stats;
        return 0;
}

int runtime_get_stats(Runtime *rt, const char *controller, ControllerStats *ret)
{
        for (size_t i = 0; i < rt->n; i++)
                if (streq(rt->controllers[i]->spec->name, controller)) {
                        *ret = rt->controllers[i]->stats;
                        return 0;
                }
        return -ENOENT;
}
