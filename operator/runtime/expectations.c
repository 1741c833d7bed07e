/* Expectations (expectations.h). */
#include "expectations.h"

#include "base/json.h"
#include "base/log.h"

#define MAX_EXPECTATIONS 64 /* one plan's writes; beyond that, the oldest are forgotten */

typedef struct Expectation {
        const WatchSpec *watch; /* the declared watch that covers the object (borrowed from the spec) */
        char *ns, *name, *what; /* what: "configmaps openshift-etcd/etcd-pod" for logs */
        char *uid;              /* a delete's: the object it deleted (NULL: any) */
        bool gone;              /* rv 0: only the object's absence (or another uid) counts */
        uint64_t rv;            /* 0: deleted */
        usec_t deadline;
} Expectation;

/* The array grows with the writes in flight and is freed once they are all
 * seen: most controllers expect nothing most of the time, and 22 arrays of
 * MAX_EXPECTATIONS held 66 KiB at rest. */
struct Expectations {
        Expectation *items;
        size_t n, cap;
};

Expectations *expectations_new(void)
{
        return calloc(1, sizeof(Expectations));
}

static void item_done(Expectation *x)
{
        free(x->ns);
        free(x->name);
        free(x->what);
        free(x->uid);
        *x = (Expectation){};
}

static void remove_at(Expectations *e, size_t i)
{
        item_done(&e->items[i]);
        memmove(&e->items[i], &e->items[i + 1], (e->n - i - 1) * sizeof *e->items);
        e->n--;
        e->items[e->n] = (Expectation){};
        if (e->n == 0) {
                e->items = mfree(e->items);
                e->cap = 0;
        }
}

Expectations *expectations_free(Expectations *e)
{
        if (!e)
                return NULL;
        for (size_t i = 0; i < e->n; i++)
                item_done(&e->items[i]);
        free(e->items);
        return mfree(e);
}

/* The watch that shows every write of `name` (NULL: of any name) in `ns`: no label
 * selector, and no name but that one. */
static const WatchSpec *covering(const WatchSpec *const *watches, size_t n, const KubeResource *res,
                                 const char *ns, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (watches[i]->res == res && !watches[i]->label_selector &&
                    (!watches[i]->namespace || streq_ptr(watches[i]->namespace, ns)) &&
                    (!watches[i]->name || (name && streq(watches[i]->name, name))))
                        return watches[i];
        return NULL;
}

static Informer *informer_of(InformerFactory *f, const WatchSpec *w)
{
        return informer_factory_find(f, w->res, w->namespace, NULL, w->name);
}

static int add(Expectations *e, const WatchSpec *const *watches, size_t n_watches, const KubeResource *res,
               const char *ns, const char *name, uint64_t rv, const char *uid, bool gone, usec_t deadline);

int expectations_add(Expectations *e, const WatchSpec *const *watches, size_t n_watches,
                     const KubeResource *res, const char *ns, const char *name, uint64_t rv, const char *uid,
                     usec_t deadline)
{
        return add(e, watches, n_watches, res, ns, name, rv, uid, false, deadline);
}

int expectations_add_gone(Expectations *e, const WatchSpec *const *watches, size_t n_watches,
                          const KubeResource *res, const char *ns, const char *name, const char *uid,
                          usec_t deadline)
{
        return add(e, watches, n_watches, res, ns, name, 0, uid, true, deadline);
}

