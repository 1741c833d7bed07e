/* The host names of the loop's HTTP requests (object-store endpoints, API
 * servers of kubeconfigs, etcd endpoints given by name), resolved on the loop
 * by c-ares and handed to libcurl as addresses (loop.h, "Names"). In this
 * order, as glibc's "files dns" would, first match wins:
 *
 *   1. "localhost" and every name under ".localhost": 127.0.0.1 and ::1,
 *      never asked of anyone (RFC 6761 section 6.3);
 *   2. the hosts file (/etc/hosts), read again whenever it changes;
 *   3. the answers kept from earlier lookups, for their TTL (at most
 *      DNS_CACHE_TTL_MAX, at most DNS_CACHE_NAMES names);
 *   4. the servers (resolver.h: /etc/resolv.conf's by default): an A and an
 *      AAAA query at once, IPv4 addresses first. Requests for a name already
 *      being looked up wait for that lookup instead of sending their own.
 *
 * Names go through the search list as glibc's would (resolv.conf's search and
 * ndots, or DnsConfig.search): "minio.minio.svc" in a pod is found as
 * minio.minio.svc.cluster.local. A name that does not
 * resolve is not remembered: the next request asks again, and fails with
 * c-ares' own words ("Domain name not found"). */
#pragma once

#include "resolver.h"

typedef struct DnsHostnames DnsHostnames;

typedef struct DnsHostnamesConfig {
        DnsConfig dns;     /* the servers and their timeouts; zero: /etc/resolv.conf's, 1 s, 2 tries */
        const char *hosts; /* the hosts file; NULL: /etc/hosts; "": none */
} DnsHostnamesConfig;

typedef struct DnsHostnamesStats {
        uint64_t localhost; /* answered as loopback */
        uint64_t hosts;     /* answered from the hosts file */
        uint64_t cached;    /* answered from an earlier lookup */
        uint64_t joined;    /* waited for a lookup of the same name in flight */
        uint64_t lookups;   /* names asked of the servers (an A and an AAAA query each) */
        uint64_t failures;  /* of those lookups, names that did not resolve */
} DnsHostnamesStats;

/* Makes `loop` resolve the names of its requests here (loop_set_resolver()),
 * before any request is in flight (-EBUSY). The loop owns what this creates;
 * *ret (optional) is borrowed for as long as the loop lives. -EINVAL for a
 * bad DnsConfig (dns_resolver_new()). */
int dns_hostnames_attach(Loop *loop, const DnsHostnamesConfig *cfg, DnsHostnames **ret);

/* The loop's LoopResolveFunc, for callers that want an answer without a
 * request. `done` may be called before this returns. */
int dns_hostnames_resolve(DnsHostnames *h, const char *name, LoopResolveDone done, void *token);

void dns_hostnames_get_stats(DnsHostnames *h, DnsHostnamesStats *ret);
