/* The pure parts of the resolver, shared with the unit tests: status mapping,
 * SRV ordering, reverse names and the worst-case duration. No I/O here. */
#pragma once

#include "resolver.h"

typedef union DnsInAddr {
        struct in_addr in;
        struct in6_addr in6;
} DnsInAddr;

#define DNS_SERVERS_MAX 1024

/* "192.0.2.1", "192.0.2.1:5353", "[2001:db8::1]:53" or "2001:db8::1",
 * comma-separated, no empty entries, ports 1-65535 (brackets need a port). Checked before c-ares
 * sees the list: 1.18 wraps ports over 65535 and skips empty entries. */
bool dns_servers_are_valid(const char *csv);

/* ares status -> 0 or negative errno, the one place this mapping lives. */
int dns_status_to_errno(int status);

/* Priority ascending, then weight descending (the heavier target is the one
 * RFC 2782's weighted pick favours), then target and port so the order is
 * stable whatever order the server answered in. */
void dns_srv_sort(DnsSrv *srv, size_t n);

/* "192.0.2.1" -> "1.2.0.192.in-addr.arpa", "2001:db8::1" ->
 * "1.0.0.0...8.b.d.0.1.0.0.2.ip6.arpa"; -EINVAL for anything that is not an
 * address. ret_family and ret_addr (both optional) get the binary form. */
int dns_reverse_name(const char *address, char **ret_name, int *ret_family, DnsInAddr *ret_addr);

/* c-ares 1.18 tries every server once per round and doubles the timeout
 * each round: n_servers x timeout x (2^tries - 1). */
usec_t dns_max_duration(usec_t timeout, unsigned tries, unsigned n_servers);

/* ---- /etc/hosts (hosts.c) ---- */

#define DNS_HOSTS_SIZE_MAX (4u << 20) /* bytes of a hosts file we read; a larger one is -E2BIG */

/* One (name, address) pair of a hosts file. */
typedef struct DnsHostsEntry {
        char *name;         /* lower case, without a trailing dot */
        unsigned line;      /* where it was: a name's addresses keep the file's order */
        DnsAddress address; /* ttl 0 */
} DnsHostsEntry;

typedef struct DnsHosts {
        DnsHostsEntry *entries; /* by name, then line; no pair twice */
        size_t n;
} DnsHosts;

/* hosts(5): per line an IPv4 or IPv6 address, then the canonical name and
 * its aliases, separated by blanks; '#' comments to the end of the line.
 * Lines whose address does not parse (a scope "%eth0" included) or that
 * name nothing are skipped, as glibc skips them; names longer than 253
 * characters too. -ENOMEM only. */
int dns_hosts_parse(const char *text, size_t len, DnsHosts *ret);
void dns_hosts_done(DnsHosts *h);
/* The entries of `name` (any case, one trailing dot allowed), consecutive in
 * file order: how many, *ret the first (borrowed; unset when 0). */
size_t dns_hosts_find(const DnsHosts *h, const char *name, const DnsHostsEntry **ret);

/* RFC 6761 section 6.3: "localhost", and every name under ".localhost", is
 * the loopback address and never asked of a server. */
bool dns_name_is_localhost(const char *name);

/* ---- the answers kept between requests (cache.c) ---- */

#define DNS_CACHE_NAMES     128U /* names kept; over it, the answer that expires first goes */
#define DNS_CACHE_ADDRESSES 16U  /* addresses kept per name; the rest of an answer is dropped */
#define DNS_CACHE_TTL_MAX   (300 * USEC_PER_SEC) /* however long the server said */

typedef struct DnsCache DnsCache;

DnsCache *dns_cache_new(void);
DnsCache *dns_cache_free(DnsCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(DnsCache *, dns_cache_free);
/* Keeps the first DNS_CACHE_ADDRESSES of `a` for `name` until `now` plus the
 * smallest TTL among them (at most DNS_CACHE_TTL_MAX), replacing what was
 * kept for it. A TTL of 0, or no address, keeps nothing and forgets the
 * name: failures are not cached, a name that stops resolving is asked again.
 * Names are compared as dns_hosts_find() compares them. -EINVAL for what is
 * no name, -ENOMEM. */
int dns_cache_put(DnsCache *c, const char *name, const DnsAddress *a, size_t n, usec_t now);
/* The addresses kept for `name` while `now` is before their expiry: how
 * many, *ret borrowed until the next dns_cache_put() (unset when 0). */
size_t dns_cache_get(DnsCache *c, const char *name, usec_t now, const DnsAddress **ret);
size_t dns_cache_size(const DnsCache *c);

/* `name` in the form both compare: lower case, one trailing dot dropped.
 * false when it does not fit in `buf` (DNS names are at most 253). */
bool dns_name_normalize(const char *name, char *buf, size_t size);
