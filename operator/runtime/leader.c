/* Lease-based leader election as an asynchronous state machine: one attempt
 * in flight at a time, driven by one timer. A second timer, the renew
 * deadline's, ends the leadership on time even while an attempt hangs (an
 * API server that accepts connections but does not answer): as client-go's
 * renew is bounded by its context, the leader stops acting before its lease
 * can expire for the others, not when a request's own timeout fires. A third,
 * the attempt's, abandons an attempt that has gone unanswered for a third of
 * the renew deadline and starts a fresh one at once, on a new connection: a
 * request that reached a kube-apiserver being replaced (its revision rolling)
 * is never answered, while the next one, through the load balancer, is. */
#include <sys/random.h>

#include "base/backoff.h"
#include "base/json.h"
#include "base/log.h"
#include "leader.h"

struct LeaderElector {
        KubeClient *client;
        char *namespace;
        char *name;
        char *identity;
        usec_t lease_duration, renew_deadline, retry_period;
        LeaderFunc on_started, on_stopped, on_released;
        void *userdata;

        sd_event_source *timer;
        sd_event_source *deadline;     /* as leader: last_renew + renew_deadline */
        sd_event_source *attempt_ends; /* the attempt in flight is abandoned then */
        usec_t attempt_timeout;
        KubeCall *call; /* the attempt's request in flight */
        bool in_flight;
        bool leader;
        bool stopped;
        unsigned release_retries;
        cJSON *observed; /* last lease record seen (spec only) */
        char *observed_rv;
        usec_t observed_time; /* CLOCK_MONOTONIC when the record last changed */
        usec_t last_renew;    /* CLOCK_MONOTONIC of our last successful write as leader */
};

static char *default_identity(void)
{
        char host[256] = "unknown";
        uint8_t u[16];

        (void) gethostname(host, sizeof host - 1);
        if (getrandom(u, sizeof u, 0) != sizeof u)
                return NULL;
        u[6] = (u[6] & 0x0f) | 0x40;
        u[8] = (u[8] & 0x3f) | 0x80;
        return strdup_printf("%s_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", host,
                             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                             u[13], u[14], u[15]);
}

int leader_elector_new(KubeClient *c, const LeaderConfig *cfg, LeaderFunc on_started, LeaderFunc on_stopped,
                       void *userdata, LeaderElector **ret)
{
        _cleanup_(leader_elector_freep) LeaderElector *le = NULL;

        assert_return(c && cfg && cfg->namespace && cfg->name && ret, -EINVAL);
        le = calloc(1, sizeof *le);
        if (!le)
                return -ENOMEM;
        le->client = c;
        le->lease_duration = cfg->lease_duration ? cfg->lease_duration : 137 * USEC_PER_SEC;
        le->renew_deadline = cfg->renew_deadline ? cfg->renew_deadline : 107 * USEC_PER_SEC;
        le->retry_period = cfg->retry_period ? cfg->retry_period : 26 * USEC_PER_SEC;
        if (!(le->lease_duration > le->renew_deadline &&
              (double) le->renew_deadline > 1.2 * (double) le->retry_period))
                return -EINVAL;
        le->attempt_timeout = leader_attempt_timeout(le->renew_deadline);
        le->namespace = strdup(cfg->namespace);
        le->name = strdup(cfg->name);
        le->identity = cfg->identity ? strdup(cfg->identity) : default_identity();
        if (!le->namespace || !le->name || !le->identity)
                return -ENOMEM;
        le->on_started = on_started;
        le->on_stopped = on_stopped;
        le->userdata = userdata;
        *ret = TAKE_PTR(le);
        return 0;
}

usec_t leader_attempt_timeout(usec_t renew_deadline)
{
        return MAX(renew_deadline / 3, USEC_PER_SEC);
}

LeaderElector *leader_elector_free(LeaderElector *le)
{
        if (!le)
                return NULL;
        if (le->call)
                kube_call_cancel(TAKE_PTR(le->call));
        le->attempt_ends = sd_event_source_disable_unref(le->attempt_ends);
        le->timer = sd_event_source_disable_unref(le->timer);
        le->deadline = sd_event_source_disable_unref(le->deadline);
        cJSON_Delete(le->observed);
        free(le->observed_rv);
        free(le->namespace);
        free(le->name);
        free(le->identity);
        return mfree(le);
}

bool leader_elector_is_leader(LeaderElector *le)
{
        return le && le->leader;
}

const char *leader_elector_get_identity(LeaderElector *le)
{
        return le->identity;
}

static void try_once(LeaderElector *le);

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        (void) s;
        (void) usec;
        try_once(userdata);
        return 0;
}

