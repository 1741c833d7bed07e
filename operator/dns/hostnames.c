/* Host names for the loop's requests (hostnames.h): loopback names, the hosts
 * file, the cache, then an A and an AAAA lookup on the resolver. One Pending
 * per name being looked up collects its two answers and the requests waiting
 * for it. A waiter's callback may start lookups, and may drop the loop's last
 * reference, which frees this object: a Pending is unlinked before its
 * waiters hear from it, and nothing here touches the object after them. */
#include <arpa/inet.h>
#include <assert.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "base/log.h"
#include "dns-internal.h"
#include "hostnames.h"

#define HOSTS_DEFAULT "/etc/hosts"
#define NAME_BUF      254

typedef struct Waiter {
        LoopResolveDone done;
        void *token;
} Waiter;

typedef struct Pending Pending;

struct DnsHostnames {
        DnsResolver *resolver;
        DnsCache *cache;
        char *hosts_path; /* NULL: none */
        DnsHosts hosts;
        struct stat hosts_stat; /* of what `hosts` was read from; st_ino 0: nothing read */
        Pending *pending;
        DnsHostnamesStats stats;
};

/* One family's answer. */
typedef struct Half {
        bool done;
        int error;
        char message[96];
        DnsAddress addresses[DNS_CACHE_ADDRESSES];
        size_t n;
} Half;

struct Pending {
        DnsHostnames *h;
        Pending *next;
        char name[NAME_BUF]; /* normalized */
        Waiter *waiters;
        size_t n_waiters;
        Half a, aaaa;
};

static Pending *pending_free(Pending *p)
{
        if (!p)
                return NULL;
        free(p->waiters);
        return mfree(p);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Pending *, pending_free);

static int pending_add_waiter(Pending *p, LoopResolveDone done, void *token)
{
        Waiter *v = reallocarray(p->waiters, p->n_waiters + 1, sizeof *v);
        if (!v)
                return -ENOMEM;
        p->waiters = v;
        v[p->n_waiters++] = (Waiter){.done = done, .token = token};
        return 0;
}

static void pending_unlink(Pending *p)
{
        if (!p->h)
                return;
        for (Pending **i = &p->h->pending; *i; i = &(*i)->next)
                if (*i == p) {
                        *i = p->next;
                        break;
                }
        p->h = NULL;
        p->next = NULL;
}

/* Addresses as the loop takes them: text, IPv4 first. */
static void answer_addresses(const DnsAddress *v, size_t n, const char **texts, LoopResolveAnswer *ret)
{
        for (size_t i = 0; i < n; i++)
                texts[i] = v[i].text;
        *ret = (LoopResolveAnswer){.addresses = texts, .n_addresses = n};
}

/* What a name without addresses failed with: NXDOMAIN (both say it) over
 * "no records of this type", and a failure to get any answer over both. */
static const Half *failure_of(const Pending *p)
{
        if (p->a.error == -ENODATA && p->aaaa.error < 0 && p->aaaa.error != -ENODATA)
                return &p->aaaa;
        return &p->a;
}

static void pending_complete(Pending *p)
{
        _cleanup_(pending_freep) _unused_ Pending *owned = p;
        DnsAddress all[DNS_CACHE_ADDRESSES];
        const char *texts[DNS_CACHE_ADDRESSES];
        LoopResolveAnswer answer;
        DnsHostnames *h = p->h;
        size_t n = 0;

        for (size_t i = 0; i < p->a.n && n < ELEMENTSOF(all); i++)
                all[n++] = p->a.addresses[i];
        for (size_t i = 0; i < p->aaaa.n && n < ELEMENTSOF(all); i++)
                all[n++] = p->aaaa.addresses[i];
        if (n > 0)
                answer_addresses(all, n, texts, &answer);
        else {
                const Half *f = failure_of(p);
                answer = (LoopResolveAnswer){.error = f->error < 0 ? f->error : -ENODATA,
                                             .message = f->message};
        }
        if (h) {
                if (n == 0)
                        h->stats.failures++;
                else
                        (void) dns_cache_put(h->cache, p->name, all, n, now_usec(CLOCK_MONOTONIC));
                pending_unlink(p);
        }
        log_debug("dns: %s: %s", p->name, n > 0 ? all[0].text : answer.message);
        /* `h` may be gone after any of these. */
        for (size_t i = 0; i < p->n_waiters; i++)
                p->waiters[i].done(p->waiters[i].token, &answer);
}

