/* The reflector loop and the indexed cache behind every informer. */
#include "informer.h"
#include "base/backoff.h"
#include "base/hashmap.h"
#include "base/json.h"
#include "base/log.h"

#define LIST_PAGE 500
/* One per controller that watches it: etcds/cluster has 17 (of 26 controllers). */
#define MAX_HANDLERS 32
#define MAX_INDEXES  4

typedef struct Handler {
        InformerHandler fn;
        void *userdata;
} Handler;

typedef struct LabelIndex {
        char *label;
        Hashmap *values; /* label value -> Hashmap of keys (values unused) */
} LabelIndex;

struct Informer {
        KubeClient *client;
        const KubeResource *res;
        char *ns;
        char *selector;
        char *name;        /* informer_set_name */
        Hashmap *cache;    /* key -> KubeObject */
        Hashmap *ns_index; /* namespace -> Hashmap of keys */
        LabelIndex indexes[MAX_INDEXES];
        size_t n_indexes;
        Handler handlers[MAX_HANDLERS];
        size_t n_handlers;

        KubeCall *call;
        Hashmap *listing; /* objects of the list in progress */
        char *cont;
        uint64_t rv;
        bool synced;
        bool running;
        usec_t optional_recheck; /* informer_set_optional */
        bool absent;             /* optional, and the last list answered 404 */

        Backoff backoff;
        unsigned failures; /* in a row, since the last event a watch delivered */
        usec_t watch_started;
        uint64_t watch_events;
        sd_event_source *retry_timer;
        sd_event_source *resync_timer;
        usec_t resync;
        InformerTransform transform;
        InformerStats stats;
};

static void start_list(Informer *inf);
static void start_watch(Informer *inf);

/* The cached form of `json` (consumed): trimmed by the transform, frozen. */
static KubeObject *new_object(Informer *inf, cJSON *json)
{
        if (!inf->transform || !json)
                return kube_object_new(json);
        _cleanup_(cJSON_Deletep) cJSON *dropped = cJSON_CreateArray();
        if (!dropped) {
                cJSON_Delete(json);
                return NULL;
        }
        inf->transform(inf->res, json, dropped);
        return kube_object_new(json);
}

Informer *informer_new(KubeClient *c, const KubeResource *r, const char *ns, const char *label_selector)
{
        _cleanup_(informer_freep) Informer *inf = calloc(1, sizeof *inf);

        if (!inf || !c || !r)
                return NULL;
        inf->client = c;
        inf->res = r;
        inf->cache = hashmap_new(kube_object_unref_void);
        inf->ns_index = hashmap_new(hashmap_free_void);
        if (!inf->cache || !inf->ns_index)
                return NULL;
        if ((ns && !(inf->ns = strdup(ns))) || (label_selector && !(inf->selector = strdup(label_selector))))
                return NULL;
        backoff_init(&inf->backoff, 800 * USEC_PER_MSEC, 30 * USEC_PER_SEC, 2.0, 1.0);
        return TAKE_PTR(inf);
}

int informer_set_name(Informer *inf, const char *name)
{
        assert_return(inf && !inf->running, -EINVAL);
        char *copy = name ? strdup(name) : NULL;
        if (name && !copy)
                return -ENOMEM;
        free(inf->name);
        inf->name = copy;
        return 0;
}

void informer_set_transform(Informer *inf, InformerTransform t)
{
        if (inf)
                inf->transform = t;
}

Informer *informer_free(Informer *inf)
{
        if (!inf)
                return NULL;
        informer_stop(inf);
        hashmap_free(inf->cache);
        hashmap_free(inf->ns_index);
        for (size_t i = 0; i < inf->n_indexes; i++) {
                free(inf->indexes[i].label);
                hashmap_free(inf->indexes[i].values);
        }
        free(inf->ns);
        free(inf->selector);
        free(inf->name);
        return mfree(inf);
}

