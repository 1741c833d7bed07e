/* Address helpers. */
#include <arpa/inet.h>

#include "netutil.h"

int ip_parse(const char *s, IpAddr *ret)
{
        IpAddr a = {};
        assert_return(s && ret, -EINVAL);
        if (inet_pton(AF_INET, s, a.bytes) == 1)
                a.family = AF_INET;
        else if (inet_pton(AF_INET6, s, a.bytes) == 1)
                a.family = AF_INET6;
        else
                return -EINVAL;
        *ret = a;
        return 0;
}

int cidr_parse(const char *s, Cidr *ret)
{
        char buf[INET6_ADDRSTRLEN + 8];
        char *slash, *end = NULL;
        Cidr c = {};

        assert_return(s && ret, -EINVAL);
        if (strlen(s) >= sizeof buf)
                return -EINVAL;
        strcpy(buf, s);
        slash = strchr(buf, '/');
        if (!slash)
                return -EINVAL;
        *slash = 0;
        if (ip_parse(buf, &c.addr) < 0 || !slash[1])
                return -EINVAL;
        unsigned long p = strtoul(slash + 1, &end, 10);
        if (*end || p > (c.addr.family == AF_INET ? 32u : 128u))
                return -EINVAL;
        c.prefix = (unsigned) p;
        *ret = c;
        return 0;
}

bool cidr_contains(const Cidr *c, const IpAddr *a)
{
        if (c->addr.family != a->family)
                return false;
        unsigned full = c->prefix / 8, rest = c->prefix % 8;
        if (memcmp(c->addr.bytes, a->bytes, full) != 0)
                return false;
        if (rest == 0)
                return true;
        unsigned char mask = (unsigned char) (0xff << (8 - rest));
        return (c->addr.bytes[full] & mask) == (a->bytes[full] & mask);
}

bool ip_is_documentation(const IpAddr *a)
{
        static const char *const ranges[] = {"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",
                                             "2001:db8::/32"};
        for (size_t i = 0; i < ELEMENTSOF(ranges); i++) {
                Cidr c;
                if (cidr_parse(ranges[i], &c) >= 0 && cidr_contains(&c, a))
                        return true;
        }
        return false;
}

bool ip_is_special(const IpAddr *a)
{
        static const char *const ranges[] = {"0.0.0.0/32", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/24",
                                             "::/128",     "::1/128",     "fe80::/10",      "ff02::/16"};
        for (size_t i = 0; i < ELEMENTSOF(ranges); i++) {
                Cidr c;
                if (cidr_parse(ranges[i], &c) >= 0 && cidr_contains(&c, a))
                        return true;
        }
        return false;
}

char *ip_to_string(const IpAddr *a, char *buf, size_t n)
{
        return inet_ntop(a->family, a->bytes, buf, (socklen_t) n) ? buf : NULL;
}

char *ip_url_host(const IpAddr *a, char *buf, size_t n)
{
        char t[INET6_ADDRSTRLEN];
        if (!ip_to_string(a, t, sizeof t))
                return NULL;
        if (snprintf(buf, n, a->family == AF_INET6 ? "[%s]" : "%s", t) >= (int) n)
                return NULL;
        return buf;
}

bool ip_equal(const IpAddr *a, const IpAddr *b)
{
        return a->family == b->family && memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

const char *ip_unbracket(const char *s, char *buf, size_t n)
{
        size_t len = s ? strlen(s) : 0;
        if (len < 2 || s[0] != '[' || s[len - 1] != ']')
                return s;
        if (len - 2 >= n)
                return NULL;
        memcpy(buf, s + 1, len - 2);
        buf[len - 2] = '\0';
        return buf;
}

bool ip_text_equal(const char *a, const char *b)
{
        IpAddr x, y;
        return a && b && ip_parse(a, &x) >= 0 && ip_parse(b, &y) >= 0 && ip_equal(&x, &y);
}
