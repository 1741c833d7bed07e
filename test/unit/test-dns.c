/* Unit tests for the pure parts of operator/dns: name syntax, the one
 * mapping from c-ares statuses to errno, SRV ordering, reverse names and the
 * worst-case duration, the hosts file and the cache of answers, plus what
 * needs no server: argument checks, and the names answered without one
 * (localhost, the hosts file) on a loop. The resolver itself is tested
 * against dnsmasq in test/integration/test-dns-resolver.c, the loop's
 * requests for names in test/integration/test-dns-hostnames.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ares.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "base/fileio.h"
#include "dns/dns-internal.h"
#include "dns/hostnames.h"

/* A name to look up: looser than a Kubernetes name (base/names.h, test-base.c). */
static void test_name_valid(void **state)
{
        static const char *const good[] = {
                "a",
                "example.test",
                "example.test.",
                "_etcd-server-ssl._tcp.example.test",
                "etcd-0.cluster-1.example.com",
                "xn--bcher-kva.example",
                "123.456",
                "A.B-C.d",
                "MASTER-0.EXAMPLE.COM",
                "a_b.example",
                "a.",
                "0",
        };
        static const char *const bad[] = {
                "",
                ".",
                "..",
                ".example.test",
                "example..test",
                "example.test..",
                "-a.example",
                "a-.example",
                "a.example-",
                "a.-example",
                "-",
                "a-",
                "a-.",
                "sp ace.example",
                "under/slash",
                "star*.example",
                "a\n.example",
                "é.example",
        };

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!dns_lookup_name_is_valid(good[i]))
                        fail_msg("rejected \"%s\"", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (dns_lookup_name_is_valid(bad[i]))
                        fail_msg("accepted \"%s\"", bad[i]);
        assert_false(dns_lookup_name_is_valid(NULL));
}

static void test_name_lengths(void **state)
{
        char label[80], name[300];

        /* 63 characters per label, not 64. */
        memset(label, 'a', 63);
        label[63] = 0;
        assert_true(dns_lookup_name_is_valid(label));
        label[63] = 'a';
        label[64] = 0;
        assert_false(dns_lookup_name_is_valid(label));

        /* 253 characters in all (4 x 63 + 3 dots = 255 is too long). */
        memset(name, 0, sizeof name);
        for (int i = 0; i < 4; i++) {
                memset(name + i * 64, 'b', 63);
                if (i < 3)
                        name[i * 64 + 63] = '.';
        }
        assert_int_equal(strlen(name), 255);
        assert_false(dns_lookup_name_is_valid(name));
        name[253] = 0; /* "...bbb" cut to 253 */
        assert_true(dns_lookup_name_is_valid(name));
        name[253] = '.'; /* plus the trailing dot is still fine */
        name[254] = 0;
        assert_true(dns_lookup_name_is_valid(name));
        name[253] = 'b';
        assert_false(dns_lookup_name_is_valid(name));
}

static void test_servers(void **state)
{
        static const char *const good[] = {
                "127.0.0.53",
                "127.0.0.53:5353",
                "127.0.0.53:5353,127.0.0.54:53",
                "[::1]:53",
                "::1",
                "[2001:db8::1]:65535,192.0.2.1:1",
        };
        static const char *const bad[] = {
                "",
                ",",
                "127.0.0.1,",
                ",127.0.0.1",
                "127.0.0.1,,127.0.0.2",
                "127.0.0.1:",
                "127.0.0.1:0",
                "127.0.0.1:65536",
                "127.0.0.1:99999",
                "127.0.0.1:+53",
                "127.0.0.1:53x",
                "127.0.0.1 ",
                "localhost",
                "[::1]",
                "[::1",
                "[::1]53",
                "[127.0.0.1]:53",
                "::1:53:",
                "1.2.3",
        };
        char huge[DNS_SERVERS_MAX + 20] = "";

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!dns_servers_are_valid(good[i]))
                        fail_msg("rejected \"%s\"", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (dns_servers_are_valid(bad[i]))
                        fail_msg("accepted \"%s\"", bad[i]);
        assert_false(dns_servers_are_valid(NULL));
        while (strlen(huge) < DNS_SERVERS_MAX)
                strcat(huge, "127.0.0.1,");
        strcat(huge, "127.0.0.1");
        assert_false(dns_servers_are_valid(huge));
}