int informer_add_handler(Informer *inf, InformerHandler h, void *userdata)
{
        assert_return(inf && h, -EINVAL);
        if (inf->n_handlers >= MAX_HANDLERS)
                return -E2BIG;
        inf->handlers[inf->n_handlers++] = (Handler){h, userdata};
        return 0;
}

void informer_set_resync(Informer *inf, usec_t period)
{
        inf->resync = period;
}

int informer_add_label_index(Informer *inf, const char *label)
{
        assert_return(inf && label, -EINVAL);
        assert_return(!inf->running, -EBUSY);
        for (size_t i = 0; i < inf->n_indexes; i++)
                if (streq(inf->indexes[i].label, label))
                        return 0;
        if (inf->n_indexes >= MAX_INDEXES)
                return -E2BIG;
        LabelIndex *li = &inf->indexes[inf->n_indexes];
        li->label = strdup(label);
        li->values = hashmap_new(hashmap_free_void);
        if (!li->label || !li->values) {
                li->label = mfree(li->label);
                li->values = hashmap_free(li->values);
                return -ENOMEM;
        }
        inf->n_indexes++;
        return 0;
}

/* ---- cache and indexes ---- */

static int set_add(Hashmap *sets, const char *set, const char *key)
{
        Hashmap *s = hashmap_get(sets, set);
        if (!s) {
                s = hashmap_new(NULL);
                if (!s)
                        return -ENOMEM;
                if (hashmap_put(sets, set, s) < 0) {
                        hashmap_free(s);
                        return -ENOMEM;
                }
        }
        return hashmap_put(s, key, NULL);
}

static void set_remove(Hashmap *sets, const char *set, const char *key)
{
        Hashmap *s = hashmap_get(sets, set);
        if (!s)
                return;
        (void) hashmap_remove(s, key);
        if (hashmap_size(s) == 0)
                (void) hashmap_remove(sets, set);
}

static void index_remove(Informer *inf, const KubeObject *o)
{
        set_remove(inf->ns_index, o->namespace, o->key);
        for (size_t i = 0; i < inf->n_indexes; i++) {
                const char *v = kube_object_label(o, inf->indexes[i].label);
                if (v)
                        set_remove(inf->indexes[i].values, v, o->key);
        }
}

static int index_add(Informer *inf, const KubeObject *o)
{
        int r = set_add(inf->ns_index, o->namespace, o->key);
        for (size_t i = 0; r >= 0 && i < inf->n_indexes; i++) {
                const char *v = kube_object_label(o, inf->indexes[i].label);
                if (v)
                        r = set_add(inf->indexes[i].values, v, o->key);
        }
        return r;
}

static void dispatch(Informer *inf, InformerEvent ev, const KubeObject *old, const KubeObject *obj)
{
        for (size_t i = 0; i < inf->n_handlers; i++)
                inf->handlers[i].fn(inf, ev, old, obj, inf->handlers[i].userdata);
}

/* Stores `o` (taking the reference) and tells the handlers. */
static int cache_put(Informer *inf, KubeObject *o)
{
        _cleanup_(kube_object_unrefp) KubeObject *old = kube_object_ref(hashmap_get(inf->cache, o->key));
        int r;

        if (old)
                index_remove(inf, old);
        r = hashmap_put(inf->cache, o->key, o);
        if (r < 0) {
                kube_object_unref(o);
                return r;
        }
        r = index_add(inf, o);
        if (r < 0)
                return r;
        dispatch(inf, old ? INFORMER_UPDATED : INFORMER_ADDED, old, o);
        return 0;
}

static void cache_delete(Informer *inf, const char *key)
{
        _cleanup_(kube_object_unrefp) KubeObject *old = hashmap_steal(inf->cache, key);
        if (!old)
                return;
        index_remove(inf, old);
        dispatch(inf, INFORMER_DELETED, old, old);
}

/* ---- reflector ---- */

