/* Informers: a list+watch cache of one resource type (optionally scoped by
 * namespace and label selector), modelled on client-go's reflector. LIST,
 * then WATCH from the list's resourceVersion with bookmarks; re-watch on a
 * normal end; relist on 410; reconnect with backoff (0.8 s doubling to 30 s,
 * reset after 2 min healthy); optional resync that replays the cache.
 * Handlers get borrowed objects valid for the callback; take a ref to keep one.
 * A factory shares one informer between controllers watching the same thing. */
#pragma once

#include "client.h"
#include "object.h"

typedef struct Informer Informer;
typedef struct InformerFactory InformerFactory;

typedef enum InformerEvent {
        INFORMER_ADDED,
        INFORMER_UPDATED, /* also resync, with old == new */
        INFORMER_DELETED,
} InformerEvent;

typedef void (*InformerHandler)(Informer *inf, InformerEvent ev, const KubeObject *old,
                                const KubeObject *obj, void *userdata);

/* Trims an object before the cache keeps it (client-go's SetTransform): it
 * may take out what no reader of the cache needs, and nothing else. Runs on
 * every object a list or a watch event delivers, before handlers see it.
 * It moves what it takes out into the array `dropped` (with
 * json_move_to()), which the informer deletes after the object is cached:
 * freeing the pieces only after the cache's copy is made keeps glibc's
 * free lists ready for the next event's parse (deleting them first cost a
 * fifth of the watch benchmark's throughput). A trimmed object must never
 * be the base of a write. */
typedef void (*InformerTransform)(const KubeResource *res, cJSON *obj, cJSON *dropped);

Informer *informer_new(KubeClient *c, const KubeResource *r, const char *ns, const char *label_selector);
Informer *informer_free(Informer *inf);
DEFINE_TRIVIAL_CLEANUP_FUNC(Informer *, informer_free);

int informer_add_handler(Informer *inf, InformerHandler h, void *userdata);
/* Period of resync replays; 0 (default) disables. */
void informer_set_resync(Informer *inf, usec_t period);
/* Set before informer_start(): every object is trimmed by `t` before it is cached. */
void informer_set_transform(Informer *inf, InformerTransform t);
/* Before informer_start(): list and watch only the object named `name`
 * (fieldSelector=metadata.name=NAME, which every resource serves): a
 * singleton among many, as clusteroperators/etcd among every operator's,
 * is then all the cache keeps and all the watch delivers. */
int informer_set_name(Informer *inf, const char *name);
/* Keeps an index of objects by this label's value (see informer_list_by_label). */
int informer_add_label_index(Informer *inf, const char *label);
/* For a resource the server may not serve (its CRD not installed): a 404 on
 * list counts as an empty list (so the cache syncs, and what it held is
 * deleted), and the list is tried again every `recheck` until it is served. */
void informer_set_optional(Informer *inf, usec_t recheck);
/* The resource answered 404 on the last list (only with informer_set_optional). */
bool informer_is_absent(Informer *inf);
int informer_start(Informer *inf);
void informer_stop(Informer *inf);

bool informer_has_synced(Informer *inf);
const KubeResource *informer_get_resource(Informer *inf);
/* The last resourceVersion seen (list, event or bookmark). */
uint64_t informer_get_resource_version(Informer *inf);
const KubeObject *informer_get(Informer *inf, const char *ns, const char *name);
size_t informer_size(Informer *inf);

/* Snapshots of the cache as arrays of borrowed pointers, sorted by key so
 * callers see a stable order; free the array (not the objects) with free(). */
int informer_list(Informer *inf, const KubeObject ***ret, size_t *ret_n);
int informer_list_namespace(Informer *inf, const char *ns, const KubeObject ***ret, size_t *ret_n);
int informer_list_by_label(Informer *inf, const char *label, const char *value, const KubeObject ***ret,
                           size_t *ret_n);

/* Applies one watch event line ({"type":..., "object":...}) to the cache as
 * the watch would, dispatching to handlers. Returns KUBE_ERR_EXPIRED for a 410
 * ERROR event. Used by the watch and by unit tests. */
int informer_apply_watch_line(Informer *inf, cJSON *line);

typedef struct InformerStats {
        uint64_t lists;
        uint64_t watches;
        uint64_t events;
        uint64_t relists_410;
        uint64_t errors;
        uint64_t objects;      /* in the cache now */
        uint64_t cached_bytes; /* what they hold (KubeObject.size) */
} InformerStats;
void informer_get_stats(Informer *inf, InformerStats *ret);

InformerFactory *informer_factory_new(KubeClient *c);
/* The transform of every informer the factory creates from now on. */
void informer_factory_set_transform(InformerFactory *f, InformerTransform t);
InformerFactory *informer_factory_free(InformerFactory *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(InformerFactory *, informer_factory_free);
/* Returns the shared informer for (resource, namespace, selector, name), creating it.
 * Borrowed. `name` non-NULL: only the object of that name (informer_set_name). */
Informer *informer_factory_get(InformerFactory *f, const KubeResource *r, const char *ns,
                               const char *selector, const char *name);
/* The same informer if it exists, NULL otherwise: never creates or starts one
 * (what a controller's sync uses, so a read can never start I/O). */
Informer *informer_factory_find(InformerFactory *f, const KubeResource *r, const char *ns,
                                const char *selector, const char *name);
int informer_factory_start(InformerFactory *f);
bool informer_factory_has_synced(InformerFactory *f);
/* Calls `fn` for every informer, with its key "plural.group|namespace|selector|name". */
void informer_factory_foreach(InformerFactory *f, void (*fn)(const char *key, Informer *inf, void *userdata),
                              void *userdata);
