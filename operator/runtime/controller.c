/* Controller runtime: work queues on the loop, scheduling, informer events
 * and the public API. Plans are carried out by executor.c and end in
 * status-writer.c (runtime-internal.h). */
#include "base/json.h"
#include "base/log.h"
#include "runtime/runtime-internal.h"

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
/* How often an informer of a resource that is not served (no CRD) looks again. */
#define OPTIONAL_RECHECK (30 * USEC_PER_SEC)

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
        free(c->unsettled);
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
                rt->status_informer = informer_factory_get(f, rt->cfg.status_res, NULL, NULL, NULL);
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

void runtime_finish_key(Controller *c)
{
        Runtime *rt = c->rt;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        c->stats.last_sync_duration = now - c->sync_started;
        c->last_alive = now;
        if (!c->conflicted)
                c->conflict_streak = 0;
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

/* Why controllers must not act (spec.managementState of the status object is
 * Unmanaged or Removed), or NULL when they may. */
static const char *runtime_unmanaged(Runtime *rt)
{
        if (!rt->status_informer)
                return NULL;
        const KubeObject *o = informer_get(rt->status_informer, NULL, rt->cfg.status_name);
        const char *state = o ? json_get_string(o->json, "spec.managementState") : NULL;
        if (streq_ptr(state, "Unmanaged"))
                return "spec.managementState is Unmanaged: not syncing until it is Managed";
        if (streq_ptr(state, "Removed"))
                return "spec.managementState is Removed: not syncing (this operator does not remove etcd)";
        return NULL;
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
        c->last_alive = now_usec(CLOCK_MONOTONIC);
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
        /* spec.managementState Unmanaged or Removed: hands off, as library-go's controllers. */
        const char *unmanaged = c->spec->runs_unmanaged ? NULL : runtime_unmanaged(rt);
        if (unmanaged != NULL || c->unmanaged) {
                if ((unmanaged != NULL) != c->unmanaged)
                        log_info("%s: %s", c->spec->name,
                                 unmanaged ? unmanaged : "spec.managementState is Managed again: syncing");
                c->unmanaged = unmanaged != NULL;
        }
        if (unmanaged) {
                workqueue_done(c->queue, c->key);
                /* Not every controller watches the status object: look again in a while. */
                (void) workqueue_add_after(c->queue, c->key, mono + UNMANAGED_POLL);
                c->key = mfree(c->key);
                arm_timer(c);
                return 0;
        }
        SyncContext ctx = {.spec = c->spec,
                           .key = c->key,
                           .now = now_usec(CLOCK_REALTIME),
                           .informers = rt->informers,
                           .etcd = rt->cfg.etcd_snapshot ? rt->cfg.etcd_snapshot(rt->cfg.userdata) : NULL,
                           .state = rt->cfg.state};
        c->sync_started = now_usec(CLOCK_MONOTONIC);
        c->stats.syncs++;
        c->plan = (Plan){};
        c->first_error = 0;
        log_set_controller(c->spec->name);
        int r = c->spec->sync(&ctx, &c->plan);
        note_cost(c, now_usec(CLOCK_MONOTONIC) - c->sync_started);
        if (r >= 0 && c->plan.error < 0)
                r = c->plan.error;
        if (r < 0) {
                runtime_note_failure(c, r, NULL, NULL);
                /* A sync that could not decide writes nothing but its conditions and events. */
                plan_drop_writes(&c->plan);
        } else
                note_waiting(c);
        runtime_execute(c);
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

        c->last_alive = now_usec(CLOCK_MONOTONIC);
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
                const WatchSpec *w = spec->watches[k];
                Informer *inf = informer_factory_get(rt->informers, w->res, w->namespace, w->label_selector,
                                                     w->name);
                if (inf && w->res->optional)
                        informer_set_optional(inf, OPTIONAL_RECHECK);
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

bool runtime_check_alive(Runtime *rt, usec_t now, char *why, size_t size)
{
        if (!rt || !rt->started || rt->shutting_down)
                return true; /* a standby, or stopping: nothing is expected of the controllers */
        for (size_t i = 0; i < rt->n; i++) {
                const Controller *c = rt->controllers[i];
                if (c->key && now > c->sync_started && now - c->sync_started > ALIVE_PLAN_MAX) {
                        (void) snprintf(why, size, "%s has been carrying out one plan for %llu s",
                                        c->spec->name,
                                        (unsigned long long) ((now - c->sync_started) / USEC_PER_SEC));
                        return false;
                }
                usec_t idle = MAX(3 * c->spec->resync, ALIVE_IDLE_MIN);
                if (c->spec->resync && !c->key && now > c->last_alive && now - c->last_alive > idle) {
                        (void) snprintf(why, size, "%s has not synced for %llu s (it resyncs every %llu s)",
                                        c->spec->name,
                                        (unsigned long long) ((now - c->last_alive) / USEC_PER_SEC),
                                        (unsigned long long) (c->spec->resync / USEC_PER_SEC));
                        return false;
                }
        }
        return true;
}
