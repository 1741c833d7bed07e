/* The host names of requests. curl is never left to resolve a name: its own
 * resolver would run getaddrinfo() on a thread of its own, outside the loop,
 * with the system's rules and a cache of its own. A request for a name asks
 * the loop's resolver (loop_set_resolver(), installed from the dns layer)
 * and goes to curl with the answer as a CURLOPT_RESOLVE entry, which curl
 * puts in its DNS cache ahead of the lookup it would have made. A request
 * cancelled while its name is looked up leaves the lookup behind: the answer
 * still comes, to a token that no longer points at it. */
#include <arpa/inet.h>
#include <assert.h>

#include "base/log.h"
#include "loop-internal.h"

struct HttpResolving {
        HttpRequest *req; /* NULL once the request left the loop */
        unsigned port;
        char name[];
};

static bool is_address(const char *s, size_t n)
{
        char text[INET6_ADDRSTRLEN];
        struct in6_addr a;

        if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
                s++;
                n -= 2;
        }
        if (n == 0 || n >= sizeof text)
                return false;
        memcpy(text, s, n);
        text[n] = 0;
        return inet_pton(AF_INET, text, &a) == 1 || inet_pton(AF_INET6, text, &a) == 1;
}

/* "HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT", each host maybe "[v6]". */
bool http_connect_to_is_address(const char *entry)
{
        const char *p = entry;

        for (int field = 0; field < 2; field++) {
                if (*p == '[') {
                        p = strchr(p, ']');
                        if (!p)
                                return false;
                }
                p = strchr(p, ':');
                if (!p)
                        return false;
                p++;
        }
        /* Field 2 starts at p. */
        const char *end = *p == '[' ? strchr(p, ']') : strchr(p, ':');
        if (!end)
                return false;
        if (*p == '[')
                end++;
        return is_address(p, (size_t) (end - p));
}

static inline void curl_url_cleanupp(CURLU **u)
{
        curl_url_cleanup(*u);
}

static inline void curl_freep(char **p)
{
        curl_free(*p);
}

int http_request_target(HttpRequest *r, char **ret_name, unsigned *ret_port)
{
        _cleanup_(curl_url_cleanupp) CURLU *u = NULL;
        _cleanup_(curl_freep) char *host = NULL, *port = NULL;
        unsigned long p;
        char *end = NULL;

        *ret_name = NULL;
        *ret_port = 0;
        /* A unix socket is no host; a connect-to entry names an address (checked when set). */
        if (r->unix_socket || r->connect_to)
                return 0;
        u = curl_url();
        if (!u)
                return -ENOMEM;
        /* A URL curl cannot parse, it refuses itself (-EINVAL), as before names were ours. */
        if (curl_url_set(u, CURLUPART_URL, r->url, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
                return 0;
        if (is_address(host, strlen(host)))
                return 0;
        errno = 0;
        p = strtoul(port, &end, 10);
        if (errno || end == port || *end || p == 0 || p > 65535)
                return 0;
        *ret_name = strdup(host);
        if (!*ret_name)
                return -ENOMEM;
        *ret_port = (unsigned) p;
        return 0;
}

/* "name:port:192.0.2.1,[2001:db8::1]" */
static int resolve_entry(const char *name, unsigned port, const LoopResolveAnswer *a,
                         struct curl_slist **ret)
{
        char entry[256 + 8 + LOOP_RESOLVE_MAX * (INET6_ADDRSTRLEN + 3)];
        size_t n = (size_t) snprintf(entry, sizeof entry, "%s:%u:", name, port), used = 0;

        if (n >= 256 + 8)
                return -EINVAL; /* longer than a DNS name: curl would not take it */
        for (size_t i = 0; i < a->n_addresses && used < LOOP_RESOLVE_MAX; i++) {
                const char *t = a->addresses[i];
                bool v6 = strchr(t, ':');

                if (!is_address(t, strlen(t)))
                        continue;
                n += (size_t) snprintf(entry + n, sizeof entry - n, "%s%s%s%s", used > 0 ? "," : "",
                                       v6 ? "[" : "", t, v6 ? "]" : "");
                used++;
        }
        if (used == 0)
                return -EHOSTUNREACH;
        struct curl_slist *l = curl_slist_append(NULL, entry);
        if (!l)
                return -ENOMEM;
        *ret = l;
        return 0;
}

static void on_resolved(void *token, const LoopResolveAnswer *a)
{
        _cleanup_free_ HttpResolving *t = token;
        HttpRequest *r = t->req;
        int e;

        if (!r)
                return; /* cancelled meanwhile */
        assert(r->resolving == t);
        r->resolving = NULL;
        if (a->error < 0) {
                (void) snprintf(r->errbuf, sizeof r->errbuf, "cannot resolve %s: %s", t->name,
                                a->message ? a->message : strerror(-a->error));
                e = a->error == -ENOMEM || a->error == -ECANCELED ? a->error : -EHOSTUNREACH;
        } else {
                e = resolve_entry(t->name, t->port, a, &r->resolve);
                if (e == -EHOSTUNREACH)
                        (void) snprintf(r->errbuf, sizeof r->errbuf, "cannot resolve %s: no address",
                                        t->name);
                if (e >= 0)
                        e = http_transfer_start(r);
        }
        if (e >= 0)
                return;
        log_debug("%s %s: %s", r->method, r->url, *r->errbuf ? r->errbuf : strerror(-e));
        if (http_request_fail(r, e) < 0)
                r->start_error = e; /* only inside loop_http_start(), which returns it */
}

int http_resolve_start(HttpRequest *r, const char *name, unsigned port)
{
        HttpResolving *t;
        size_t n = strlen(name);
        int e;

        assert(r->loop && r->loop->resolve && !r->resolving);
        t = malloc(sizeof *t + n + 1);
        if (!t)
                return -ENOMEM;
        *t = (HttpResolving){.req = r, .port = port};
        memcpy(t->name, name, n + 1);
        r->resolving = t;
        r->start_error = 0;
        e = r->loop->resolve(r->loop->resolve_userdata, name, on_resolved, t);
        if (e < 0) {
                /* No callback comes: the token is still ours. */
                r->resolving = NULL;
                free(t);
                return e;
        }
        return r->start_error;
}

void http_resolve_abandon(HttpRequest *r)
{
        if (!r->resolving)
                return;
        r->resolving->req = NULL; /* the resolver's callback frees it */
        r->resolving = NULL;
}