static void schedule(Informer *inf, usec_t delay, bool relist);

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
        Informer *inf = userdata;

        (void) s;
        (void) usec;
        inf->retry_timer = sd_event_source_disable_unref(inf->retry_timer);
        if (!inf->running)
                return 0;
        if (!inf->synced || inf->absent)
                start_list(inf);
        else
                start_watch(inf);
        return 0;
}

/* Lists again when `relist`, else re-watches, after `delay`. */
static void schedule(Informer *inf, usec_t delay, bool relist)
{
        if (relist)
                inf->synced = false;
        inf->retry_timer = sd_event_source_disable_unref(inf->retry_timer);
        if (sd_event_add_time_relative(loop_get_event(kube_client_get_loop(inf->client)), &inf->retry_timer,
                                       CLOCK_MONOTONIC, delay, USEC_PER_MSEC, on_retry, inf) < 0)
                log_error("informer %s: cannot arm retry timer; it stops", inf->res->plural);
}

/* A failure: the first since the last healthy event is retried at once (a
 * watch that was reset or dropped is resumed from the last resourceVersion
 * it delivered); only failures that repeat back off, 0.8 s doubling to 30 s,
 * and never sooner than the server's Retry-After. The first event a watch
 * delivers resets it (informer_apply_watch_line). */
static void schedule_error(Informer *inf, bool relist, int error, unsigned retry_after)
{
        inf->stats.errors++;
        usec_t d = ++inf->failures == 1 ? 0 : backoff_next(&inf->backoff, random_unit());
        d = MAX(d, (usec_t) retry_after * USEC_PER_SEC);
        log_debug("informer %s: %s (failure %u in a row); retrying in %llu ms", inf->res->plural,
                  strerror(-error), inf->failures, (unsigned long long) (d / USEC_PER_MSEC));
        schedule(inf, d, relist);
}

static char *build_query(Informer *inf, bool watch)
{
        _cleanup_free_ char *base = kube_resource_path(inf->res, inf->ns, NULL, NULL);
        _cleanup_free_ char *sel = inf->selector ? kube_query_escape(inf->selector) : NULL;
        _cleanup_free_ char *cont = inf->cont ? kube_query_escape(inf->cont) : NULL;
        _cleanup_free_ char *field = inf->name ? strdup_printf("metadata.name=%s", inf->name) : NULL;
        _cleanup_free_ char *fsel = field ? kube_query_escape(field) : NULL;

        if (!base || (inf->selector && !sel) || (inf->cont && !cont) || (inf->name && !fsel))
                return NULL;
        if (watch) {
                /* Spread re-watches as client-go does (300..599 s). */
                unsigned timeout = 300 + (unsigned) (random_unit() * 300);
                return strdup_printf(
                        "%s?watch=true&allowWatchBookmarks=true&resourceVersion=%llu&timeoutSeconds=%u%s%"
                        "s%s%s",
                        base, (unsigned long long) inf->rv, timeout, sel ? "&labelSelector=" : "",
                        strempty(sel), fsel ? "&fieldSelector=" : "", strempty(fsel));
        }
        return strdup_printf("%s?limit=%d%s%s%s%s%s%s", base, LIST_PAGE, sel ? "&labelSelector=" : "",
                             strempty(sel), fsel ? "&fieldSelector=" : "", strempty(fsel),
                             cont ? "&continue=" : "", strempty(cont));
}