static void test_status_mapping(void **state)
{
        static const struct {
                int status;
                int error;
        } table[] = {
                {ARES_SUCCESS, 0},
                {ARES_ENOTFOUND, -ENOENT},
                {ARES_ENODATA, -ENODATA},
                {ARES_ETIMEOUT, -ETIMEDOUT},
                {ARES_ECONNREFUSED, -ECONNREFUSED},
                {ARES_EBADNAME, -EINVAL},
                {ARES_ENOMEM, -ENOMEM},
                {ARES_ECANCELLED, -ECANCELED},
                {ARES_EDESTRUCTION, -ECANCELED},
                {ARES_ESERVFAIL, -EIO},
                {ARES_EREFUSED, -EIO},
                {ARES_EFORMERR, -EIO},
                {ARES_EBADRESP, -EIO},
                {ARES_EOF, -EIO},
                {12345, -EIO},
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                if (dns_status_to_errno(table[i].status) != table[i].error)
                        fail_msg("status %d (%s): got %d, want %d", table[i].status,
                                 ares_strerror(table[i].status), dns_status_to_errno(table[i].status),
                                 table[i].error);
        }
}

static void test_srv_sort(void **state)
{
        DnsSrv srv[] = {
                {.priority = 10, .weight = 10, .port = 2380, .target = "b"},
                {.priority = 20, .weight = 100, .port = 2380, .target = "z"},
                {.priority = 10, .weight = 50, .port = 2381, .target = "c"},
                {.priority = 0, .weight = 0, .port = 2380, .target = "a"},
                {.priority = 10, .weight = 10, .port = 2379, .target = "b"},
                {.priority = 10, .weight = 10, .port = 2380, .target = "a"},
        };
        static const char *const want_target[] = {"a", "c", "a", "b", "b", "z"};
        static const uint16_t want_port[] = {2380, 2381, 2380, 2379, 2380, 2380};

        dns_srv_sort(srv, ELEMENTSOF(srv));
        for (size_t i = 0; i < ELEMENTSOF(srv); i++) {
                assert_string_equal(srv[i].target, want_target[i]);
                assert_int_equal(srv[i].port, want_port[i]);
                if (i > 0)
                        assert_true(srv[i - 1].priority <= srv[i].priority);
        }
        dns_srv_sort(NULL, 0);
        dns_srv_sort(srv, 1);
}

static void test_reverse_name(void **state)
{
        _cleanup_free_ char *v4 = NULL, *v6 = NULL, *none = NULL;
        DnsInAddr a;
        int family = 0;

        assert_int_equal(dns_reverse_name("192.0.2.10", &v4, &family, &a), 0);
        assert_string_equal(v4, "10.2.0.192.in-addr.arpa");
        assert_int_equal(family, AF_INET);
        assert_int_equal(((const uint8_t *) &a.in)[0], 192);

        assert_int_equal(dns_reverse_name("2001:db8::10", &v6, &family, NULL), 0);
        assert_string_equal(v6, "0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa");
        assert_int_equal(family, AF_INET6);
        assert_true(dns_lookup_name_is_valid(v6));

        family = 0;
        assert_int_equal(dns_reverse_name("192.0.2", &none, &family, NULL), -EINVAL);
        assert_int_equal(dns_reverse_name("host.example", &none, &family, NULL), -EINVAL);
        assert_int_equal(dns_reverse_name("", &none, NULL, NULL), -EINVAL);
        assert_int_equal(dns_reverse_name("192.0.2.1/24", &none, NULL, NULL), -EINVAL);
        assert_null(none);
        assert_int_equal(family, 0);
}

static void test_max_duration(void **state)
{
        assert_int_equal(dns_max_duration(USEC_PER_SEC, 1, 1), USEC_PER_SEC);
        assert_int_equal(dns_max_duration(USEC_PER_SEC, 2, 1), 3 * USEC_PER_SEC);
        assert_int_equal(dns_max_duration(200 * USEC_PER_MSEC, 3, 2), 2 * 7 * 200 * USEC_PER_MSEC);
        assert_int_equal(dns_max_duration(60 * USEC_PER_SEC, 8, 3), 3 * 255 * 60 * USEC_PER_SEC);
}

