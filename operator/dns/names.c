/* The resolver's pure helpers: name syntax, status mapping, SRV ordering,
 * reverse names and the worst-case duration of a lookup. */
#include <ares.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "dns-internal.h"

#define DNS_NAME_MAX  253
#define DNS_LABEL_MAX 63

static bool label_char_ok(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '_';
}

bool dns_lookup_name_is_valid(const char *name)
{
        size_t len, label = 0;

        if (!name)
                return false;
        len = strlen(name);
        if (len > 0 && name[len - 1] == '.')
                len--; /* one trailing dot: the absolute form of the same name */
        if (len == 0 || len > DNS_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = name[i];

                if (c == '.') {
                        if (label == 0 || name[i - 1] == '-')
                                return false;
                        label = 0;
                        continue;
                }
                if (!label_char_ok(c))
                        return false;
                if (label == 0 && c == '-')
                        return false;
                if (++label > DNS_LABEL_MAX)
                        return false;
        }
        return label > 0 && name[len - 1] != '-';
}

static bool port_is_valid(const char *s)
{
        unsigned long v = 0;

        if (!*s || strlen(s) > 5)
                return false;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return false;
                v = v * 10 + (unsigned long) (*p - '0');
        }
        return v >= 1 && v <= 65535;
}

static bool server_is_valid(char *e)
{
        struct in6_addr a6;
        struct in_addr a4;
        char *colon;

        if (e[0] == '[') {
                char *end = strchr(e, ']');
                if (!end)
                        return false;
                *end = 0;
                if (inet_pton(AF_INET6, e + 1, &a6) != 1)
                        return false;
                return end[1] == ':' && port_is_valid(end + 2);
        }
        colon = strchr(e, ':');
        if (colon && strchr(colon + 1, ':'))
                return inet_pton(AF_INET6, e, &a6) == 1; /* bare IPv6, no port */
        if (colon) {
                *colon = 0;
                if (!port_is_valid(colon + 1))
                        return false;
        }
        return inet_pton(AF_INET, e, &a4) == 1;
}

bool dns_servers_are_valid(const char *csv)
{
        char buf[DNS_SERVERS_MAX + 1];
        char *p = buf;
        size_t n;

        if (!csv)
                return false;
        n = strlen(csv);
        if (n == 0 || n > DNS_SERVERS_MAX)
                return false;
        memcpy(buf, csv, n + 1);
        for (;;) {
                char *comma = strchr(p, ',');

                if (comma)
                        *comma = 0;
                if (!server_is_valid(p))
                        return false;
                if (!comma)
                        return true;
                p = comma + 1;
        }
}

int dns_status_to_errno(int status)
{
        switch (status) {
        case ARES_SUCCESS:
                return 0;
        case ARES_ENOTFOUND:
        case ARES_ENONAME:
                return -ENOENT;
        case ARES_ENODATA:
                return -ENODATA;
        case ARES_ETIMEOUT:
                return -ETIMEDOUT;
        case ARES_ECONNREFUSED:
                return -ECONNREFUSED;
        case ARES_EBADNAME:
                return -EINVAL;
        case ARES_ENOMEM:
                return -ENOMEM;
        case ARES_ECANCELLED:
        case ARES_EDESTRUCTION:
                return -ECANCELED;
        default:
                return -EIO;
        }
}

static int srv_compare(const void *a, const void *b)
{
        const DnsSrv *x = a, *y = b;
        int r;

        if (x->priority != y->priority)
                return x->priority < y->priority ? -1 : 1;
        if (x->weight != y->weight)
                return x->weight > y->weight ? -1 : 1;
        r = strcmp(strempty(x->target), strempty(y->target));
        if (r != 0)
                return r;
        return (int) x->port - (int) y->port;
}

void dns_srv_sort(DnsSrv *srv, size_t n)
{
        if (n > 1)
                qsort(srv, n, sizeof *srv, srv_compare);
}

int dns_reverse_name(const char *address, char **ret_name, int *ret_family, DnsInAddr *ret_addr)
{
        static const char hex[] = "0123456789abcdef";
        DnsInAddr a = {};
        char *name;

        assert_return(address && ret_name, -EINVAL);
        if (inet_pton(AF_INET, address, &a.in) == 1) {
                const uint8_t *b = (const uint8_t *) &a.in;

                name = strdup_printf("%u.%u.%u.%u.in-addr.arpa", b[3], b[2], b[1], b[0]);
                if (!name)
                        return -ENOMEM;
                if (ret_family)
                        *ret_family = AF_INET;
        } else if (inet_pton(AF_INET6, address, &a.in6) == 1) {
                /* 32 nibbles, each "x.", then "ip6.arpa" and its NUL. */
                name = malloc(sizeof(a.in6.s6_addr) * 4 + sizeof("ip6.arpa"));
                if (!name)
                        return -ENOMEM;
                char *p = name;
                for (int i = 15; i >= 0; i--) {
                        *p++ = hex[a.in6.s6_addr[i] & 0xf];
                        *p++ = '.';
                        *p++ = hex[a.in6.s6_addr[i] >> 4];
                        *p++ = '.';
                }
                memcpy(p, "ip6.arpa", sizeof("ip6.arpa"));
                if (ret_family)
                        *ret_family = AF_INET6;
        } else
                return -EINVAL;
        if (ret_addr)
                *ret_addr = a;
        *ret_name = name;
        return 0;
}

usec_t dns_max_duration(usec_t timeout, unsigned tries, unsigned n_servers)
{
        /* tries is at most 8 and timeout at most a minute: no overflow. */
        return (usec_t) n_servers * timeout * ((UINT64_C(1) << tries) - 1);
}
