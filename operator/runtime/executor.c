/* The plan executor: carries out a sync's intents one at a time (Kubernetes
 * writes, APPLY as GET + merge + PUT with conflict retries, membership
 * changes through the etcd client with their "already done" and "not yet"
 * answers), records what the server said about failures, and the writes the
 * next sync must wait to see (expectations). Ends in the status writer. */
#include "base/backoff.h"
#include "base/json.h"
#include "base/log.h"
#include "etcd/view.h"
#include "runtime/apply.h"
#include "runtime/runtime-internal.h"

static void run_next_intent(Controller *c);

static bool is_etcd_intent(const Intent *i)
{
        return i && intent_is_etcd(i);
}

/* `message`: what the server said (a Status message, etcd's error), or NULL;
 * without one, the error in the words of the API it came from. */
void runtime_note_failure(Controller *c, int error, const Intent *i, const char *message)
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

/* Our cache is behind the server for this intent's object: the next sync waits
 * until the informers show it at `rv` or newer (0: gone), with a delay that
 * grows while plans keep meeting this; the streak ends with a plan that meets
 * none (runtime_finish_key). */
static void cache_behind(Controller *c, const Intent *i, uint64_t rv, const char *why)
{
        _cleanup_free_ char *what = intent_describe(i);
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (i->name && i->res)
                (void) expectations_add(c->expect, c->spec->watches, c->spec->n_watches, i->res,
                                        i->namespace, i->name, rv, NULL, now + EXPECTATION_TIMEOUT);
        if (!c->conflicted)
                c->conflict_streak++;
        c->conflicted = true;
        usec_t delay = backoff_exponential(CONFLICT_DELAY, CONFLICT_DELAY_MAX, c->conflict_streak - 1);
        log_debug("%s: %s (%u plans in a row); syncing again in %llu ms, from caches past it",
                  strempty(what), why, c->conflict_streak, (unsigned long long) (delay / USEC_PER_MSEC));
        plan_requeue_after(&c->plan, delay);
}

static void intent_finished(Controller *c, int error, const char *message)
{
        const Intent *i = &c->plan.intents[c->next];
        /* A conflict or an object that already exists means our cache is behind the
         * server: no Degraded, but the next sync waits until the informers show the
         * object newer than what this plan was built from (a resourceVersion past the
         * one sent, or the object at all). */
        if ((error == -ESTALE || error == -EEXIST) && i->type != INTENT_ETCD_ADD_LEARNER) {
                uint64_t sent = 0;
                if (error == -ESTALE && i->object)
                        (void) json_get_uint64(i->object, "metadata.resourceVersion", &sent);
                cache_behind(c, i, sent + 1, strerror(-error));
                error = 0;
        }
        if (error < 0)
                runtime_note_failure(c, error, i, message);
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
                /* A write that lifted the last finalizer of an object being deleted: the server
                 * deleted it and answered with the resourceVersion it had before, which the cache
                 * already shows. The next sync must not plan from that copy (finalizer and all:
                 * e2e/redeploy saw an S3 purge Job made again 23 ms after its Backup went). */
                if (name && json_get_string(resp->body, "metadata.deletionTimestamp") &&
                    cJSON_GetArraySize(json_get_array(resp->body, "metadata.finalizers")) == 0) {
                        (void) expectations_add_gone(c->expect, c->spec->watches, c->spec->n_watches, i->res,
                                                     ns, name, json_get_string(resp->body, "metadata.uid"),
                                                     now_usec(CLOCK_MONOTONIC) + EXPECTATION_TIMEOUT);
                        return;
                }
        }
        if (!name)
                return;
        (void) expectations_add(c->expect, c->spec->watches, c->spec->n_watches, i->res, ns, name, rv,
                                i->type == INTENT_DELETE ? i->precondition_uid : NULL,
                                now_usec(CLOCK_MONOTONIC) + EXPECTATION_TIMEOUT);
}

/* ---- writes whose outcome is unknown ----
 *
 * A 504 Timeout ("may still be processing the request"), another 5xx, or a
 * connection that broke or timed out once the request was out: the server
 * may have carried the write out. Sending it again from the same cache
 * could repeat a write that landed (or undo what came after it), so the
 * object is read back first: what the server has now settles the outcome,
 * and the next sync plans from a cache at least that new. While the read
 * fails too, the outcome stays unsettled: the next write of that object
 * reads it first and is not sent unless that read works. */

static bool is_kube_write(const Intent *i)
{
        switch (i->type) {
        case INTENT_APPLY:
        case INTENT_CREATE:
        case INTENT_UPDATE:
        case INTENT_UPDATE_STATUS:
        case INTENT_PATCH:
        case INTENT_DELETE:
                return i->res && i->name;
        default:
                return false;
        }
}

