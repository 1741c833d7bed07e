/* Event recorder with a small correlation cache. A write the server did not
 * take for a passing reason (5xx, no connection) is sent again a few times, as
 * client-go's recorder does: an event is often written at the very moment the
 * cluster changes under it (seen: the ScaleDown event of a member removal
 * answered 500 "raft: stopped" by the member being removed). */
#include <stdarg.h>
#include <systemd/sd-event.h>

#include "base/hashmap.h"
#include "base/json.h"
#include "base/log.h"
#include "events.h"

#define DEDUP_WINDOW (10 * 60 * USEC_PER_SEC)
#define MAX_TRACKED  256
/* Then dropped. Tries go 1 s, 2 s, ... 10 s apart, then every 10 s: about a minute in all,
 * as client-go's recorder keeps trying (12 tries, 10 s apart). A member removal can make the
 * API answer 5xx for longer than a few seconds while kube-apiserver moves off the member. */
#define MAX_TRIES       12
#define MAX_RETRY_DELAY 10

typedef struct Seen {
        char *event_name; /* NULL until the create succeeded */
        unsigned count;
        usec_t first, last;
        bool pending;
} Seen;

struct EventRecorder {
        KubeClient *client;
        char *component, *host, *api_version, *kind, *namespace, *name, *uid;
        Hashmap *seen; /* "type|reason|message" -> Seen */
        struct Pending *pending;
        uint64_t written, dropped, serial;
};

/* A write in flight. If the recorder goes first, `rec` is cleared and the
 * callback only frees this. */
typedef struct Pending {
        EventRecorder *rec;
        char *key;
        struct Pending *next;
        cJSON *body;            /* a create's Event, to send again */
        unsigned tries;         /* writes sent so far */
        sd_event_source *retry; /* set while waiting to send again (no write in flight) */
} Pending;

static void pending_free(Pending *p)
{
        sd_event_source_disable_unref(p->retry);
        cJSON_Delete(p->body);
        free(p->key);
        free(p);
}

static void seen_free(void *p)
{
        Seen *s = p;
        if (!s)
                return;
        free(s->event_name);
        free(s);
}

EventRecorder *event_recorder_free(EventRecorder *r)
{
        if (!r)
                return NULL;
        /* A write in flight frees its Pending in on_done; one waiting to be sent again goes now. */
        for (Pending *p = r->pending, *next; p; p = next) {
                next = p->next;
                if (p->retry)
                        pending_free(p);
                else
                        p->rec = NULL;
        }
        hashmap_free(r->seen);
        free(r->component);
        free(r->host);
        free(r->api_version);
        free(r->kind);
        free(r->namespace);
        free(r->name);
        free(r->uid);
        return mfree(r);
}

static bool dup_opt(char **dst, const char *src)
{
        *dst = src ? strdup(src) : NULL;
        return !src || *dst;
}

EventRecorder *event_recorder_new(KubeClient *c, const EventSource *src)
{
        _cleanup_(event_recorder_freep) EventRecorder *r = calloc(1, sizeof *r);

        if (!r || !c || !src || !src->component || !src->kind || !src->namespace || !src->name)
                return NULL;
        r->client = c;
        r->seen = hashmap_new(seen_free);
        if (!r->seen || !dup_opt(&r->component, src->component) || !dup_opt(&r->host, src->host) ||
            !dup_opt(&r->api_version, src->api_version ? src->api_version : "v1") ||
            !dup_opt(&r->kind, src->kind) || !dup_opt(&r->namespace, src->namespace) ||
            !dup_opt(&r->name, src->name) || !dup_opt(&r->uid, src->uid))
                return NULL;
        return TAKE_PTR(r);
}

void event_recorder_get_counts(EventRecorder *r, uint64_t *written, uint64_t *dropped)
{
        if (written)
                *written = r->written;
        if (dropped)
                *dropped = r->dropped;
}

