/* Expectations, as client-go's ReplicaSet controller keeps them: after a
 * sync has written objects, the controller's next sync waits until its own
 * informers have seen those writes (the object at the written
 * resourceVersion or newer, a deleted object gone), so it never plans again
 * from a cache that predates its own last step (an installer pod created
 * twice, an annotation removed twice). The wait is bounded: past the
 * deadline (a watch that is broken) the sync runs anyway, on whatever the
 * caches hold, and says so. Writes to
 * objects that no declared watch covers expect nothing. Pure bookkeeping:
 * no I/O, no clock of its own. */
#pragma once

#include "runtime/controller.h"

typedef struct Expectations Expectations;

Expectations *expectations_new(void);
Expectations *expectations_free(Expectations *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Expectations *, expectations_free);

/* The resourceVersion of the object as the covering informer shows it now: 0 when it
 * shows none, UINT64_MAX when no synced informer covers it. */
uint64_t expectations_cached_rv(const WatchSpec *const *watches, size_t n_watches, InformerFactory *f,
                                const KubeResource *res, const char *ns, const char *name);
/* After a write the server acknowledged: `rv` the resourceVersion it
 * returned, 0 for a delete (then the object must leave the cache, or show
 * it is being deleted, or come back with another uid than `uid`). The
 * expectation is kept only if one of `watches` (without a label selector,
 * whose informer could miss the object) covers the object. */
int expectations_add(Expectations *e, const WatchSpec *const *watches, size_t n_watches,
                     const KubeResource *res, const char *ns, const char *name, uint64_t rv, const char *uid,
                     usec_t deadline);
/* After a write that made the server delete the object (an update that lifted the last
 * finalizer of an object being deleted): it must leave the cache, or come back with
 * another uid; its deletionTimestamp, which the cache showed before, does not count. */
int expectations_add_gone(Expectations *e, const WatchSpec *const *watches, size_t n_watches,
                          const KubeResource *res, const char *ns, const char *name, const char *uid,
                          usec_t deadline);
/* Drops what the informers have seen and what has expired; true when
 * nothing is left to wait for. `ret_waiting` (optional) gets one object
 * still awaited, borrowed until the next call. */
bool expectations_met(Expectations *e, InformerFactory *f, usec_t now, const char **ret_waiting);
size_t expectations_pending(const Expectations *e);
/* Whether a declared watch (without a label selector, and with no name or `name`)
 * covers the object `name` of `res` in `ns`. */
bool expectations_covered(const WatchSpec *const *watches, size_t n_watches, const KubeResource *res,
                          const char *ns, const char *name);
/* Whether the informers show the object at resourceVersion `rv` or newer (0:
 * absent) right now; false when no declared watch (without a label selector)
 * covers it. */
bool expectations_seen_now(const WatchSpec *const *watches, size_t n_watches, InformerFactory *f,
                           const KubeResource *res, const char *ns, const char *name, uint64_t rv);
