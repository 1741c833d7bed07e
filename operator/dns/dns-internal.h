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