static void never_called(DnsResolver *r, const DnsResult *res, void *userdata)
{
        fail_msg("callback of a lookup that returned an error");
}

/* Needs no server: configuration is checked before anything is sent. */
static void test_config(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        DnsResolver *r = NULL;
        DnsConfig cfg = {.servers = "127.0.0.1:5353,[::1]:53", .timeout = 250 * USEC_PER_MSEC, .tries = 3};

        assert_int_equal(dns_resolver_new(l, &cfg, &r), 0);
        assert_int_equal(dns_resolver_get_max_duration(r), 2 * 7 * 250 * USEC_PER_MSEC);
        assert_int_equal(dns_resolver_get_pending(r), 0);
        assert_int_equal(dns_lookup_a(r, "bad..name", never_called, NULL), -EINVAL);
        assert_int_equal(dns_lookup_a(r, "ok.example", NULL, NULL), -EINVAL);
        assert_int_equal(dns_lookup_ptr(r, "not-an-address", never_called, NULL), -EINVAL);
        r = dns_resolver_free(r);

        static const DnsConfig bad[] = {
                {.servers = ""}, {.servers = "nonsense"},        {.servers = "127.0.0.1:5353,bogus"},
                {.timeout = 10}, {.timeout = 61 * USEC_PER_SEC}, {.tries = 9},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int k = dns_resolver_new(l, &bad[i], &r);
                if (k != -EINVAL)
                        fail_msg("config %zu: got %d, want -EINVAL", i, k);
                assert_null(r);
        }
        assert_int_equal(dns_resolver_new(NULL, NULL, &r), -EINVAL);
        assert_null(dns_resolver_free(NULL));
}

/* ---- the hosts file ---- */

static void check_hosts(const DnsHosts *h, const char *name, const char *const *want, size_t n_want)
{
        const DnsHostsEntry *e = NULL;
        size_t n = dns_hosts_find(h, name, &e);

        if (n != n_want)
                fail_msg("%s: %zu addresses, want %zu", name, n, n_want);
        for (size_t i = 0; i < n; i++)
                if (!streq(e[i].address.text, want[i]))
                        fail_msg("%s: address %zu is %s, want %s", name, i, e[i].address.text, want[i]);
}

#define CHECK_HOSTS(h, name, ...)                                                \
        do {                                                                     \
                static const char *const _w_[] = {__VA_ARGS__};                  \
                check_hosts((h), (name), _w_, sizeof(_w_) / sizeof(_w_[0]) - 1); \
        } while (false)