static void on_done(KubeClient *c, const KubeResponse *resp, void *userdata);

static bool passing(int error)
{
        switch (error) {
        case -EREMOTEIO: /* 5xx */
        case -EBUSY:     /* 429 */
        case -ETIMEDOUT:
        case -ECONNRESET:
        case -ECONNREFUSED:
        case -EPIPE:
        case -EAGAIN:
        case -EHOSTUNREACH:
        case -ENETUNREACH:
                return true;
        default:
                return false;
        }
}

static int on_retry(sd_event_source *src, uint64_t usec, void *userdata)
{
        Pending *p = userdata;
        EventRecorder *r = p->rec;

        (void) src;
        (void) usec;
        p->retry = sd_event_source_disable_unref(p->retry);
        p->tries++;
        if (kube_create(r->client, &KUBE_EVENTS, r->namespace, p->body, on_done, p) < 0) {
                KubeResponse failed = {.error = -ENOMEM};
                on_done(r->client, &failed, p);
        }
        return 0;
}

/* Arms the next try of a create that failed for a passing reason; false when there is none. */
static bool retry_later(EventRecorder *r, Pending *p, int error)
{
        if (!p->body || !passing(error) || p->tries >= MAX_TRIES)
                return false;
        Loop *l = kube_client_get_loop(r->client);
        if (sd_event_add_time_relative(loop_get_event(l), &p->retry, CLOCK_MONOTONIC,
                                       MIN(p->tries, MAX_RETRY_DELAY) * USEC_PER_SEC, 0, on_retry, p) < 0)
                return false;
        log_debug("event %s: not recorded (%s), sending it again in %u s", p->key, strerror(-error),
                  MIN(p->tries, MAX_RETRY_DELAY));
        return true;
}

static void on_done(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Pending *p = userdata;
        EventRecorder *r = p->rec;
        int error = resp->error;

        (void) c;
        if (!r) {
                pending_free(p);
                return;
        }
        /* A try after one whose outcome was unknown may find it written. */
        if (error == -EEXIST && p->tries > 1)
                error = 0;
        if (error < 0 && retry_later(r, p, error))
                return; /* stays pending, its Seen too */
        for (Pending **pp = &r->pending; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        break;
                }
        Seen *s = hashmap_get(r->seen, p->key);
        if (error < 0) {
                r->dropped++;
                /* Said where an admin reads: a runbook step may look for this event. */
                log_warning("event %s: not recorded: %s (writes sent: %u)", p->key, strerror(-error),
                            p->tries);
                /* Forget it, so the next occurrence creates a fresh event. */
                if (s && !s->event_name) {
                        (void) hashmap_remove(r->seen, p->key); /* frees s */
                        s = NULL;
                }
        } else {
                r->written++;
                const char *name = resp->body ? json_get_string(resp->body, "metadata.name") : NULL;
                if (!name && p->body)
                        name = json_get_string(p->body, "metadata.name");
                if (s && !s->event_name && name)
                        s->event_name = strdup(name);
        }
        if (s)
                s->pending = false;
        pending_free(p);
}

static void expire(EventRecorder *r, usec_t now)
{
        HashmapIter it;
        const char *key;
        Seen *s;

        HASHMAP_FOREACH (key, s, r->seen, it)
                if (!s->pending && (now - s->last > DEDUP_WINDOW || hashmap_size(r->seen) > MAX_TRACKED))
                        (void) hashmap_remove(r->seen, key);
}

