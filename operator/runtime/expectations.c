/* Expectations (expectations.h). */
#include "expectations.h"

#define MAX_EXPECTATIONS 64 /* one plan's writes; beyond that, the oldest are forgotten */

typedef struct Expectation {
        const WatchSpec *watch; /* the declared watch that covers the object (borrowed from the spec) */
        char *ns, *name, *what; /* what: "configmaps openshift-etcd/etcd-pod" for logs */
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

int expectations_add(Expectations *e, const WatchSpec *const *watches, size_t n_watches,
                     const KubeResource *res, const char *ns, const char *name, uint64_t rv, usec_t deadline)
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
        *x = (Expectation){.watch = w, .rv = rv, .deadline = deadline};
        x->ns = ns ? strdup(ns) : NULL;
        x->name = strdup(name);
        x->what = strdup_printf("%s %s%s%s", res->plural, strempty(ns), ns ? "/" : "", name);
        if ((ns && !x->ns) || !x->name || !x->what) {
                item_done(x);
                return -ENOMEM;
        }
        e->n++;
        return 1;
}

static bool informer_shows(Informer *inf, const char *ns, const char *name, uint64_t rv)
{
        const KubeObject *o = informer_get(inf, ns, name);
        if (rv == 0)
                return !o;
        return (o && o->resource_version >= rv) || informer_get_resource_version(inf) >= rv;
}

static bool seen(const Expectation *x, InformerFactory *f)
{
        Informer *inf = informer_of(f, x->watch);
        if (!inf)
                return true; /* nothing watches it here: nothing to wait for */
        return informer_shows(inf, x->ns, x->name, x->rv);
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
        return inf && informer_has_synced(inf) && informer_shows(inf, ns, name, rv);
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
                if (now >= e->items[i].deadline || seen(&e->items[i], f))
                        remove_at(e, i);
                else
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