static char *object_key(const Intent *i)
{
        return strdup_printf("%s %s%s%s", i->res->plural, strempty(i->namespace), i->namespace ? "/" : "",
                             i->name);
}

static bool is_unsettled(const Controller *c, const Intent *i)
{
        _cleanup_free_ char *key = NULL;
        return c->unsettled && is_kube_write(i) && (key = object_key(i)) && streq(key, c->unsettled);
}

static int send_write(Controller *c, const Intent *i);
static void on_intent_done(KubeClient *kc, const KubeResponse *resp, void *userdata);

static void on_settling_read(KubeClient *kc, const KubeResponse *resp, void *userdata)
{
        Controller *c = userdata;

        (void) kc;
        if (resp->error == -ECANCELED)
                return; /* the runtime is being freed: `c` may be gone */
        log_set_controller(c->spec->name);
        const Intent *i = &c->plan.intents[c->next];
        _cleanup_free_ char *what = intent_describe(i);
        const char *unknown = kube_strerror(c->settling_error);
        if (resp->error < 0 && resp->error != -ENOENT) {
                free(c->unsettled);
                c->unsettled = object_key(i);
                c->unsettled_error = c->settling_error;
                log_warning("%s: outcome unknown (%s), and reading the object back failed too (%s): it is "
                            "not written again until a read says what the server has",
                            strempty(what), unknown, kube_strerror(resp->error));
                intent_finished(c, c->settling_before_send ? resp->error : c->settling_error,
                                resp->status ? resp->status->message : NULL);
                return;
        }
        uint64_t rv = 0;
        if (resp->error == 0)
                (void) json_get_uint64(resp->body, "metadata.resourceVersion", &rv);
        /* Before a write: when our cache already showed what the server has as the read went
         * out (the plan was made from it), the write is what is still needed. A cache that
         * caught up only while the read was out says nothing of the plan: that one was made
         * from an older version and would repeat what landed. An object no informer of ours
         * watches was not planned from a cache: the read has settled what there is to know. */
        bool covered =
                expectations_covered(c->spec->watches, c->spec->n_watches, i->res, i->namespace, i->name);
        if (c->settling_before_send && (!covered || c->settling_cached_rv == rv)) {
                c->unsettled = mfree(c->unsettled);
                log_info("%s: the server has the object %s%s: writing it", strempty(what),
                         rv ? "unchanged" : "absent", covered ? ", as our cache does" : "");
                int r = send_write(c, i);
                if (r < 0)
                        intent_finished(c, r, NULL);
                return;
        }
        /* Our cache is behind what the server has: the next write of this object reads it again
         * first and goes only once the cache shows it (a plan from a cache that has not caught up
         * within the expectation's deadline would repeat what landed). */
        if (!is_unsettled(c, i)) {
                /* One slot per controller: the newest unknown outcome takes it. */
                free(c->unsettled);
                c->unsettled = object_key(i);
                c->unsettled_error = c->settling_error;
        }
        _cleanup_free_ char *now = rv ? strdup_printf("at resourceVersion %" PRIu64, rv) : strdup("absent");
        log_info("%s: outcome unknown (%s); the server has the object %s: planning again from there",
                 strempty(what), unknown, strempty(now));
        cache_behind(c, i, rv, "outcome unknown");
        intent_finished(c, 0, NULL);
}

/* Reads the current intent's object to settle a write's unknown outcome (`error`). */
static void settle_outcome(Controller *c, int error, bool before_send)
{
        const Intent *i = &c->plan.intents[c->next];

        c->settling_error = error;
        c->settling_before_send = before_send;
        c->settling_cached_rv = expectations_cached_rv(c->spec->watches, c->spec->n_watches,
                                                       c->rt->informers, i->res, i->namespace, i->name);
        int r = kube_get(c->rt->client, i->res, i->namespace, i->name, on_settling_read, c);
        if (r < 0) {
                KubeResponse resp = {.error = r};
                on_settling_read(c->rt->client, &resp, c);
        }
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
        if (e < 0 && runtime_outcome_unknown(e) && is_kube_write(i)) {
                _cleanup_free_ char *what = intent_describe(i);
                log_info("%s: %s: the write may have been carried out; reading the object back",
                         strempty(what),
                         resp->status && resp->status->message ? resp->status->message : kube_strerror(e));
                settle_outcome(c, e, false);
                return;
        }
        if (e >= 0 && i->type != INTENT_EVENT && i->type != INTENT_CONDITION) {
                _cleanup_free_ char *what = intent_describe(i);
                log_debug("%s done", what);
                expect_write(c, i, resp);
                if (is_unsettled(c, i))
                        c->unsettled = mfree(c->unsettled);
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

/* An etcd step was carried out (or found done): the next one of any controller waits for a
 * view taken after it, and the view is asked for one now. */
static void etcd_changed(Controller *c)
{
        c->rt->last_etcd_change = now_usec(CLOCK_MONOTONIC);
        if (c->rt->cfg.on_etcd_change)
                c->rt->cfg.on_etcd_change(c->rt->cfg.userdata);
}

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
                etcd_changed(c);
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
                [INTENT_ETCD_UPDATE_PEER] = "MemberUpdate",
        };
        event_record(c->rt->recorder, false, reasons[i->type], "%s", what);
        etcd_changed(c);
        intent_finished(c, 0, NULL);
}