static void finish_list(Informer *inf, uint64_t rv)
{
        _cleanup_(hashmap_freep) Hashmap *fresh = TAKE_PTR(inf->listing);
        const char **gone = NULL;
        size_t n_gone = 0;
        HashmapIter it;
        const char *key;
        KubeObject *o;

        /* Objects that vanished while we were not watching become deletes. */
        gone = calloc(hashmap_size(inf->cache) + 1, sizeof *gone);
        HASHMAP_FOREACH (key, o, inf->cache, it)
                if (gone && !hashmap_contains(fresh, key))
                        gone[n_gone++] = key;
        for (size_t i = 0; i < n_gone; i++) {
                _cleanup_free_ char *k = strdup(gone[i]);
                if (k)
                        cache_delete(inf, k);
        }
        free(gone);
        HASHMAP_FOREACH (key, o, fresh, it) {
                const KubeObject *cur = hashmap_get(inf->cache, key);
                KubeObject *mine = hashmap_steal(fresh, key);
                if (cur && cur->resource_version == mine->resource_version) {
                        kube_object_unref(mine);
                        continue;
                }
                (void) cache_put(inf, mine);
        }
        inf->rv = rv;
        inf->synced = true;
        log_debug("informer %s: listed %zu objects at RV %llu", inf->res->plural, hashmap_size(inf->cache),
                  (unsigned long long) rv);
}

static void on_list(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Informer *inf = userdata;
        uint64_t rv = 0;
        cJSON *item;

        (void) c;
        inf->call = NULL;
        if (resp->error == -ECANCELED)
                return; /* the client is going away */
        if (resp->error == -ENOENT && inf->optional_recheck && !inf->cont) {
                /* Not served (no CRD): an empty cache, synced, and a look again later. */
                if (!inf->absent)
                        log_info("informer %s: not served by the API server (is its CRD installed?); "
                                 "empty until it is, checking every %llu s",
                                 inf->res->plural,
                                 (unsigned long long) (inf->optional_recheck / USEC_PER_SEC));
                inf->absent = true;
                inf->failures = 0;
                finish_list(inf, inf->rv);
                schedule(inf, inf->optional_recheck, false);
                return;
        }
        if (resp->error < 0) {
                inf->listing = hashmap_free(inf->listing);
                inf->cont = mfree(inf->cont);
                schedule_error(inf, true, resp->error, resp->status ? resp->status->retry_after : 0);
                return;
        }
        if (inf->absent) {
                log_info("informer %s: served now", inf->res->plural);
                inf->absent = false;
        }
        /* The body is ours until the callback returns: take the items out of it rather
         * than copy them (half the allocations, and less of the heap left in holes). */
        cJSON *items = json_get_array(resp->body, "items"), *next;
        for (item = items ? items->child : NULL; item; item = next) {
                next = item->next;
                KubeObject *o = new_object(inf, cJSON_DetachItemViaPointer(items, item));
                if (o && hashmap_put(inf->listing, o->key, o) < 0)
                        kube_object_unref(o);
        }
        const char *cont = json_get_string(resp->body, "metadata.continue");
        free(inf->cont);
        inf->cont = cont && *cont ? strdup(cont) : NULL;
        if (inf->cont) {
                start_list(inf);
                return;
        }
        if (json_get_uint64(resp->body, "metadata.resourceVersion", &rv) < 0) {
                inf->listing = hashmap_free(inf->listing);
                schedule_error(inf, true, -EBADMSG, 0);
                return;
        }
        finish_list(inf, rv);
        start_watch(inf);
}

static void start_list(Informer *inf)
{
        _cleanup_free_ char *path = NULL;
        int r;

        /* (An absent resource's empty cache stays synced while we look again.) */
        if (!inf->absent)
                inf->synced = false;
        if (!inf->listing && !(inf->listing = hashmap_new(kube_object_unref_void))) {
                schedule_error(inf, true, -ENOMEM, 0);
                return;
        }
        path = build_query(inf, false);
        inf->stats.lists++;
        r = path ? kube_call(inf->client, "GET", path, NULL, NULL, on_list, inf, &inf->call) : -ENOMEM;
        if (r < 0)
                schedule_error(inf, true, r, 0);
}

static int on_watch_line(KubeClient *c, cJSON *line, void *userdata)
{
        (void) c;
        return informer_apply_watch_line(userdata, line);
}

