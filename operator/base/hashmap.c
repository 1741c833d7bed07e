/* Hash map with SipHash-2-4 under a per-process random key, and chaining. */
#include <pthread.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

#include "hashmap.h"
#include "siphash.h"

struct HashmapEntry {
        HashmapEntry *next;
        uint64_t hash;
        void *value;
        char key[];
};

struct Hashmap {
        HashmapEntry **buckets;
        size_t n_buckets;
        size_t size;
        HashmapFreeFunc free_value;
};

/* Keyed, so that names an API user chooses (Secrets, ConfigMaps, Events) cannot be
 * picked offline to fall into one bucket (review L10: FNV-1a was unkeyed). */
static uint8_t hash_key[SIPHASH_KEY_SIZE];
static pthread_once_t hash_key_once = PTHREAD_ONCE_INIT;

static void hash_key_init(void)
{
        if (getrandom(hash_key, sizeof hash_key, GRND_NONBLOCK) == (ssize_t) sizeof hash_key)
                return;
        /* No entropy yet (early boot): still a key no one knows in advance. */
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t mix[2] = {(uint64_t) ts.tv_nsec ^ ((uint64_t) getpid() << 32), (uint64_t) ts.tv_sec};
        memcpy(hash_key, mix, sizeof hash_key);
}

static uint64_t hash_string(const char *s)
{
        (void) pthread_once(&hash_key_once, hash_key_init);
        return siphash24(hash_key, s, strlen(s));
}

Hashmap *hashmap_new(HashmapFreeFunc free_value)
{
        Hashmap *h = calloc(1, sizeof *h);
        if (!h)
                return NULL;
        h->n_buckets = 16;
        h->buckets = calloc(h->n_buckets, sizeof *h->buckets);
        if (!h->buckets)
                return mfree(h);
        h->free_value = free_value;
        return h;
}

Hashmap *hashmap_free(Hashmap *h)
{
        if (!h)
                return NULL;
        for (size_t i = 0; i < h->n_buckets; i++)
                for (HashmapEntry *e = h->buckets[i], *n; e; e = n) {
                        n = e->next;
                        if (h->free_value)
                                h->free_value(e->value);
                        free(e);
                }
        free(h->buckets);
        return mfree(h);
}

static HashmapEntry **find_slot(const Hashmap *h, const char *key, uint64_t hash)
{
        HashmapEntry **p = &h->buckets[hash % h->n_buckets];
        for (; *p; p = &(*p)->next)
                if ((*p)->hash == hash && streq((*p)->key, key))
                        return p;
        return p;
}

static int grow(Hashmap *h)
{
        size_t n = h->n_buckets * 4;
        HashmapEntry **b = calloc(n, sizeof *b);
        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_buckets; i++)
                for (HashmapEntry *e = h->buckets[i], *next; e; e = next) {
                        next = e->next;
                        e->next = b[e->hash % n];
                        b[e->hash % n] = e;
                }
        free(h->buckets);
        h->buckets = b;
        h->n_buckets = n;
        return 0;
}

int hashmap_put(Hashmap *h, const char *key, void *value)
{
        assert_return(h && key, -EINVAL);
        uint64_t hash = hash_string(key);
        HashmapEntry **slot = find_slot(h, key, hash);
        if (*slot) {
                if (h->free_value && (*slot)->value != value)
                        h->free_value((*slot)->value);
                (*slot)->value = value;
                return 0;
        }
        if (h->size >= h->n_buckets && grow(h) >= 0)
                slot = find_slot(h, key, hash);
        size_t len = strlen(key);
        HashmapEntry *e = malloc(sizeof *e + len + 1);
        if (!e)
                return -ENOMEM;
        memcpy(e->key, key, len + 1);
        e->hash = hash;
        e->value = value;
        e->next = NULL;
        *slot = e;
        h->size++;
        return 1;
}

void *hashmap_get(const Hashmap *h, const char *key)
{
        if (!h || !key)
                return NULL;
        HashmapEntry *e = *find_slot(h, key, hash_string(key));
        return e ? e->value : NULL;
}

bool hashmap_contains(const Hashmap *h, const char *key)
{
        if (!h || !key)
                return false;
        return *find_slot(h, key, hash_string(key)) != NULL;
}

void *hashmap_steal(Hashmap *h, const char *key)
{
        if (!h || !key)
                return NULL;
        HashmapEntry **slot = find_slot(h, key, hash_string(key));
        HashmapEntry *e = *slot;
        if (!e)
                return NULL;
        *slot = e->next;
        void *v = e->value;
        free(e);
        h->size--;
        return v;
}

bool hashmap_remove(Hashmap *h, const char *key)
{
        if (!h || !key)
                return false;
        HashmapEntry **slot = find_slot(h, key, hash_string(key));
        HashmapEntry *e = *slot;
        if (!e)
                return false;
        *slot = e->next;
        if (h->free_value)
                h->free_value(e->value);
        free(e);
        h->size--;
        return true;
}

size_t hashmap_size(const Hashmap *h)
{
        return h ? h->size : 0;
}

bool hashmap_iterate(const Hashmap *h, HashmapIter *it, const char **key, void **value)
{
        if (!h)
                return false;
        /* `next` is taken before the caller sees the entry, so removing it is safe. */
        HashmapEntry *e = it->next;
        while (!e) {
                if (it->bucket >= h->n_buckets)
                        return false;
                e = h->buckets[it->bucket++];
        }
        it->next = e->next;
        *key = e->key;
        *value = e->value;
        return true;
}

void hashmap_free_void(void *h)
{
        hashmap_free(h);
}
