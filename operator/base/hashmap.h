/* A string-keyed hash map (separate chaining, grows at load 1). The map owns
 * its key copies; values are the caller's, freed by `free_value` if set. */
#pragma once

#include "macro.h"

typedef struct HashmapEntry HashmapEntry;
typedef struct Hashmap Hashmap;
typedef void (*HashmapFreeFunc)(void *value);

Hashmap *hashmap_new(HashmapFreeFunc free_value);
Hashmap *hashmap_free(Hashmap *h);
void hashmap_free_void(void *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(Hashmap *, hashmap_free);

/* Replaces (and frees) any old value. */
int hashmap_put(Hashmap *h, const char *key, void *value);
void *hashmap_get(const Hashmap *h, const char *key);
bool hashmap_contains(const Hashmap *h, const char *key);
/* Removes without freeing the value, which is returned. */
void *hashmap_steal(Hashmap *h, const char *key);
/* Removes and frees; true if something was there. */
bool hashmap_remove(Hashmap *h, const char *key);
size_t hashmap_size(const Hashmap *h);

/* Iteration: safe against removing the current entry (not against puts). */
typedef struct HashmapIter {
        size_t bucket;
        HashmapEntry *next;
} HashmapIter;

bool hashmap_iterate(const Hashmap *h, HashmapIter *it, const char **key, void **value);

#define HASHMAP_FOREACH(k, v, h, it) \
        for ((it) = (HashmapIter){}; hashmap_iterate((h), &(it), &(k), (void **) &(v));)