static void arm(LeaderElector *le, usec_t delay)
{
        sd_event *e = loop_get_event(kube_client_get_loop(le->client));
        int r;

        if (le->stopped)
                return;
        if (!le->timer)
                r = sd_event_add_time_relative(e, &le->timer, CLOCK_MONOTONIC, delay, 0, on_timer, le);
        else {
                r = sd_event_source_set_time_relative(le->timer, delay);
                if (r >= 0)
                        r = sd_event_source_set_enabled(le->timer, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                log_error_errno(r, "leader election: cannot arm timer");
}

static void lose(LeaderElector *le, const char *why)
{
        if (!le->leader)
                return;
        le->leader = false;
        le->stopped = true;
        le->deadline = sd_event_source_disable_unref(le->deadline);
        log_error("leader election: lost lease %s/%s: %s", le->namespace, le->name, why);
        if (le->on_stopped)
                le->on_stopped(le, le->userdata);
}

static void arm_deadline(LeaderElector *le);

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
        LeaderElector *le = userdata;

        (void) s;
        (void) usec;
        if (!le->leader)
                return 0;
        /* The timer runs on the loop's clock, which may lag the renewal's own reading. */
        if (now_usec(CLOCK_MONOTONIC) - le->last_renew < le->renew_deadline) {
                arm_deadline(le);
                return 0;
        }
        lose(le, le->in_flight ? "could not renew within the renew deadline (the API server has not "
                                 "answered the last attempt)"
                               : "could not renew within the renew deadline");
        return 0;
}

/* As leader: the leadership ends renew_deadline after the last renewal unless
 * another one lands first. */
static void arm_deadline(LeaderElector *le)
{
        sd_event *e = loop_get_event(kube_client_get_loop(le->client));
        usec_t now = now_usec(CLOCK_MONOTONIC), due = le->last_renew + le->renew_deadline;
        usec_t left = due > now ? due - now : 0;
        int r;

        if (!le->deadline)
                r = sd_event_add_time_relative(e, &le->deadline, CLOCK_MONOTONIC, left, 0, on_deadline, le);
        else {
                r = sd_event_source_set_time_relative(le->deadline, left);
                if (r >= 0)
                        r = sd_event_source_set_enabled(le->deadline, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                log_error_errno(r, "leader election: cannot arm the renew deadline");
}

/* After each attempt: schedule the next one, and check the renew deadline. */
static void attempt_done(LeaderElector *le, bool success)
{
        usec_t now = now_usec(CLOCK_MONOTONIC);

        le->in_flight = false;
        le->call = NULL;
        if (le->attempt_ends)
                (void) sd_event_source_set_enabled(le->attempt_ends, SD_EVENT_OFF);
        if (le->stopped)
                return;
        if (success && le->leader) {
                le->last_renew = now;
                arm_deadline(le);
        }
        if (le->leader && !success && now - le->last_renew > le->renew_deadline) {
                lose(le, "could not renew within the renew deadline");
                return;
        }
        /* Acquiring waits with jitter (x1.2) so candidates do not collide; renewals do not. */
        usec_t d = le->retry_period;
        if (!le->leader)
                d += (usec_t) ((double) le->retry_period * 0.2 * random_unit());
        arm(le, d);
}

static cJSON *lease_body(LeaderElector *le, const cJSON *prev_spec, const char *rv, bool release)
{
        char now[40], acquire[40];
        usec_t rt = now_usec(CLOCK_REALTIME);
        int64_t transitions = 0;
        const char *holder = json_get_string(prev_spec, "holderIdentity");
        const char *prev_acquire = json_get_string(prev_spec, "acquireTime");
        bool was_mine = streq_ptr(holder, le->identity);

        (void) json_get_int64(prev_spec, "leaseTransitions", &transitions);
        if (!format_rfc3339_micro(now, sizeof now, rt))
                return NULL;
        if (was_mine && prev_acquire)
                (void) snprintf(acquire, sizeof acquire, "%s", prev_acquire);
        else
                memcpy(acquire, now, sizeof now);
        if (prev_spec && !was_mine)
                transitions++;

        /* The Lease takes whole seconds. */
        int64_t lease_s = release ? 1 : (int64_t) (le->lease_duration / USEC_PER_SEC);
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        cJSON *md = cJSON_AddObjectToObject(o, "metadata");
        cJSON *spec = cJSON_AddObjectToObject(o, "spec");
        if (!md || !spec || !cJSON_AddStringToObject(o, "apiVersion", "coordination.k8s.io/v1") ||
            !cJSON_AddStringToObject(o, "kind", "Lease") || !cJSON_AddStringToObject(md, "name", le->name) ||
            !cJSON_AddStringToObject(md, "namespace", le->namespace) ||
            (rv && !cJSON_AddStringToObject(md, "resourceVersion", rv)) ||
            !cJSON_AddStringToObject(spec, "holderIdentity", release ? "" : le->identity) ||
            !cJSON_AddNumberToObject(spec, "leaseDurationSeconds", (double) lease_s) ||
            !cJSON_AddStringToObject(spec, "acquireTime", acquire) ||
            !cJSON_AddStringToObject(spec, "renewTime", now) ||
            !cJSON_AddNumberToObject(spec, "leaseTransitions", (double) transitions))
                return NULL;
        return TAKE_PTR(o);
}

static void remember(LeaderElector *le, const cJSON *lease)
{
        const cJSON *spec = json_get_object(lease, "spec");
        const char *rv = json_get_string(lease, "metadata.resourceVersion");

        if (!spec)
                return;
        if (!le->observed || !cJSON_Compare(le->observed, spec, true)) {
                cJSON_Delete(le->observed);
                le->observed = cJSON_Duplicate(spec, true);
                le->observed_time = now_usec(CLOCK_MONOTONIC);
        }
        free(le->observed_rv);
        le->observed_rv = rv ? strdup(rv) : NULL;
}

static void on_write(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        LeaderElector *le = userdata;

        (void) c;
        if (resp->error == -ECANCELED)
                return;  /* the client is being freed: `le` may be gone (a renewal hung past the deadline) */
        le->call = NULL; /* the client frees it after this callback */
        if (resp->error < 0) {
                /* Losing a race (409) is normal; anything else an admin should see. */
                if (resp->error == -ESTALE)
                        log_debug("leader election: lost the race to write the lease");
                else
                        log_warning("leader election: writing lease %s/%s failed: %s%s%s", le->namespace,
                                    le->name, strerror(-resp->error),
                                    resp->status && resp->status->message ? ": " : "",
                                    resp->status && resp->status->message ? resp->status->message : "");
                attempt_done(le, false);
                return;
        }
        remember(le, resp->body);
        if (!le->leader && !le->stopped) {
                le->leader = true;
                le->last_renew = now_usec(CLOCK_MONOTONIC);
                arm_deadline(le);
                log_info("leader election: %s acquired lease %s/%s", le->identity, le->namespace, le->name);
                if (le->on_started)
                        le->on_started(le, le->userdata);
        }
        attempt_done(le, true);
}

/* One request of an attempt, its handle kept so that an abandoned attempt can be cancelled. */
static int lease_call(LeaderElector *le, const char *method, bool with_name, const cJSON *body,
                      KubeCallback cb)
{
        _cleanup_free_ char *path =
                kube_resource_path(&KUBE_LEASES, le->namespace, with_name ? le->name : NULL, NULL);
        if (!path)
                return -ENOMEM;
        return kube_call(le->client, method, path, body, body ? "application/json" : NULL, cb, le,
                         &le->call);
}

static void write_lease(LeaderElector *le, bool create)
{
        _cleanup_(cJSON_Deletep) cJSON *body =
                lease_body(le, create ? NULL : le->observed, create ? NULL : le->observed_rv, false);
        int r = body ? lease_call(le, create ? "POST" : "PUT", !create, body, on_write) : -ENOMEM;
        if (r < 0)
                attempt_done(le, false);
}

static void on_get(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        LeaderElector *le = userdata;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        (void) c;
        if (resp->error == -ECANCELED)
                return; /* the client is being freed: `le` may be gone */
        le->call = NULL;
        if (resp->error == -ENOENT) {
                write_lease(le, true);
                return;
        }
        if (resp->error < 0) {
                attempt_done(le, false);
                return;
        }
        remember(le, resp->body);
        const char *holder = json_get_string(le->observed, "holderIdentity");
        int64_t dur = 0;
        (void) json_get_int64(le->observed, "leaseDurationSeconds", &dur);
        if (holder && *holder && !streq(holder, le->identity) &&
            le->observed_time + (usec_t) MAX(dur, 0) * USEC_PER_SEC > now) {
                log_debug("leader election: lease held by %s", holder);
                if (le->leader)
                        lose(le, "another holder took the lease");
                attempt_done(le, false);
                return;
        }
        write_lease(le, false);
}

/* An attempt unanswered for attempt_timeout: its request is cancelled (curl closes that
 * connection) and a fresh attempt starts at once, while the renew deadline still runs. */
static int on_attempt_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
        LeaderElector *le = userdata;

        (void) s;
        (void) usec;
        if (!le->in_flight)
                return 0;
        if (le->call)
                kube_call_cancel(TAKE_PTR(le->call));
        log_warning("leader election: no answer from the API server for %s within %.1f s; trying again",
                    le->leader ? "the lease renewal" : "the lease",
                    (double) le->attempt_timeout / (double) USEC_PER_SEC);
        attempt_done(le, false);
        if (!le->stopped)
                arm(le, 0);
        return 0;
}

static void arm_attempt_timeout(LeaderElector *le)
{
        sd_event *e = loop_get_event(kube_client_get_loop(le->client));
        int r;

        if (!le->attempt_ends)
                r = sd_event_add_time_relative(e, &le->attempt_ends, CLOCK_MONOTONIC, le->attempt_timeout, 0,
                                               on_attempt_timeout, le);
        else {
                r = sd_event_source_set_time_relative(le->attempt_ends, le->attempt_timeout);
                if (r >= 0)
                        r = sd_event_source_set_enabled(le->attempt_ends, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                log_error_errno(r, "leader election: cannot arm the attempt's timeout");
}

static void try_once(LeaderElector *le)
{
        int r;

        if (le->in_flight || le->stopped)
                return;
        le->in_flight = true;
        arm_attempt_timeout(le);
        /* Fast path: a leader whose lease is locally valid renews its cached record. */
        if (le->leader && le->observed && now_usec(CLOCK_MONOTONIC) - le->last_renew < le->lease_duration) {
                write_lease(le, false);
                return;
        }
        r = lease_call(le, "GET", true, NULL, on_get);
        if (r < 0)
                attempt_done(le, false);
}

int leader_elector_start(LeaderElector *le)
{
        assert_return(le, -EINVAL);
        log_info("leader election: %s trying to acquire lease %s/%s", le->identity, le->namespace, le->name);
        try_once(le);
        return 0;
}

static void released(LeaderElector *le)
{
        if (le->on_released)
                le->on_released(le, le->userdata);
}

static void on_released(KubeClient *c, const KubeResponse *resp, void *userdata);

/* After a conflict: the lease as it is now; released again while it is still ours. */
static void on_release_get(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        LeaderElector *le = userdata;

        if (resp->error == -ECANCELED)
                return; /* the client is being freed: `le` may be gone */
        if (resp->error < 0) {
                log_warning("leader election: reading lease %s/%s to release it failed: %s", le->namespace,
                            le->name, strerror(-resp->error));
                released(le);
                return;
        }
        remember(le, resp->body);
        if (!streq_ptr(json_get_string(le->observed, "holderIdentity"), le->identity)) {
                log_info("leader election: lease %s/%s is no longer ours: nothing to release", le->namespace,
                         le->name);
                released(le);
                return;
        }
        _cleanup_(cJSON_Deletep) cJSON *body = lease_body(le, le->observed, le->observed_rv, true);
        if (!body || kube_update(c, &KUBE_LEASES, body, on_released, le) < 0)
                released(le);
}

static void on_released(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        LeaderElector *le = userdata;

        if (resp->error == -ECANCELED)
                return; /* the client is being freed: `le` may be gone */
        /* A renewal that was in flight when the release was sent may have landed first: the
         * release then carries a stale resourceVersion. Read the lease and release it again,
         * or the next leader waits out the whole lease. */
        if (resp->error == -ESTALE && le->release_retries++ < 3 &&
            kube_get(c, &KUBE_LEASES, le->namespace, le->name, on_release_get, le) >= 0) {
                log_debug("leader election: releasing lease %s/%s: conflict, reading it again",
                          le->namespace, le->name);
                return;
        }
        if (resp->error < 0)
                log_warning("leader election: releasing lease %s/%s failed: %s", le->namespace, le->name,
                            strerror(-resp->error));
        else
                log_info("leader election: released lease %s/%s", le->namespace, le->name);
        released(le);
}

int leader_elector_release(LeaderElector *le, LeaderFunc done)
{
        assert_return(le, -EINVAL);
        bool was_leader = le->leader;
        le->stopped = true;
        le->leader = false;
        le->timer = sd_event_source_disable_unref(le->timer);
        le->deadline = sd_event_source_disable_unref(le->deadline);
        le->attempt_ends = sd_event_source_disable_unref(le->attempt_ends);
        le->on_released = done;
        if (!was_leader || !le->observed) {
                if (done)
                        done(le, le->userdata);
                return 0;
        }
        _cleanup_(cJSON_Deletep) cJSON *body = lease_body(le, le->observed, le->observed_rv, true);
        if (!body)
                return -ENOMEM;
        return kube_update(le->client, &KUBE_LEASES, body, on_released, le);
}