static int add(Expectations *e, const WatchSpec *const *watches, size_t n_watches, const KubeResource *res,
               const char *ns, const char *name, uint64_t rv, const char *uid, bool gone, usec_t deadline)
{
        assert_return(e && res && name, -EINVAL);
        const WatchSpec *w = covering(watches, n_watches, res, ns, name);
        if (!w)
                return 0;
        /* A later write of the same object replaces the earlier expectation. */
        for (size_t i = 0; i < e->n; i++)
                if (e->items[i].watch == w && streq_ptr(e->items[i].ns, ns) &&
                    streq(e->items[i].name, name)) {
                        remove_at(e, i);
                        break;
                }
        if (e->n == MAX_EXPECTATIONS)
                remove_at(e, 0);
        if (e->n == e->cap) {
                size_t cap = MIN(MAX(e->cap * 2, (size_t) 4), (size_t) MAX_EXPECTATIONS);
                Expectation *items = reallocarray(e->items, cap, sizeof *items);
                if (!items)
                        return -ENOMEM;
                e->items = items;
                e->cap = cap;
        }
        Expectation *x = &e->items[e->n];
        *x = (Expectation){.watch = w, .rv = rv, .gone = gone, .deadline = deadline};
        x->ns = ns ? strdup(ns) : NULL;
        x->name = strdup(name);
        x->uid = uid && rv == 0 ? strdup(uid) : NULL;
        x->what = strdup_printf("%s %s%s%s", res->plural, strempty(ns), ns ? "/" : "", name);
        if ((ns && !x->ns) || !x->name || !x->what || (uid && rv == 0 && !x->uid)) {
                item_done(x);
                return -ENOMEM;
        }
        e->n++;
        return 1;
}

static bool informer_shows(Informer *inf, const char *ns, const char *name, uint64_t rv, const char *uid,
                           bool gone)
{
        const KubeObject *o = informer_get(inf, ns, name);
        /* A delete shows as the object gone, or going (finalizers, a pod's grace period), or
         * made again by someone else since (another uid); `gone`: only gone or made again. */
        if (rv == 0)
                return !o || (!gone && json_get_string(o->json, "metadata.deletionTimestamp")) ||
                       (uid && !streq_ptr(kube_object_uid(o), uid));
        return (o && o->resource_version >= rv) || informer_get_resource_version(inf) >= rv;
}

static bool seen(const Expectation *x, InformerFactory *f)
{
        Informer *inf = informer_of(f, x->watch);
        if (!inf)
                return true; /* nothing watches it here: nothing to wait for */
        return informer_shows(inf, x->ns, x->name, x->rv, x->uid, x->gone);
}

bool expectations_covered(const WatchSpec *const *watches, size_t n_watches, const KubeResource *res,
                          const char *ns, const char *name)
{
        return covering(watches, n_watches, res, ns, name) != NULL;
}

bool expectations_seen_now(const WatchSpec *const *watches, size_t n_watches, InformerFactory *f,
                           const KubeResource *res, const char *ns, const char *name, uint64_t rv)
{
        const WatchSpec *w = covering(watches, n_watches, res, ns, name);
        Informer *inf = w ? informer_of(f, w) : NULL;
        return inf && informer_has_synced(inf) && informer_shows(inf, ns, name, rv, NULL, false);
}

uint64_t expectations_cached_rv(const WatchSpec *const *watches, size_t n_watches, InformerFactory *f,
                                const KubeResource *res, const char *ns, const char *name)
{
        const WatchSpec *w = covering(watches, n_watches, res, ns, name);
        Informer *inf = w ? informer_of(f, w) : NULL;
        if (!inf || !informer_has_synced(inf))
                return UINT64_MAX;
        const KubeObject *o = informer_get(inf, ns, name);
        return o ? o->resource_version : 0;
}

bool expectations_met(Expectations *e, InformerFactory *f, usec_t now, const char **ret_waiting)
{
        for (size_t i = 0; i < e->n;) {
                if (seen(&e->items[i], f))
                        remove_at(e, i);
                else if (now >= e->items[i].deadline) {
                        /* The watch should have shown it long ago: it is broken or far behind.
                         * Planning resumes from the cache as it is. */
                        log_warning("our write of %s is still not in the informer's cache; "
                                    "planning from the cache as it is",
                                    e->items[i].what);
                        remove_at(e, i);
                } else
                        i++;
        }
        if (ret_waiting)
                *ret_waiting = e->n ? e->items[0].what : NULL;
        return e->n == 0;
}

size_t expectations_pending(const Expectations *e)
{
        return e ? e->n : 0;
}