static void test_hosts_parse(void **state)
{
        char long_name[300];
        memset(long_name, 'a', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = 0;
        _cleanup_free_ char *text =
                strdup_printf("# The first line is a comment\n"
                              "127.0.0.1\tlocalhost\n"
                              "::1     localhost ip6-localhost ip6-loopback\n"
                              "192.0.2.5 API.Example.Test api  # a comment after the names\n"
                              "2001:db8::0001 api.example.test\n"
                              "192.0.2.6 api.example.test.\n"
                              "192.0.2.5 api.example.test api.example.test\n" /* again: the first is kept */
                              "not-an-address broken.example\n"
                              "fe80::1%%eth0 scoped.example\n"
                              "10.0.0.1\n"
                              "   \n"
                              "\t10.0.0.2 tab\tsep\r\n"
                              "10.0.0.3 x#no-blank-before-the-comment\n"
                              "10.0.0.4 %s long-ok\n"
                              "#10.0.0.5 commented.example\n"
                              "10.0.0.6 last-line-without-newline",
                              long_name);
        DnsHosts h = {};

        assert_non_null(text);
        assert_int_equal(dns_hosts_parse(text, strlen(text), &h), 0);
        CHECK_HOSTS(&h, "api.example.test", "192.0.2.5", "2001:db8::1", "192.0.2.6", NULL);
        CHECK_HOSTS(&h, "API.EXAMPLE.TEST.", "192.0.2.5", "2001:db8::1", "192.0.2.6", NULL);
        CHECK_HOSTS(&h, "api", "192.0.2.5", NULL);
        CHECK_HOSTS(&h, "localhost", "127.0.0.1", "::1", NULL);
        CHECK_HOSTS(&h, "ip6-loopback", "::1", NULL);
        CHECK_HOSTS(&h, "tab", "10.0.0.2", NULL);
        CHECK_HOSTS(&h, "sep", "10.0.0.2", NULL);
        CHECK_HOSTS(&h, "x", "10.0.0.3", NULL);
        CHECK_HOSTS(&h, "long-ok", "10.0.0.4", NULL);
        CHECK_HOSTS(&h, "last-line-without-newline", "10.0.0.6", NULL);
        CHECK_HOSTS(&h, "broken.example", NULL);
        CHECK_HOSTS(&h, "not-an-address", NULL);
        CHECK_HOSTS(&h, "scoped.example", NULL);
        CHECK_HOSTS(&h, "no-blank-before-the-comment", NULL);
        CHECK_HOSTS(&h, "commented.example", NULL);
        CHECK_HOSTS(&h, "10.0.0.1", NULL);
        CHECK_HOSTS(&h, long_name, NULL);
        CHECK_HOSTS(&h, "", NULL);
        CHECK_HOSTS(&h, ".", NULL);
        dns_hosts_done(&h);

        /* A NUL inside a name drops that name only; parsing goes on past it. */
        static const char nul[] = "10.0.0.7 bad\0name good\n10.0.0.8 after\n";
        assert_int_equal(dns_hosts_parse(nul, sizeof nul - 1, &h), 0);
        CHECK_HOSTS(&h, "good", "10.0.0.7", NULL);
        CHECK_HOSTS(&h, "after", "10.0.0.8", NULL);
        CHECK_HOSTS(&h, "bad", NULL);
        /* Parsing again replaces what was there. */
        assert_int_equal(dns_hosts_parse("", 0, &h), 0);
        assert_int_equal(h.n, 0);
        CHECK_HOSTS(&h, "good", NULL);
        dns_hosts_done(&h);
        dns_hosts_done(&h);
}

static void test_localhost(void **state)
{
        static const char *const yes[] = {"localhost", "LOCALHOST", "localhost.", "a.localhost",
                                          "x.y.Localhost."};
        static const char *const no[] = {"localhost.example", "notlocalhost", "localhostx", "", ".",
                                         "localhost..",       "a.localhostx"};

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (!dns_name_is_localhost(yes[i]))
                        fail_msg("\"%s\" is not localhost", yes[i]);
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (dns_name_is_localhost(no[i]))
                        fail_msg("\"%s\" is localhost", no[i]);
}

/* ---- the cache ---- */

static DnsAddress address(const char *text, uint32_t ttl)
{
        DnsAddress a = {.family = strchr(text, ':') ? AF_INET6 : AF_INET, .ttl = ttl};

        assert_int_equal(inet_pton(a.family, text, &a.in6), 1);
        (void) snprintf(a.text, sizeof a.text, "%s", text);
        return a;
}

static void test_cache(void **state)
{
        _cleanup_(dns_cache_freep) DnsCache *c = dns_cache_new();
        const usec_t t0 = 1000 * USEC_PER_SEC;
        const DnsAddress *got = NULL;
        DnsAddress two[] = {address("192.0.2.1", 30), address("2001:db8::1", 10)};

        assert_non_null(c);
        /* The smallest TTL of the answer, looked up in any case and with a trailing dot. */
        assert_int_equal(dns_cache_put(c, "API.example.test", two, 2, t0), 0);
        assert_int_equal(dns_cache_get(c, "api.example.test.", t0 + 10 * USEC_PER_SEC - 1, &got), 2);
        assert_string_equal(got[0].text, "192.0.2.1");
        assert_string_equal(got[1].text, "2001:db8::1");
        assert_int_equal(dns_cache_get(c, "api.example.test", t0 + 10 * USEC_PER_SEC, &got), 0);
        assert_int_equal(dns_cache_size(c), 0); /* expired: gone */

        /* However long the server says, at most DNS_CACHE_TTL_MAX. */
        DnsAddress day = address("192.0.2.2", 86400);
        assert_int_equal(dns_cache_put(c, "day.example.test", &day, 1, t0), 0);
        assert_int_equal(dns_cache_get(c, "day.example.test", t0 + DNS_CACHE_TTL_MAX - 1, &got), 1);
        assert_int_equal(dns_cache_get(c, "day.example.test", t0 + DNS_CACHE_TTL_MAX, &got), 0);

        /* A new answer replaces the old; TTL 0, or nothing, forgets the name. */
        DnsAddress first = address("192.0.2.3", 60), second = address("192.0.2.4", 60),
                   zero = address("192.0.2.5", 0);
        assert_int_equal(dns_cache_put(c, "n.example.test", &first, 1, t0), 0);
        assert_int_equal(dns_cache_put(c, "n.example.test", &second, 1, t0), 0);
        assert_int_equal(dns_cache_size(c), 1);
        assert_int_equal(dns_cache_get(c, "n.example.test", t0, &got), 1);
        assert_string_equal(got[0].text, "192.0.2.4");
        assert_int_equal(dns_cache_put(c, "n.example.test", &zero, 1, t0), 0);
        assert_int_equal(dns_cache_get(c, "n.example.test", t0, &got), 0);
        assert_int_equal(dns_cache_put(c, "n.example.test", &first, 1, t0), 0);
        assert_int_equal(dns_cache_put(c, "n.example.test", NULL, 0, t0), 0);
        assert_int_equal(dns_cache_get(c, "n.example.test", t0, &got), 0);
        assert_int_equal(dns_cache_size(c), 0);

        /* At most DNS_CACHE_ADDRESSES addresses of an answer. */
        DnsAddress many[DNS_CACHE_ADDRESSES + 4];
        for (size_t i = 0; i < ELEMENTSOF(many); i++) {
                char t[32];
                (void) snprintf(t, sizeof t, "10.0.0.%zu", i + 1);
                many[i] = address(t, 60);
        }
        assert_int_equal(dns_cache_put(c, "many.example.test", many, ELEMENTSOF(many), t0), 0);
        assert_int_equal(dns_cache_get(c, "many.example.test", t0, &got), DNS_CACHE_ADDRESSES);
        assert_string_equal(got[DNS_CACHE_ADDRESSES - 1].text, "10.0.0.16");

        /* At most DNS_CACHE_NAMES names: the expired go first, then the one expiring soonest. */
        DnsAddress short_ttl = address("10.1.0.1", 1);
        assert_int_equal(dns_cache_put(c, "short.example.test", &short_ttl, 1, t0), 0);
        for (unsigned i = 0; dns_cache_size(c) < DNS_CACHE_NAMES; i++) {
                char name[64];
                (void) snprintf(name, sizeof name, "n%u.example.test", i);
                DnsAddress a = address("10.2.0.1", 100 + i);
                assert_int_equal(dns_cache_put(c, name, &a, 1, t0), 0);
        }
        DnsAddress late = address("10.3.0.1", 200);
        assert_int_equal(dns_cache_put(c, "late.example.test", &late, 1, t0 + 2 * USEC_PER_SEC), 0);
        assert_int_equal(dns_cache_size(c), DNS_CACHE_NAMES); /* short.example.test had expired */
        assert_int_equal(dns_cache_get(c, "short.example.test", t0 + 2 * USEC_PER_SEC, &got), 0);
        assert_int_equal(dns_cache_put(c, "later.example.test", &late, 1, t0 + 2 * USEC_PER_SEC), 0);
        assert_int_equal(dns_cache_size(c), DNS_CACHE_NAMES);
        /* None had expired: the one expiring soonest went, many.example.test (TTL 60). */
        assert_int_equal(dns_cache_get(c, "many.example.test", t0 + 2 * USEC_PER_SEC, &got), 0);
        assert_int_equal(dns_cache_get(c, "n0.example.test", t0 + 2 * USEC_PER_SEC, &got), 1);
        /* Then n0 (TTL 100); n1 stays. */
        assert_int_equal(dns_cache_put(c, "latest.example.test", &late, 1, t0 + 2 * USEC_PER_SEC), 0);
        assert_int_equal(dns_cache_size(c), DNS_CACHE_NAMES);
        assert_int_equal(dns_cache_get(c, "n0.example.test", t0 + 2 * USEC_PER_SEC, &got), 0);
        assert_int_equal(dns_cache_get(c, "n1.example.test", t0 + 2 * USEC_PER_SEC, &got), 1);
        assert_int_equal(dns_cache_get(c, "later.example.test", t0 + 2 * USEC_PER_SEC, &got), 1);

        assert_int_equal(dns_cache_put(c, "", &late, 1, t0), -EINVAL);
        assert_int_equal(dns_cache_put(c, ".", &late, 1, t0), -EINVAL);
        assert_int_equal(dns_cache_get(c, "", t0, &got), 0);
        assert_null(dns_cache_free(NULL));
}

/* ---- names answered without a server, on a loop ---- */

typedef struct Heard {
        unsigned calls;
        int error;
        char message[128];
        size_t n;
        char addresses[4][INET6_ADDRSTRLEN];
} Heard;

static void on_heard(void *token, const LoopResolveAnswer *a)
{
        Heard *h = token;

        h->calls++;
        h->error = a->error;
        (void) snprintf(h->message, sizeof h->message, "%s", strempty(a->message));
        h->n = a->n_addresses;
        for (size_t i = 0; i < a->n_addresses && i < ELEMENTSOF(h->addresses); i++)
                (void) snprintf(h->addresses[i], sizeof h->addresses[i], "%s", a->addresses[i]);
}

static void write_hosts(const char *path, const char *text)
{
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644), 0);
}

