/* The addresses of names looked up for the loop's requests, kept for as long
 * as their TTL says (and never longer than DNS_CACHE_TTL_MAX), so that a
 * request does not cost a lookup. Bounded: at most DNS_CACHE_NAMES names,
 * each with at most DNS_CACHE_ADDRESSES addresses. Pure and clock-injected;
 * a small flat array is searched in full, which at this size costs less than
 * one lookup's syscalls. */
#include "dns-internal.h"

typedef struct CacheEntry {
        char name[254];
        usec_t expires;
        size_t n;
        DnsAddress addresses[DNS_CACHE_ADDRESSES];
} CacheEntry;

struct DnsCache {
        CacheEntry *v; /* grows as names come, up to DNS_CACHE_NAMES (~1.2 KiB each) */
        size_t n, allocated;
};

DnsCache *dns_cache_new(void)
{
        return calloc(1, sizeof(DnsCache));
}

DnsCache *dns_cache_free(DnsCache *c)
{
        if (!c)
                return NULL;
        free(c->v);
        return mfree(c);
}

static CacheEntry *find(DnsCache *c, const char *norm)
{
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->v[i].name, norm))
                        return &c->v[i];
        return NULL;
}

static void drop(DnsCache *c, CacheEntry *e)
{
        size_t i = (size_t) (e - c->v);
        c->v[i] = c->v[--c->n];
}

/* Room for one more: the expired go first, then the one closest to expiring. */
static void make_room(DnsCache *c, usec_t now)
{
        for (size_t i = 0; i < c->n;)
                if (c->v[i].expires <= now)
                        drop(c, &c->v[i]);
                else
                        i++;
        if (c->n < DNS_CACHE_NAMES)
                return;
        CacheEntry *soonest = &c->v[0];
        for (size_t i = 1; i < c->n; i++)
                if (c->v[i].expires < soonest->expires)
                        soonest = &c->v[i];
        drop(c, soonest);
}

int dns_cache_put(DnsCache *c, const char *name, const DnsAddress *a, size_t n, usec_t now)
{
        char norm[sizeof c->v[0].name];
        uint32_t ttl = UINT32_MAX;
        CacheEntry *e;

        assert_return(c && name && (a || n == 0), -EINVAL);
        if (!dns_name_normalize(name, norm, sizeof norm))
                return -EINVAL;
        n = MIN(n, (size_t) DNS_CACHE_ADDRESSES);
        for (size_t i = 0; i < n; i++)
                ttl = MIN(ttl, a[i].ttl);
        e = find(c, norm);
        if (n == 0 || ttl == 0) {
                if (e)
                        drop(c, e);
                return 0;
        }
        if (!e) {
                if (c->n == DNS_CACHE_NAMES)
                        make_room(c, now);
                if (c->n == c->allocated) {
                        size_t m = MIN(MAX(c->allocated * 2, (size_t) 4), (size_t) DNS_CACHE_NAMES);
                        CacheEntry *v = reallocarray(c->v, m, sizeof *v);
                        if (!v)
                                return -ENOMEM;
                        c->v = v;
                        c->allocated = m;
                }
                e = &c->v[c->n++];
                memcpy(e->name, norm, strlen(norm) + 1);
        }
        e->expires = now + MIN((usec_t) ttl * USEC_PER_SEC, DNS_CACHE_TTL_MAX);
        e->n = n;
        memcpy(e->addresses, a, n * sizeof *a);
        return 0;
}

size_t dns_cache_get(DnsCache *c, const char *name, usec_t now, const DnsAddress **ret)
{
        char norm[sizeof c->v[0].name];
        CacheEntry *e;

        if (!c || !ret || !dns_name_normalize(name, norm, sizeof norm))
                return 0;
        e = find(c, norm);
        if (!e)
                return 0;
        if (e->expires <= now) {
                drop(c, e);
                return 0;
        }
        *ret = e->addresses;
        return e->n;
}

size_t dns_cache_size(const DnsCache *c)
{
        return c ? c->n : 0;
}