int informer_apply_watch_line(Informer *inf, cJSON *line)
{
        const char *type = json_get_string(line, "type");
        cJSON *obj = json_get_object(line, "object");
        uint64_t rv = 0;

        assert_return(inf && line, -EINVAL);
        if (!type || !obj)
                return -EBADMSG;
        if (streq(type, "ERROR")) {
                _cleanup_(kube_status_done) KubeStatus st = {};
                (void) kube_status_parse(obj, &st);
                log_debug("informer %s: watch ERROR %ld %s: %s", inf->res->plural, st.code,
                          strempty(st.reason), strempty(st.message));
                return st.code == 410 ? KUBE_ERR_EXPIRED : kube_status_to_errno(st.code, st.reason);
        }
        if (json_get_uint64(obj, "metadata.resourceVersion", &rv) < 0)
                return -EBADMSG;
        inf->watch_events++;
        inf->stats.events++;
        if (!streq(type, "BOOKMARK")) {
                bool deleted = streq(type, "DELETED");
                if (!deleted && !streq(type, "ADDED") && !streq(type, "MODIFIED"))
                        return -EBADMSG;
                /* The line is the caller's to delete: take the object out of it rather than copy it. */
                KubeObject *o = new_object(inf, cJSON_DetachItemViaPointer(line, obj));
                if (deleted) {
                        if (o)
                                cache_delete(inf, o->key);
                        kube_object_unref(o);
                } else {
                        if (!o)
                                return -ENOMEM;
                        int r = cache_put(inf, o);
                        if (r < 0)
                                return r;
                }
        }
        inf->rv = rv;
        if (inf->failures) { /* healthy again: the next failure is retried at once */
                inf->failures = 0;
                backoff_reset(&inf->backoff);
        }
        return 0;
}

static void on_watch_end(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Informer *inf = userdata;
        usec_t lasted = now_usec(CLOCK_MONOTONIC) - inf->watch_started;

        (void) c;
        inf->call = NULL;
        if (resp->error == -ECANCELED)
                return;
        if (resp->error == KUBE_ERR_EXPIRED) {
                inf->stats.relists_410++;
                log_debug("informer %s: resourceVersion %llu expired, relisting", inf->res->plural,
                          (unsigned long long) inf->rv);
                schedule(inf, 0, true);
                return;
        }
        if (resp->error < 0) {
                schedule_error(inf, false, resp->error, resp->status ? resp->status->retry_after : 0);
                return;
        }
        /* A watch that ends at once without events is a broken server, not a timeout. */
        if (lasted < USEC_PER_SEC && inf->watch_events == 0) {
                schedule_error(inf, false, -ECONNRESET, 0);
                return;
        }
        start_watch(inf);
}

static void start_watch(Informer *inf)
{
        _cleanup_free_ char *path = build_query(inf, true);
        int r;

        inf->watch_started = now_usec(CLOCK_MONOTONIC);
        inf->watch_events = 0;
        inf->stats.watches++;
        r = path ? kube_stream(inf->client, path, 650 * USEC_PER_SEC, on_watch_line, on_watch_end, inf,
                               &inf->call)
                 : -ENOMEM;
        if (r < 0)
                schedule_error(inf, false, r, 0);
}

static int on_resync(sd_event_source *s, uint64_t usec, void *userdata)
{
        Informer *inf = userdata;
        _cleanup_free_ const KubeObject **all = NULL;
        size_t n = 0;

        if (inf->synced && informer_list(inf, &all, &n) >= 0)
                for (size_t i = 0; i < n; i++) {
                        _cleanup_(kube_object_unrefp) KubeObject *o = kube_object_ref(all[i]);
                        dispatch(inf, INFORMER_UPDATED, o, o);
                }
        (void) sd_event_source_set_time(s, usec + inf->resync);
        return 0;
}