/* ---- etcd maintenance ---- */

static EtcdMaintKind maint_kind(IntentType t)
{
        switch (t) {
        case INTENT_ETCD_DEFRAGMENT:
                return ETCD_MAINT_DEFRAG;
        case INTENT_ETCD_COMPACT:
                return ETCD_MAINT_COMPACT;
        case INTENT_ETCD_DISARM:
                return ETCD_MAINT_DISARM;
        case INTENT_ETCD_MOVE_LEADER:
                return ETCD_MAINT_MOVE_LEADER;
        case INTENT_ETCD_DOWNGRADE:
                return ETCD_MAINT_DOWNGRADE;
        default:
                return _ETCD_MAINT_KIND_INVALID;
        }
}

/* A maintenance step ends in the maintenance log and an event either way; its
 * failure is not the sync's (the controller judges failures in a row from the
 * log), and the next etcd step of any controller waits for a view taken after it. */
static void on_maint_done(EtcdClient *ec, const EtcdResponse *resp, void *userdata)
{
        static const char *const ok_reasons[_INTENT_TYPE_MAX] = {
                [INTENT_ETCD_DEFRAGMENT] = "DefragControllerDefragmentSuccess",
                [INTENT_ETCD_COMPACT] = "EtcdCompacted",
                [INTENT_ETCD_DISARM] = "EtcdAlarmDisarmed",
                [INTENT_ETCD_MOVE_LEADER] = "EtcdLeaderMoved",
                [INTENT_ETCD_DOWNGRADE] = "EtcdDowngrade",
        };
        static const char *const failed_reasons[_INTENT_TYPE_MAX] = {
                [INTENT_ETCD_DEFRAGMENT] = "DefragControllerDefragmentFailed",
                [INTENT_ETCD_COMPACT] = "EtcdCompactFailed",
                [INTENT_ETCD_DISARM] = "EtcdAlarmDisarmFailed",
                [INTENT_ETCD_MOVE_LEADER] = "EtcdLeaderMoveFailed",
                [INTENT_ETCD_DOWNGRADE] = "EtcdDowngradeFailed",
        };
        Controller *c = userdata;
        int e = resp->error;

        (void) ec;
        if (e == -ECANCELED)
                return; /* the client is being freed: `c` may be gone */
        log_set_controller(c->spec->name);
        const Intent *i = &c->plan.intents[c->next];
        _cleanup_free_ char *what = intent_describe(i);
        usec_t now = now_usec(CLOCK_REALTIME);
        double took = (double) (now - MIN(now, c->etcd_started)) / (double) USEC_PER_SEC;
        if (i->type == INTENT_ETCD_COMPACT && e == ETCD_ERR_COMPACTED) {
                log_info("%s: already compacted that far", what);
                e = 0;
        }
        EtcdMaintRecord rec = {.kind = maint_kind(i->type),
                               .member_id = i->member_id,
                               .from_id = i->from_id,
                               .revision = i->revision,
                               .started = c->etcd_started,
                               .finished = now,
                               .error = e};
        etcd_maint_log_add(c->rt->cfg.maint_log, &rec);
        etcd_changed(c);
        if (e < 0) {
                const char *why = resp->message && *resp->message ? resp->message : etcd_strerror(e);
                log_warning("%s failed after %.1f s: %s", what, took, why);
                event_record(c->rt->recorder, true, failed_reasons[i->type], "%s failed after %.1f s: %s",
                             what, took, why);
                plan_requeue_after(&c->plan, MAINT_RETRY_DELAY);
        } else {
                log_info("%s: done in %.1f s", what, took);
                event_record(c->rt->recorder, false, ok_reasons[i->type], "%s: done in %.1f s%s%s%s", what,
                             took, i->detail ? " (before: " : "", strempty(i->detail), i->detail ? ")" : "");
        }
        intent_finished(c, 0, NULL);
}

static void on_downgrade_validated(EtcdClient *ec, const EtcdResponse *resp, void *userdata)
{
        Controller *c = userdata;
        if (resp->error < 0) {
                on_maint_done(ec, resp, userdata);
                return;
        }
        const Intent *i = &c->plan.intents[c->next];
        int r = etcd_downgrade(ec, "ENABLE", i->version, on_maint_done, c);
        if (r < 0) {
                EtcdResponse failed = {.error = r};
                on_maint_done(ec, &failed, userdata);
        }
}