static void request_done(HttpRequest *req, int error, void *userdata)
{
        int *e = userdata;
        *e = error;
}

/* The server given is a port where nothing is asked: every answer here comes without one. */
static void test_hostnames_without_server(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        char dir[] = "/tmp/test-dns-hosts-XXXXXX";
        DnsHostnames *h = NULL;
        DnsHostnamesStats st;
        Heard heard = {};

        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *path = strdup_printf("%s/hosts", dir);
        write_hosts(path, "2001:db8::7 api.hosts.test\n192.0.2.7 api.hosts.test\n");
        DnsHostnamesConfig cfg = {.dns = {.servers = "127.0.0.1:9"}, .hosts = path};
        assert_int_equal(dns_hostnames_attach(l, &cfg, &h), 0);

        /* localhost: both loopback addresses, IPv4 first, before it returns. */
        assert_int_equal(dns_hostnames_resolve(h, "localhost", on_heard, &heard), 0);
        assert_int_equal(heard.calls, 1);
        assert_int_equal(heard.error, 0);
        assert_int_equal(heard.n, 2);
        assert_string_equal(heard.addresses[0], "127.0.0.1");
        assert_string_equal(heard.addresses[1], "::1");

        /* The hosts file: IPv4 first, whatever the file's order. */
        heard = (Heard){};
        assert_int_equal(dns_hostnames_resolve(h, "API.hosts.test.", on_heard, &heard), 0);
        assert_int_equal(heard.calls, 1);
        assert_int_equal(heard.n, 2);
        assert_string_equal(heard.addresses[0], "192.0.2.7");
        assert_string_equal(heard.addresses[1], "2001:db8::7");

        /* Changed: read again (its size differs; its time may not, within the same tick). */
        write_hosts(path, "192.0.2.77 api.hosts.test\n");
        heard = (Heard){};
        assert_int_equal(dns_hostnames_resolve(h, "api.hosts.test", on_heard, &heard), 0);
        assert_int_equal(heard.n, 1);
        assert_string_equal(heard.addresses[0], "192.0.2.77");

        /* No name DNS could be asked for: the error comes through the callback, with words. */
        heard = (Heard){};
        assert_int_equal(dns_hostnames_resolve(h, "bad..name", on_heard, &heard), 0);
        assert_int_equal(heard.calls, 1);
        assert_int_equal(heard.error, -EINVAL);
        assert_string_equal(heard.message, "not a name DNS can look up");

        dns_hostnames_get_stats(h, &st);
        assert_int_equal(st.localhost, 1);
        assert_int_equal(st.hosts, 2);
        assert_int_equal(st.lookups, 0);

        /* A request for that name fails through its callback, naming it, not at the start. */
        int error = 1;
        _cleanup_(http_request_unrefp) HttpRequest *bad = http_request_new("GET", "http://bad..name:1/");
        assert_int_equal(loop_http_start(l, bad, request_done, &error), 0);
        assert_int_equal(error, 1);
        assert_int_equal(loop_http_in_flight(l), 1);
        bool stopped = false;
        (void) loop_run_until(l, &stopped, 50 * USEC_PER_MSEC);
        assert_int_equal(error, -EHOSTUNREACH);
        assert_string_equal(http_request_get_error(bad),
                            "cannot resolve bad..name: not a name DNS can look up");
        assert_int_equal(loop_http_in_flight(l), 0);

        /* One from the hosts file reaches curl: nothing listens on port 1 there. */
        write_hosts(path, "127.0.0.1 api.hosts.test\n");
        error = 1;
        _cleanup_(http_request_unrefp) HttpRequest *req =
                http_request_new("GET", "http://api.hosts.test:1/");
        assert_int_equal(loop_http_start(l, req, request_done, &error), 0);
        while (error == 1)
                assert_true(sd_event_run(loop_get_event(l), 5 * USEC_PER_SEC) >= 0);
        assert_int_equal(error, -ECONNREFUSED);
        assert_int_equal(loop_http_in_flight(l), 0);

        /* A request cancelled before its answer: no callback, nothing left in flight. */
        error = 1;
        assert_int_equal(loop_http_start(l, bad, request_done, &error), 0);
        http_request_cancel(bad);
        (void) loop_run_until(l, &stopped, 50 * USEC_PER_MSEC);
        assert_int_equal(error, 1);
        assert_int_equal(loop_http_in_flight(l), 0);

        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
}

