/* IP addresses and CIDRs as render needs them: parsing, containment, the
 * documentation ranges, and URL host forms (IPv6 in brackets). Pure. */
#pragma once

#include <netinet/in.h>

#include "base/macro.h"

typedef struct IpAddr {
        int family; /* AF_INET or AF_INET6 */
        unsigned char bytes[16];
} IpAddr;

typedef struct Cidr {
        IpAddr addr;
        unsigned prefix;
} Cidr;

int ip_parse(const char *s, IpAddr *ret);
int cidr_parse(const char *s, Cidr *ret);
bool cidr_contains(const Cidr *c, const IpAddr *a);
/* 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32. */
bool ip_is_documentation(const IpAddr *a);
/* What Kubernetes' ValidateNonSpecialIP refuses in an Endpoints address: unspecified,
 * loopback (127.0.0.0/8, ::1), link-local unicast (169.254.0.0/16, fe80::/10) and
 * link-local multicast (224.0.0.0/24, ff02::/16). */
bool ip_is_special(const IpAddr *a);
/* Canonical text ("10.0.0.1", "fd00::1") into buf (>= INET6_ADDRSTRLEN). */
char *ip_to_string(const IpAddr *a, char *buf, size_t n);
/* "10.0.0.1" or "[fd00::1]", into buf (>= INET6_ADDRSTRLEN + 2). */
char *ip_url_host(const IpAddr *a, char *buf, size_t n);
bool ip_equal(const IpAddr *a, const IpAddr *b);
/* "[fd00::1]" as "fd00::1" (copied into buf); any other text as it is. NULL when
 * the bracketed text does not fit. NODE_<n>_IP carries IPv6 in brackets, as
 * upstream's; flags that take an address accept both forms through this. */
const char *ip_unbracket(const char *s, char *buf, size_t n);
/* Both texts parse as the same address ("fd00::1" and "fd00:0::1"); false if either is no IP. */
bool ip_text_equal(const char *a, const char *b);
