/* Asynchronous DNS on the loop: c-ares driven by sd-event (A, AAAA, SRV, PTR).
 * No threads and no blocking: c-ares' sockets become sd-event I/O sources and
 * its timeouts one sd-event timer. dns_lookup_*() names are absolute (no search
 * list, no /etc/hosts): we ask the configured servers exactly what the caller
 * asked; dns_search_a/aaaa() go through the search list as glibc does.
 * The loop's requests get their names from hostnames.h, which puts localhost,
 * the hosts file and a cache in front of this resolver.
 *
 * A lookup that returns 0 invokes its callback exactly once; one that returns
 * an error never does. Freeing the resolver completes pending lookups with
 * -ECANCELED (inside dns_resolver_free(), also from inside a callback). A
 * lookup ends at the latest after dns_resolver_get_max_duration().
 *
 * Errors, mapped once from c-ares' statuses: -ENOENT the name does not exist
 * (NXDOMAIN), -ENODATA it exists without records of that type, -ETIMEDOUT no
 * answer after every try, -ECONNREFUSED no server would serve us (nothing
 * listens, or with c-ares 1.18 every server answered REFUSED), -EINVAL bad
 * name or address, -ENOMEM, -ECANCELED, -EIO anything else (SERVFAIL,
 * malformed answers). c-ares' own text is in DnsResult.message for logs. */
#pragma once

#include <netinet/in.h>
#include <stdint.h>

#include "loop/loop.h"

typedef struct DnsResolver DnsResolver;

#define DNS_DEFAULT_TIMEOUT (1 * USEC_PER_SEC)
#define DNS_DEFAULT_TRIES   2U
#define DNS_MAX_RECORDS     256U /* answers kept per lookup; the rest are dropped */
#define DNS_MAX_SEARCH      6U   /* search domains, as resolv.conf allows */

typedef struct DnsConfig {
        const char *servers; /* "127.0.0.53:5353,[::1]:53"; NULL = the servers of /etc/resolv.conf */
        usec_t timeout;      /* first try per server (ms resolution); 0 = 1 s; doubles each round */
        unsigned tries;      /* rounds over all servers; 0 = 2, at most 8 */
        /* The search list of dns_search_a()/dns_search_aaaa(): "a.example,b.example"; NULL =
         * /etc/resolv.conf's search and ndots; "" = none. */
        const char *search;
} DnsConfig;

typedef struct DnsAddress {
        int family; /* AF_INET or AF_INET6 */
        union {
                struct in_addr in;
                struct in6_addr in6;
        };
        uint32_t ttl; /* seconds */
        char text[INET6_ADDRSTRLEN];
} DnsAddress;

typedef struct DnsSrv {
        uint16_t priority;
        uint16_t weight;
        uint16_t port;
        const char *target; /* without the trailing dot */
} DnsSrv;

/* Everything is borrowed and valid until the callback returns. */
typedef struct DnsResult {
        int error;                   /* 0 or a negative errno as above */
        const char *message;         /* c-ares' text for its status, for logs */
        const char *name;            /* the name asked (PTR: the reverse name) */
        unsigned timeouts;           /* tries that timed out on the way */
        const DnsAddress *addresses; /* A/AAAA, in answer order */
        size_t n_addresses;
        const DnsSrv *srv; /* priority ascending, then weight descending, target, port */
        size_t n_srv;
        const char *const *names; /* PTR */
        size_t n_names;
} DnsResult;

typedef void (*DnsCallback)(DnsResolver *r, const DnsResult *res, void *userdata);

/* -EINVAL for a malformed server list or out-of-range timeout/tries. The
 * resolver keeps a reference to the loop's sd-event, not to the loop: a loop
 * owns the resolver of its requests (hostnames.h). */
int dns_resolver_new(Loop *loop, const DnsConfig *cfg, DnsResolver **ret);
DnsResolver *dns_resolver_free(DnsResolver *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(DnsResolver *, dns_resolver_free);

/* Worst case for one lookup: servers x timeout x (2^tries - 1). */
usec_t dns_resolver_get_max_duration(DnsResolver *r);
unsigned dns_resolver_get_pending(DnsResolver *r);

/* Names are checked first (-EINVAL, nothing sent): see dns_lookup_name_is_valid(). */
int dns_lookup_a(DnsResolver *r, const char *name, DnsCallback cb, void *userdata);
int dns_lookup_aaaa(DnsResolver *r, const char *name, DnsCallback cb, void *userdata);
/* The same through the search list, as glibc resolves a host name: a name with fewer
 * dots than ndots (resolv.conf's, default 1) is tried with each search domain first,
 * then as it is; one with as many is tried as it is first; one ending in '.' only as it
 * is. DnsResult.name is the name asked. For names a user gives (an object store's
 * endpoint "minio.minio.svc" inside a cluster), never for SRV discovery. */
int dns_search_a(DnsResolver *r, const char *name, DnsCallback cb, void *userdata);
int dns_search_aaaa(DnsResolver *r, const char *name, DnsCallback cb, void *userdata);
int dns_lookup_srv(DnsResolver *r, const char *name, DnsCallback cb, void *userdata);
/* `address` is an IPv4 or IPv6 address in text form. */
int dns_lookup_ptr(DnsResolver *r, const char *address, DnsCallback cb, void *userdata);

/* A name we may ask a server for: at most 253 characters (plus one trailing
 * dot), labels of 1-63 letters, digits, '-' and '_' ("_etcd-server-ssl._tcp"),
 * no label starting or ending with '-'. Looser than a Kubernetes name
 * (base/names.h): DNS itself allows upper case, and SRV names use '_'. */
bool dns_lookup_name_is_valid(const char *name);