/* A loop nobody gave a resolver refuses names at the start, and takes addresses. */
static void test_loop_without_resolver(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(http_request_unrefp) HttpRequest *named =
                http_request_new("GET", "http://example.test:1/");
        _cleanup_(http_request_unrefp) HttpRequest *ip = http_request_new("GET", "http://[::1]:1/");
        int error = 1;

        assert_int_equal(loop_http_start(l, named, request_done, &error), -EHOSTUNREACH);
        assert_int_equal(loop_http_in_flight(l), 0);
        assert_int_equal(loop_http_start(l, ip, request_done, &error), 0);
        http_request_cancel(ip);
        assert_int_equal(loop_http_in_flight(l), 0);

        /* A connect-to entry names an address, never a name nothing would resolve. */
        assert_int_equal(http_request_set_connect_to(named, "example.test:1:192.0.2.1:1"), 0);
        assert_int_equal(http_request_set_connect_to(named, "example.test:1:[2001:db8::1]:1"), 0);
        assert_int_equal(http_request_set_connect_to(named, "[2001:db8::2]:1:[2001:db8::1]:1"), 0);
        assert_int_equal(http_request_set_connect_to(named, "example.test:1:other.test:1"), -EINVAL);
        assert_int_equal(http_request_set_connect_to(named, "example.test:1::1"), -EINVAL);
        assert_int_equal(http_request_set_connect_to(named, "nonsense"), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_name_valid),
                cmocka_unit_test(test_name_lengths),
                cmocka_unit_test(test_servers),
                cmocka_unit_test(test_status_mapping),
                cmocka_unit_test(test_srv_sort),
                cmocka_unit_test(test_reverse_name),
                cmocka_unit_test(test_max_duration),
                cmocka_unit_test(test_config),
                cmocka_unit_test(test_hosts_parse),
                cmocka_unit_test(test_localhost),
                cmocka_unit_test(test_cache),
                cmocka_unit_test(test_hostnames_without_server),
                cmocka_unit_test(test_loop_without_resolver),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
