/* The hosts file as the resolver reads it (hosts(5)), and the names RFC 6761
 * reserves for loopback. Pure: the text comes in, a sorted table goes out;
 * reading the file and noticing that it changed is hostnames.c's. */
#include <arpa/inet.h>
#include <assert.h>
#include <sys/socket.h>

#include "dns-internal.h"

#define NAME_MAX_LEN 253

bool dns_name_normalize(const char *name, char *buf, size_t size)
{
        size_t n = name ? strlen(name) : 0;

        if (n > 0 && name[n - 1] == '.')
                n--;
        if (n == 0 || n >= size || n > NAME_MAX_LEN)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                if (c >= 'A' && c <= 'Z')
                        c = (char) (c | 0x20);
                buf[i] = c;
        }
        buf[n] = 0;
        return true;
}

bool dns_name_is_localhost(const char *name)
{
        char n[NAME_MAX_LEN + 1];

        if (!dns_name_normalize(name, n, sizeof n))
                return false;
        return streq(n, "localhost") || endswith(n, ".localhost");
}

static bool is_blank(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int parse_address(const char *p, size_t n, DnsAddress *ret)
{
        char text[INET6_ADDRSTRLEN];
        DnsAddress a = {};

        if (n >= sizeof text || memchr(p, 0, n))
                return -EINVAL;
        memcpy(text, p, n);
        text[n] = 0;
        if (inet_pton(AF_INET, text, &a.in) == 1)
                a.family = AF_INET;
        else if (inet_pton(AF_INET6, text, &a.in6) == 1)
                a.family = AF_INET6;
        else
                return -EINVAL;
        /* The canonical text ("::0001" is "::1"), as the resolver gives it. */
        if (!inet_ntop(a.family, &a.in6, a.text, sizeof a.text))
                return -EINVAL;
        *ret = a;
        return 0;
}

static int add_entry(DnsHosts *h, size_t *allocated, const char *name, size_t n, unsigned line,
                     const DnsAddress *a)
{
        char raw[NAME_MAX_LEN + 2], norm[NAME_MAX_LEN + 1];

        /* Too long or holding a NUL: no name anyone can ask for. */
        if (n >= sizeof raw || memchr(name, 0, n))
                return 0;
        memcpy(raw, name, n);
        raw[n] = 0;
        if (!dns_name_normalize(raw, norm, sizeof norm))
                return 0;
        if (h->n == *allocated) {
                size_t m = MAX(*allocated * 2, (size_t) 16);
                DnsHostsEntry *v = reallocarray(h->entries, m, sizeof *v);
                if (!v)
                        return -ENOMEM;
                h->entries = v;
                *allocated = m;
        }
        char *copy = strdup(norm);
        if (!copy)
                return -ENOMEM;
        h->entries[h->n++] = (DnsHostsEntry){.name = copy, .line = line, .address = *a};
        return 0;
}

/* One line without its newline and comment: the address, then names. */
static int parse_line(DnsHosts *h, size_t *allocated, const char *p, size_t n, unsigned line)
{
        DnsAddress a;
        size_t i = 0, start;
        int r;

        while (i < n && is_blank(p[i]))
                i++;
        start = i;
        while (i < n && !is_blank(p[i]))
                i++;
        if (i == start || parse_address(p + start, i - start, &a) < 0)
                return 0;
        for (;;) {
                while (i < n && is_blank(p[i]))
                        i++;
                if (i == n)
                        return 0;
                start = i;
                while (i < n && !is_blank(p[i]))
                        i++;
                r = add_entry(h, allocated, p + start, i - start, line, &a);
                if (r < 0)
                        return r;
        }
}

static int entry_compare(const void *x, const void *y)
{
        const DnsHostsEntry *a = x, *b = y;
        int r = strcmp(a->name, b->name);

        if (r != 0)
                return r;
        return a->line < b->line ? -1 : a->line > b->line ? 1 : 0;
}

static bool same_address(const DnsAddress *a, const DnsAddress *b)
{
        return a->family == b->family && streq(a->text, b->text);
}

/* A name with the same address on two lines (or twice on one) keeps the first. */
static void drop_repeats(DnsHosts *h)
{
        size_t out = 0;

        for (size_t i = 0; i < h->n; i++) {
                bool repeat = false;
                for (size_t j = out; j > 0 && streq(h->entries[j - 1].name, h->entries[i].name); j--)
                        if (same_address(&h->entries[j - 1].address, &h->entries[i].address)) {
                                repeat = true;
                                break;
                        }
                if (repeat) {
                        free(h->entries[i].name);
                        continue;
                }
                h->entries[out++] = h->entries[i];
        }
        h->n = out;
}

int dns_hosts_parse(const char *text, size_t len, DnsHosts *ret)
{
        _cleanup_(dns_hosts_done) DnsHosts h = {};
        size_t allocated = 0, pos = 0;
        unsigned line = 0;
        int r;

        assert_return(ret && (text || len == 0), -EINVAL);
        while (pos < len) {
                const char *p = text + pos, *nl = memchr(p, '\n', len - pos);
                size_t n = nl ? (size_t) (nl - p) : len - pos;
                const char *hash = memchr(p, '#', n);

                pos += n + (nl ? 1 : 0);
                line++;
                r = parse_line(&h, &allocated, p, hash ? (size_t) (hash - p) : n, line);
                if (r < 0)
                        return r;
        }
        if (h.n > 1) {
                /* Stable: lines differ between entries of one name, except on one line. */
                qsort(h.entries, h.n, sizeof *h.entries, entry_compare);
                drop_repeats(&h);
        }
        dns_hosts_done(ret);
        *ret = h;
        h = (DnsHosts){};
        return 0;
}

void dns_hosts_done(DnsHosts *h)
{
        if (!h)
                return;
        for (size_t i = 0; i < h->n; i++)
                free(h->entries[i].name);
        free(h->entries);
        *h = (DnsHosts){};
}

size_t dns_hosts_find(const DnsHosts *h, const char *name, const DnsHostsEntry **ret)
{
        char norm[NAME_MAX_LEN + 1];
        size_t lo = 0, hi;

        if (!h || !ret || h->n == 0 || !dns_name_normalize(name, norm, sizeof norm))
                return 0;
        /* The first entry whose name is not below `norm`. */
        hi = h->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (strcmp(h->entries[mid].name, norm) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        size_t n = 0;
        while (lo + n < h->n && streq(h->entries[lo + n].name, norm))
                n++;
        if (n > 0)
                *ret = &h->entries[lo];
        return n;
}