static int run_maint_intent(Controller *c, const Intent *i)
{
        EtcdClient *ec = c->rt->cfg.etcd;

        c->etcd_started = now_usec(CLOCK_REALTIME);
        switch (i->type) {
        case INTENT_ETCD_DEFRAGMENT:
                event_record(c->rt->recorder, false, "DefragControllerDefragmentAttempt",
                             "defragmenting etcd member %s (%s)", i->name, strempty(i->detail));
                return etcd_defragment(ec, i->endpoint, DEFRAG_TIMEOUT, on_maint_done, c);
        case INTENT_ETCD_COMPACT:
                return etcd_kv_compact(ec, i->revision, true, on_maint_done, c);
        case INTENT_ETCD_DISARM:
                return etcd_alarm_disarm(ec, i->member_id, i->alarm, on_maint_done, c);
        case INTENT_ETCD_MOVE_LEADER:
                return etcd_move_leader(ec, i->endpoint, i->member_id, on_maint_done, c);
        case INTENT_ETCD_DOWNGRADE:
                /* ENABLE is validated first, as `etcdctl downgrade` asks it to be: a refused
                 * validation ends the step with etcd's reason and enables nothing. */
                if (streq_ptr(i->action, "ENABLE"))
                        return etcd_downgrade(ec, "VALIDATE", i->version, on_downgrade_validated, c);
                return etcd_downgrade(ec, i->action, i->version, on_maint_done, c);
        default:
                return -EINVAL;
        }
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
        /* Whatever the plan was made from: while members report different cluster IDs
         * nothing is changed in either cluster (op_etcd hides the lists from the syncs;
         * this holds for a plan made just before the split was seen). A failure, so the
         * controller's Degraded condition says it. */
        const EtcdViewSnapshot *now =
                c->rt->cfg.etcd_snapshot ? c->rt->cfg.etcd_snapshot(c->rt->cfg.userdata) : NULL;
        if (now && now->split_brain) {
                log_warning("%s: refused: %s", what, strempty(now->split_brain_detail));
                return ETCD_ERR_SPLIT_BRAIN;
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
        case INTENT_ETCD_UPDATE_PEER:
                return etcd_member_update(ec, i->member_id, &i->peer_url, 1, on_etcd_done, c);
        default:
                return run_maint_intent(c, i);
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
                runtime_write_conditions(c, false);
                return;
        }
        const Intent *i = &c->plan.intents[c->next];
        c->stats.intents++;
        if (is_unsettled(c, i)) {
                _cleanup_free_ char *what = intent_describe(i);
                log_info("%s: the last write of this object has an unknown outcome (%s); reading it first",
                         strempty(what), kube_strerror(c->unsettled_error));
                settle_outcome(c, c->unsettled_error, true);
                return;
        }
        switch (i->type) {
        case INTENT_APPLY:
        case INTENT_CREATE:
        case INTENT_UPDATE:
        case INTENT_UPDATE_STATUS:
        case INTENT_PATCH:
        case INTENT_DELETE:
                r = send_write(c, i);
                break;
        case INTENT_ETCD_ADD_LEARNER:
        case INTENT_ETCD_PROMOTE:
        case INTENT_ETCD_REMOVE:
        case INTENT_ETCD_UPDATE_PEER:
        case INTENT_ETCD_DEFRAGMENT:
        case INTENT_ETCD_COMPACT:
        case INTENT_ETCD_DISARM:
        case INTENT_ETCD_MOVE_LEADER:
        case INTENT_ETCD_DOWNGRADE:
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

static int send_write(Controller *c, const Intent *i)
{
        Runtime *rt = c->rt;

        switch (i->type) {
        case INTENT_APPLY:
                return kube_get(rt->client, i->res, i->namespace, i->name, on_apply_get, c);
        case INTENT_CREATE:
                return kube_create(rt->client, i->res, i->namespace, i->object, on_intent_done, c);
        case INTENT_UPDATE:
                return kube_update(rt->client, i->res, i->object, on_intent_done, c);
        case INTENT_UPDATE_STATUS:
                return kube_update_status(rt->client, i->res, i->object, on_intent_done, c);
        case INTENT_PATCH:
                return kube_patch(rt->client, i->res, i->namespace, i->name, NULL, i->patch_type, i->object,
                                  "cluster-etcd-operator", false, on_intent_done, c);
        case INTENT_DELETE:
                return kube_delete(rt->client, i->res, i->namespace, i->name, i->precondition_uid, NULL,
                                   on_intent_done, c);
        default:
                return -EINVAL;
        }
}

void runtime_execute(Controller *c)
{
        c->next = 0;
        c->conflicts = 0;
        c->conflicted = false;
        run_next_intent(c);
}