int informer_start(Informer *inf)
{
        assert_return(inf, -EINVAL);
        if (inf->running)
                return 0;
        inf->running = true;
        if (inf->resync > 0) {
                int r = sd_event_add_time_relative(loop_get_event(kube_client_get_loop(inf->client)),
                                                   &inf->resync_timer, CLOCK_MONOTONIC, inf->resync, 0,
                                                   on_resync, inf);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_enabled(inf->resync_timer, SD_EVENT_ON);
        }
        start_list(inf);
        return 0;
}

void informer_stop(Informer *inf)
{
        inf->running = false;
        kube_call_cancel(TAKE_PTR(inf->call));
        inf->retry_timer = sd_event_source_disable_unref(inf->retry_timer);
        inf->resync_timer = sd_event_source_disable_unref(inf->resync_timer);
        inf->listing = hashmap_free(inf->listing);
        inf->cont = mfree(inf->cont);
}

/* ---- reading the cache ---- */

void informer_set_optional(Informer *inf, usec_t recheck)
{
        if (inf)
                inf->optional_recheck = recheck;
}

bool informer_is_absent(Informer *inf)
{
        return inf && inf->absent;
}

bool informer_has_synced(Informer *inf)
{
        return inf && inf->synced;
}

const KubeResource *informer_get_resource(Informer *inf)
{
        return inf->res;
}

uint64_t informer_get_resource_version(Informer *inf)
{
        return inf->rv;
}

const KubeObject *informer_get(Informer *inf, const char *ns, const char *name)
{
        char key[512];

        if (!inf || !name)
                return NULL;
        if (ns && *ns)
                (void) snprintf(key, sizeof key, "%s/%s", ns, name);
        else
                (void) snprintf(key, sizeof key, "%s", name);
        return hashmap_get(inf->cache, key);
}

size_t informer_size(Informer *inf)
{
        return hashmap_size(inf->cache);
}

static int cmp_key(const void *a, const void *b)
{
        const KubeObject *const *x = a, *const *y = b;
        return strcmp((*x)->key, (*y)->key);
}

/* Collects the objects named by the keys of `set` (or the whole cache). */
static int collect(Informer *inf, Hashmap *set, const KubeObject ***ret, size_t *ret_n)
{
        Hashmap *src = set ? set : inf->cache;
        const KubeObject **v = calloc(hashmap_size(src) + 1, sizeof *v);
        HashmapIter it;
        const char *key;
        void *val;
        size_t n = 0;

        if (!v)
                return -ENOMEM;
        HASHMAP_FOREACH (key, val, src, it) {
                const KubeObject *o = set ? hashmap_get(inf->cache, key) : val;
                if (o)
                        v[n++] = o;
        }
        qsort(v, n, sizeof *v, cmp_key);
        *ret = v;
        *ret_n = n;
        return 0;
}

int informer_list(Informer *inf, const KubeObject ***ret, size_t *ret_n)
{
        assert_return(ret && ret_n, -EINVAL);
        if (!inf) { /* no such informer: nothing cached */
                *ret = calloc(1, sizeof **ret);
                *ret_n = 0;
                return *ret ? 0 : -ENOMEM;
        }
        return collect(inf, NULL, ret, ret_n);
}

int informer_list_namespace(Informer *inf, const char *ns, const KubeObject ***ret, size_t *ret_n)
{
        assert_return(inf && ns && ret && ret_n, -EINVAL);
        Hashmap *set = hashmap_get(inf->ns_index, ns);
        if (!set) {
                *ret = calloc(1, sizeof **ret);
                *ret_n = 0;
                return *ret ? 0 : -ENOMEM;
        }
        return collect(inf, set, ret, ret_n);
}