static void half_set(Half *half, const DnsResult *res)
{
        half->done = true;
        half->error = res->error;
        (void) snprintf(half->message, sizeof half->message, "%s", strempty(res->message));
        for (size_t i = 0; res->error >= 0 && i < res->n_addresses && half->n < ELEMENTSOF(half->addresses);
             i++)
                half->addresses[half->n++] = res->addresses[i];
        if (res->error >= 0 && half->n == 0)
                half->error = -ENODATA;
}

static void on_a(DnsResolver *r, const DnsResult *res, void *userdata)
{
        Pending *p = userdata;

        (void) r;
        half_set(&p->a, res);
        if (p->aaaa.done)
                pending_complete(p);
}

static void on_aaaa(DnsResolver *r, const DnsResult *res, void *userdata)
{
        Pending *p = userdata;

        (void) r;
        half_set(&p->aaaa, res);
        if (p->a.done)
                pending_complete(p);
}

/* A query c-ares refused to send: its answer, at once. */
static void half_refused(Half *half, int error)
{
        half->done = true;
        half->error = error;
        (void) snprintf(half->message, sizeof half->message, "%s", strerror(-error));
}

static int lookup_start(DnsHostnames *h, const char *norm, LoopResolveDone done, void *token)
{
        _cleanup_(pending_freep) Pending *owned = calloc(1, sizeof(Pending));
        Pending *p = owned;
        int e;

        if (!p)
                return -ENOMEM;
        memcpy(p->name, norm, strlen(norm) + 1);
        e = pending_add_waiter(p, done, token);
        if (e < 0)
                return e;
        TAKE_PTR(owned); /* pending_complete() frees it */
        p->h = h;
        p->next = h->pending;
        h->pending = p;
        h->stats.lookups++;

        /* Callbacks never come from inside dns_lookup_*(): only their errors do. */
        e = dns_search_a(h->resolver, norm, on_a, p);
        if (e < 0)
                half_refused(&p->a, e);
        e = dns_search_aaaa(h->resolver, norm, on_aaaa, p);
        if (e < 0)
                half_refused(&p->aaaa, e);
        if (p->a.done && p->aaaa.done)
                pending_complete(p); /* `done` hears it before we return: the loop allows it */
        return 0;
}

/* The hosts file as it is now: read again when its identity, size or time changed. */
static void hosts_refresh(DnsHostnames *h)
{
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t len = 0;
        int e;

        if (!h->hosts_path)
                return;
        if (stat(h->hosts_path, &st) < 0) {
                if (h->hosts_stat.st_ino != 0)
                        log_debug("dns: %s is gone", h->hosts_path);
                dns_hosts_done(&h->hosts);
                h->hosts_stat = (struct stat){};
                return;
        }
        if (st.st_ino == h->hosts_stat.st_ino && st.st_dev == h->hosts_stat.st_dev &&
            st.st_size == h->hosts_stat.st_size && st.st_mtim.tv_sec == h->hosts_stat.st_mtim.tv_sec &&
            st.st_mtim.tv_nsec == h->hosts_stat.st_mtim.tv_nsec)
                return;
        e = read_full_file(h->hosts_path, DNS_HOSTS_SIZE_MAX, &text, &len);
        if (e >= 0)
                e = dns_hosts_parse(text, len, &h->hosts);
        if (e < 0) {
                /* What we had stays; the next request tries again. */
                (void) log_debug_errno(e, "dns: cannot read %s", h->hosts_path);
                return;
        }
        h->hosts_stat = st;
        log_debug("dns: %s: %zu names and addresses", h->hosts_path, h->hosts.n);
}