static cJSON *build_event(EventRecorder *r, const char *type, const char *reason, const char *msg,
                          const char *ts)
{
        _cleanup_(cJSON_Deletep) cJSON *e = cJSON_CreateObject();
        _cleanup_free_ char *name =
                strdup_printf("%s.%llx%04llx", r->name, (unsigned long long) now_usec(CLOCK_REALTIME),
                              (unsigned long long) (r->serial++ & 0xffff));
        cJSON *md = cJSON_AddObjectToObject(e, "metadata");
        cJSON *io = cJSON_AddObjectToObject(e, "involvedObject");
        cJSON *src = cJSON_AddObjectToObject(e, "source");

        if (!name || !md || !io || !src || !cJSON_AddStringToObject(e, "apiVersion", "v1") ||
            !cJSON_AddStringToObject(e, "kind", "Event") || !cJSON_AddStringToObject(md, "name", name) ||
            !cJSON_AddStringToObject(md, "namespace", r->namespace) ||
            !cJSON_AddStringToObject(io, "apiVersion", r->api_version) ||
            !cJSON_AddStringToObject(io, "kind", r->kind) ||
            !cJSON_AddStringToObject(io, "namespace", r->namespace) ||
            !cJSON_AddStringToObject(io, "name", r->name) ||
            (r->uid && !cJSON_AddStringToObject(io, "uid", r->uid)) ||
            !cJSON_AddStringToObject(e, "reason", reason) || !cJSON_AddStringToObject(e, "message", msg) ||
            !cJSON_AddStringToObject(e, "type", type) || !cJSON_AddStringToObject(e, "firstTimestamp", ts) ||
            !cJSON_AddStringToObject(e, "lastTimestamp", ts) || !cJSON_AddNumberToObject(e, "count", 1) ||
            !cJSON_AddStringToObject(e, "reportingComponent", r->component) ||
            !cJSON_AddStringToObject(src, "component", r->component) ||
            (r->host && !cJSON_AddStringToObject(src, "host", r->host)))
                return NULL;
        return TAKE_PTR(e);
}

void event_record(EventRecorder *r, bool warning, const char *reason, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL, *key = NULL;
        _cleanup_(cJSON_Deletep) cJSON *body = NULL;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        const char *type = warning ? "Warning" : "Normal";
        char ts[40];
        va_list ap;
        int e;

        if (!r || !reason || !fmt)
                return;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (!msg || !(key = strdup_printf("%s|%s|%s", type, reason, msg)) ||
            !format_rfc3339(ts, sizeof ts, now_usec(CLOCK_REALTIME))) {
                r->dropped++;
                return;
        }
        expire(r, now);
        Seen *s = hashmap_get(r->seen, key);
        if (s && s->pending) {
                /* The first write is still in flight; counting it later is not worth a race. */
                s->count++;
                return;
        }
        Pending *p = calloc(1, sizeof *p);
        if (!p || !(p->key = strdup(key))) {
                free(p);
                r->dropped++;
                return;
        }
        p->rec = r;
        if (s && s->event_name) {
                s->count++;
                s->last = now;
                s->pending = true;
                body = cJSON_CreateObject();
                if (body && cJSON_AddNumberToObject(body, "count", s->count) &&
                    cJSON_AddStringToObject(body, "lastTimestamp", ts))
                        e = kube_patch(r->client, &KUBE_EVENTS, r->namespace, s->event_name, NULL,
                                       KUBE_PATCH_MERGE, body, NULL, false, on_done, p);
                else
                        e = -ENOMEM;
        } else {
                s = calloc(1, sizeof *s);
                if (!s || hashmap_put(r->seen, key, s) < 0) {
                        seen_free(s);
                        e = -ENOMEM;
                } else {
                        *s = (Seen){.count = 1, .first = now, .last = now, .pending = true};
                        body = build_event(r, type, reason, msg, ts);
                        p->body = body ? cJSON_Duplicate(body, true) : NULL;
                        p->tries = 1;
                        e = p->body ? kube_create(r->client, &KUBE_EVENTS, r->namespace, body, on_done, p)
                                    : -ENOMEM;
                }
        }
        if (e < 0) {
                r->dropped++;
                (void) hashmap_remove(r->seen, key);
                pending_free(p);
                return;
        }
        p->next = r->pending;
        r->pending = p;
}