int informer_list_by_label(Informer *inf, const char *label, const char *value, const KubeObject ***ret,
                           size_t *ret_n)
{
        assert_return(inf && label && value && ret && ret_n, -EINVAL);
        for (size_t i = 0; i < inf->n_indexes; i++) {
                if (!streq(inf->indexes[i].label, label))
                        continue;
                Hashmap *set = hashmap_get(inf->indexes[i].values, value);
                if (!set) {
                        *ret = calloc(1, sizeof **ret);
                        *ret_n = 0;
                        return *ret ? 0 : -ENOMEM;
                }
                return collect(inf, set, ret, ret_n);
        }
        return -ENOENT; /* no index on that label: add one before starting */
}

void informer_get_stats(Informer *inf, InformerStats *ret)
{
        HashmapIter it;
        const char *key;
        const KubeObject *o;

        *ret = inf->stats;
        ret->objects = ret->cached_bytes = 0;
        HASHMAP_FOREACH (key, o, inf->cache, it) {
                ret->objects++;
                ret->cached_bytes += o->size;
        }
}

/* ---- shared factory ---- */

struct InformerFactory {
        KubeClient *client;
        InformerTransform transform;
        Hashmap *informers; /* "plural.group|ns|selector|name" -> Informer */
        bool started;
};

static void informer_free_void(void *p)
{
        informer_free(p);
}

InformerFactory *informer_factory_new(KubeClient *c)
{
        InformerFactory *f = calloc(1, sizeof *f);
        if (!f)
                return NULL;
        f->client = c;
        f->informers = hashmap_new(informer_free_void);
        if (!f->informers)
                return mfree(f);
        return f;
}

void informer_factory_set_transform(InformerFactory *f, InformerTransform t)
{
        if (f)
                f->transform = t;
}

InformerFactory *informer_factory_free(InformerFactory *f)
{
        if (!f)
                return NULL;
        hashmap_free(f->informers);
        return mfree(f);
}

Informer *informer_factory_find(InformerFactory *f, const KubeResource *r, const char *ns,
                                const char *selector, const char *name)
{
        char key[512];
        if (!f || !r ||
            snprintf(key, sizeof key, "%s.%s|%s|%s|%s", r->plural, r->group, strempty(ns),
                     strempty(selector), strempty(name)) >= (int) sizeof key)
                return NULL;
        return hashmap_get(f->informers, key);
}

Informer *informer_factory_get(InformerFactory *f, const KubeResource *r, const char *ns,
                               const char *selector, const char *name)
{
        Informer *inf = informer_factory_find(f, r, ns, selector, name);
        if (inf)
                return inf;
        _cleanup_free_ char *key = strdup_printf("%s.%s|%s|%s|%s", r->plural, r->group, strempty(ns),
                                                 strempty(selector), strempty(name));
        if (!key)
                return NULL;
        inf = informer_new(f->client, r, ns, selector);
        if (!inf || informer_set_name(inf, name) < 0)
                return informer_free(inf);
        informer_set_transform(inf, f->transform);
        if (hashmap_put(f->informers, key, inf) < 0)
                return informer_free(inf);
        if (f->started && informer_start(inf) < 0)
                log_warning("informer %s: cannot start", r->plural);
        return inf;
}

int informer_factory_start(InformerFactory *f)
{
        HashmapIter it;
        const char *key;
        Informer *inf;

        f->started = true;
        HASHMAP_FOREACH (key, inf, f->informers, it) {
                int r = informer_start(inf);
                if (r < 0)
                        return r;
        }
        return 0;
}

void informer_factory_foreach(InformerFactory *f, void (*fn)(const char *key, Informer *inf, void *userdata),
                              void *userdata)
{
        HashmapIter it;
        const char *key;
        Informer *inf;

        HASHMAP_FOREACH (key, inf, f->informers, it)
                fn(key, inf, userdata);
}

bool informer_factory_has_synced(InformerFactory *f)
{
        HashmapIter it;
        const char *key;
        Informer *inf;

        HASHMAP_FOREACH (key, inf, f->informers, it)
                if (!informer_has_synced(inf))
                        return false;
        return true;
}