static int answer_now(const DnsAddress *v, size_t n, LoopResolveDone done, void *token)
{
        const char *texts[DNS_CACHE_ADDRESSES];
        LoopResolveAnswer answer;

        n = MIN(n, ELEMENTSOF(texts));
        answer_addresses(v, n, texts, &answer);
        done(token, &answer);
        return 0;
}

static int answer_hosts(const DnsHostsEntry *e, size_t n, LoopResolveDone done, void *token)
{
        DnsAddress v[DNS_CACHE_ADDRESSES];
        size_t k = 0;

        /* IPv4 first, as from the servers; each family in the file's order. */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < n && k < ELEMENTSOF(v); i++)
                        if ((e[i].address.family == AF_INET) == (pass == 0))
                                v[k++] = e[i].address;
        return answer_now(v, k, done, token);
}

int dns_hostnames_resolve(DnsHostnames *h, const char *name, LoopResolveDone done, void *token)
{
        const DnsAddress loopback[] = {
                {.family = AF_INET, .in.s_addr = htonl(INADDR_LOOPBACK), .text = "127.0.0.1"},
                {.family = AF_INET6, .in6 = IN6ADDR_LOOPBACK_INIT, .text = "::1"},
        };
        const DnsHostsEntry *entries = NULL;
        const DnsAddress *cached = NULL;
        char norm[NAME_BUF];
        size_t n;

        assert_return(h && name && done, -EINVAL);
        if (dns_name_is_localhost(name)) {
                h->stats.localhost++;
                return answer_now(loopback, ELEMENTSOF(loopback), done, token);
        }
        hosts_refresh(h);
        n = dns_hosts_find(&h->hosts, name, &entries);
        if (n > 0) {
                h->stats.hosts++;
                return answer_hosts(entries, n, done, token);
        }
        if (!dns_lookup_name_is_valid(name) || !dns_name_normalize(name, norm, sizeof norm)) {
                done(token, &(LoopResolveAnswer){.error = -EINVAL, .message = "not a name DNS can look up"});
                return 0;
        }
        n = dns_cache_get(h->cache, norm, now_usec(CLOCK_MONOTONIC), &cached);
        if (n > 0) {
                h->stats.cached++;
                return answer_now(cached, n, done, token);
        }
        for (Pending *p = h->pending; p; p = p->next)
                if (streq(p->name, norm)) {
                        int e = pending_add_waiter(p, done, token);
                        if (e >= 0)
                                h->stats.joined++;
                        return e;
                }
        return lookup_start(h, norm, done, token);
}

static int resolve_hook(void *userdata, const char *name, LoopResolveDone done, void *token)
{
        return dns_hostnames_resolve(userdata, name, done, token);
}

static void hostnames_free(void *userdata)
{
        DnsHostnames *h = userdata;

        if (!h)
                return;
        /* Completes what is pending with -ECANCELED (through on_a/on_aaaa) while `h` still is. */
        h->resolver = dns_resolver_free(h->resolver);
        assert(!h->pending);
        dns_cache_free(h->cache);
        dns_hosts_done(&h->hosts);
        free(h->hosts_path);
        free(h);
}

int dns_hostnames_attach(Loop *loop, const DnsHostnamesConfig *cfg, DnsHostnames **ret)
{
        DnsHostnames *h = NULL;
        const char *hosts = cfg && cfg->hosts ? cfg->hosts : HOSTS_DEFAULT;
        int e;

        assert_return(loop, -EINVAL);
        h = calloc(1, sizeof *h);
        if (!h)
                return -ENOMEM;
        h->cache = dns_cache_new();
        if (!h->cache || (*hosts && !(h->hosts_path = strdup(hosts))))
                e = -ENOMEM;
        else
                e = dns_resolver_new(loop, cfg ? &cfg->dns : NULL, &h->resolver);
        if (e >= 0)
                e = loop_set_resolver(loop, resolve_hook, hostnames_free, h);
        if (e < 0) {
                hostnames_free(h);
                return e;
        }
        if (ret)
                *ret = h;
        return 0;
}

void dns_hostnames_get_stats(DnsHostnames *h, DnsHostnamesStats *ret)
{
        assert(h && ret);
        *ret = h->stats;
}
