/* Event recorder with a small correlation cache. */
#include <stdarg.h>

#include "base/hashmap.h"
#include "base/json.h"
#include "base/log.h"
#include "events.h"

#define DEDUP_WINDOW (10 * 60 * USEC_PER_SEC)
#define MAX_TRACKED  256

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
} Pending;

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
        for (Pending *p = r->pending; p; p = p->next)
                p->rec = NULL;
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

static void on_done(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Pending *p = userdata;
        EventRecorder *r = p->rec;

        (void) c;
        if (!r) {
                free(p->key);
                free(p);
                return;
        }
        for (Pending **pp = &r->pending; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        break;
                }
        Seen *s = hashmap_get(r->seen, p->key);
        if (resp->error < 0) {
                r->dropped++;
                log_debug("event %s: not recorded: %s", p->key, strerror(-resp->error));
                /* Forget it, so the next occurrence creates a fresh event. */
                if (s && !s->event_name) {
                        (void) hashmap_remove(r->seen, p->key); /* frees s */
                        s = NULL;
                }
        } else {
                r->written++;
                const char *name = json_get_string(resp->body, "metadata.name");
                if (s && !s->event_name && name)
                        s->event_name = strdup(name);
        }
        if (s)
                s->pending = false;
        free(p->key);
        free(p);
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
                        e = body ? kube_create(r->client, &KUBE_EVENTS, r->namespace, body, on_done, p)
                                 : -ENOMEM;
                }
        }
        if (e < 0) {
                r->dropped++;
                (void) hashmap_remove(r->seen, key);
                free(p->key);
                free(p);
                return;
        }
        p->next = r->pending;
        r->pending = p;
}
