/* One c-ares channel on the loop. c-ares tells us through its socket-state
 * callback which sockets to watch; each becomes an sd-event I/O source that
 * calls ares_process_fd(). After every call into c-ares one sd-event timer is
 * re-armed from ares_timeout(), so retries and timeouts happen without anyone
 * polling. c-ares may call back into us (answers, socket changes) from inside
 * any of those calls, and our callers may free the resolver from inside their
 * callback: `busy` counts the calls into c-ares on the stack, and the channel
 * is destroyed only when the outermost one has returned. */
#include <ares.h>
#include <arpa/inet.h>
#include <assert.h>
#include <netdb.h>
#include <sys/epoll.h>

#include "base/log.h"
#include "dns-internal.h"

typedef enum DnsQueryType {
        DNS_QUERY_A,
        DNS_QUERY_AAAA,
        DNS_QUERY_SRV,
        DNS_QUERY_PTR,
} DnsQueryType;

typedef struct DnsSocket DnsSocket;
struct DnsSocket {
        DnsSocket *next;
        int fd;
        sd_event_source *source;
};

typedef struct DnsQuery DnsQuery;
struct DnsQuery {
        DnsResolver *resolver; /* NULL once completed by dns_resolver_free() */
        DnsQuery *prev, *next;
        DnsQueryType type;
        char *name;
        int family; /* PTR: the address asked about */
        DnsInAddr addr;
        DnsCallback callback;
        void *userdata;
        bool search; /* ares_search(): through the search list */
        /* c-ares completes a query from inside ares_query() only with an
         * error; that becomes the lookup's return value, not a callback. */
        bool starting;
        bool done_early;
        int early_status;
};

struct DnsResolver {
        /* The loop's sd-event, not the Loop: a loop owns the resolver of its
         * requests (hostnames.c), which must not keep the loop alive. */
        sd_event *event;
        ares_channel channel;
        sd_event_source *timer;
        DnsSocket *sockets;
        DnsQuery *queries;
        unsigned n_queries;
        unsigned n_servers;
        usec_t timeout;
        unsigned tries;
        unsigned busy; /* calls into c-ares on the stack */
        bool dead;     /* freed by the user; destroyed once busy drops to 0 */
        bool library_initialized;
};

static const char *const query_type_name[] = {
        [DNS_QUERY_A] = "A",
        [DNS_QUERY_AAAA] = "AAAA",
        [DNS_QUERY_SRV] = "SRV",
        [DNS_QUERY_PTR] = "PTR",
};

/* RR types and class IN (RFC 1035, 2782, 3596); <arpa/nameser.h> would
 * redefine MIN/MAX through <sys/param.h>. */
enum {
        DNS_CLASS_IN = 1,
};

static const int query_type_rr[] = {
        [DNS_QUERY_A] = 1,
        [DNS_QUERY_AAAA] = 28,
        [DNS_QUERY_SRV] = 33,
        [DNS_QUERY_PTR] = 12,
};

static DnsQuery *query_free(DnsQuery *q)
{
        if (!q)
                return NULL;
        free(q->name);
        return mfree(q);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(DnsQuery *, query_free);

static inline void srv_reply_freep(struct ares_srv_reply **p)
{
        if (*p)
                ares_free_data(*p);
}

static inline void hostent_freep(struct hostent **p)
{
        if (*p)
                ares_free_hostent(*p);
}

static void query_link(DnsResolver *r, DnsQuery *q)
{
        q->resolver = r;
        q->prev = NULL;
        q->next = r->queries;
        if (r->queries)
                r->queries->prev = q;
        r->queries = q;
        r->n_queries++;
}

static void query_unlink(DnsResolver *r, DnsQuery *q)
{
        assert(q->resolver == r);
        if (q->prev)
                q->prev->next = q->next;
        else
                r->queries = q->next;
        if (q->next)
                q->next->prev = q->prev;
        q->prev = q->next = NULL;
        q->resolver = NULL;
        r->n_queries--;
}

/* ---- sockets and the timer ---- */

static void resolver_destroy(DnsResolver *r);
static int on_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void resolver_update_timer(DnsResolver *r)
{
        struct timeval tv, *tvp;
        int k;

        tvp = ares_timeout(r->channel, NULL, &tv);
        if (!tvp) {
                if (r->timer)
                        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
                return;
        }
        /* ares_timeout() truncates to milliseconds; a timer that fired before
         * c-ares thinks the try expired would spin until it does. */
        usec_t when = now_usec(CLOCK_MONOTONIC) + (usec_t) tvp->tv_sec * USEC_PER_SEC +
                      (usec_t) tvp->tv_usec + USEC_PER_MSEC;
        if (r->timer) {
                k = sd_event_source_set_time(r->timer, when);
                if (k >= 0)
                        k = sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
        } else {
                /* Accuracy 1 us: sd-event's default of 250 ms would stretch every timeout. */
                k = sd_event_add_time(r->event, &r->timer, CLOCK_MONOTONIC, when, 1, on_timer, r);
                if (k >= 0)
                        (void) sd_event_source_set_description(r->timer, "dns-timer");
        }
        if (k < 0) /* nothing better to do: the next I/O re-arms it */
                (void) log_debug_errno(k, "dns: cannot arm the c-ares timer");
}

static void resolver_enter(DnsResolver *r)
{
        r->busy++;
}

/* The last thing a caller does with `r`: it may be gone afterwards. */
static void resolver_leave(DnsResolver *r)
{
        assert(r->busy > 0);
        if (--r->busy > 0)
                return;
        if (r->dead)
                resolver_destroy(r);
        else
                resolver_update_timer(r);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        DnsResolver *r = userdata;

        resolver_enter(r);
        ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
        resolver_leave(r);
        return 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        DnsResolver *r = userdata;
        /* Errors and hang-ups are reported through a read, which is where
         * c-ares looks for them. */
        ares_socket_t rfd = revents & (EPOLLIN | EPOLLERR | EPOLLHUP) ? fd : ARES_SOCKET_BAD;
        ares_socket_t wfd = revents & EPOLLOUT ? fd : ARES_SOCKET_BAD;

        resolver_enter(r);
        ares_process_fd(r->channel, rfd, wfd);
        resolver_leave(r);
        return 0;
}

static DnsSocket *socket_free(DnsSocket *s)
{
        if (!s)
                return NULL;
        /* Safe from inside this source's own callback: sd-event detaches it
         * at once and frees it after dispatch. */
        (void) sd_event_source_disable_unref(s->source);
        return mfree(s);
}

/* c-ares' socket-state callback: (0, 0) comes before it closes the socket. */
static void on_sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
        DnsResolver *r = data;
        uint32_t events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
        DnsSocket **p = &r->sockets, *s;
        int k;

        while (*p && (*p)->fd != fd)
                p = &(*p)->next;
        s = *p;
        if (events == 0) {
                if (s) {
                        *p = s->next;
                        socket_free(s);
                }
                return;
        }
        if (s) {
                k = sd_event_source_set_io_events(s->source, events);
                if (k < 0)
                        (void) log_debug_errno(k, "dns: cannot watch socket %d", fd);
                return;
        }
        s = calloc(1, sizeof *s);
        if (!s) {
                /* Nothing to tell c-ares; the query times out on the timer. */
                (void) log_debug_errno(-ENOMEM, "dns: cannot watch socket %d", fd);
                return;
        }
        s->fd = fd;
        k = sd_event_add_io(r->event, &s->source, fd, events, on_io, r);
        if (k < 0) {
                (void) log_debug_errno(k, "dns: cannot watch socket %d", fd);
                free(s);
                return;
        }
        (void) sd_event_source_set_description(s->source, "dns-io");
        s->next = r->sockets;
        r->sockets = s;
}

/* ---- answers ---- */

static int parse_addresses(DnsQueryType type, const unsigned char *abuf, int alen, DnsAddress **ret,
                           size_t *ret_n)
{
        _cleanup_free_ DnsAddress *out = NULL;
        int n = DNS_MAX_RECORDS, status;

        out = calloc(DNS_MAX_RECORDS, sizeof *out);
        if (!out)
                return ARES_ENOMEM;
        if (type == DNS_QUERY_A) {
                _cleanup_free_ struct ares_addrttl *ttls = calloc(DNS_MAX_RECORDS, sizeof *ttls);
                if (!ttls)
                        return ARES_ENOMEM;
                status = ares_parse_a_reply(abuf, alen, NULL, ttls, &n);
                if (status != ARES_SUCCESS)
                        return status;
                for (int i = 0; i < n; i++) {
                        out[i].family = AF_INET;
                        out[i].in = ttls[i].ipaddr;
                        out[i].ttl = (uint32_t) MAX(ttls[i].ttl, 0);
                        (void) inet_ntop(AF_INET, &out[i].in, out[i].text, sizeof out[i].text);
                }
        } else {
                _cleanup_free_ struct ares_addr6ttl *ttls = calloc(DNS_MAX_RECORDS, sizeof *ttls);
                if (!ttls)
                        return ARES_ENOMEM;
                status = ares_parse_aaaa_reply(abuf, alen, NULL, ttls, &n);
                if (status != ARES_SUCCESS)
                        return status;
                for (int i = 0; i < n; i++) {
                        out[i].family = AF_INET6;
                        memcpy(&out[i].in6, &ttls[i].ip6addr, sizeof out[i].in6);
                        out[i].ttl = (uint32_t) MAX(ttls[i].ttl, 0);
                        (void) inet_ntop(AF_INET6, &out[i].in6, out[i].text, sizeof out[i].text);
                }
        }
        if (n <= 0)
                return ARES_ENODATA;
        *ret = TAKE_PTR(out);
        *ret_n = (size_t) n;
        return ARES_SUCCESS;
}

static int parse_srv(const struct ares_srv_reply *reply, DnsSrv **ret, size_t *ret_n)
{
        _cleanup_free_ DnsSrv *out = NULL;
        size_t n = 0;

        for (const struct ares_srv_reply *i = reply; i && n < DNS_MAX_RECORDS; i = i->next)
                n++;
        if (n == 0)
                return ARES_ENODATA;
        out = calloc(n, sizeof *out);
        if (!out)
                return ARES_ENOMEM;
        n = 0;
        for (const struct ares_srv_reply *i = reply; i && n < DNS_MAX_RECORDS; i = i->next)
                out[n++] = (DnsSrv){
                        .priority = i->priority,
                        .weight = i->weight,
                        .port = i->port,
                        .target = i->host,
                };
        dns_srv_sort(out, n);
        *ret = TAKE_PTR(out);
        *ret_n = n;
        return ARES_SUCCESS;
}

/* ares_parse_ptr_reply() puts every PTR target in h_aliases (and the last
 * one in h_name too); take the aliases, or h_name if there are none. */
static int parse_ptr(const struct hostent *host, const char *const **ret, size_t *ret_n)
{
        size_t n = 0;

        if (host->h_aliases)
                while (host->h_aliases[n] && n < DNS_MAX_RECORDS)
                        n++;
        if (n > 0) {
                *ret = (const char *const *) host->h_aliases;
                *ret_n = n;
                return ARES_SUCCESS;
        }
        if (!host->h_name)
                return ARES_ENODATA;
        *ret = (const char *const *) &host->h_name;
        *ret_n = 1;
        return ARES_SUCCESS;
}

static void query_deliver(DnsResolver *r, DnsQuery *q, int status, int timeouts, const unsigned char *abuf,
                          int alen)
{
        _cleanup_free_ DnsAddress *addresses = NULL;
        _cleanup_free_ DnsSrv *srv = NULL;
        _cleanup_(srv_reply_freep) struct ares_srv_reply *srv_reply = NULL;
        _cleanup_(hostent_freep) struct hostent *host = NULL;
        DnsResult res = {
                .name = q->name,
                .timeouts = (unsigned) MAX(timeouts, 0),
        };

        if (status == ARES_SUCCESS)
                switch (q->type) {
                case DNS_QUERY_A:
                case DNS_QUERY_AAAA:
                        status = parse_addresses(q->type, abuf, alen, &addresses, &res.n_addresses);
                        res.addresses = addresses;
                        break;
                case DNS_QUERY_SRV:
                        status = ares_parse_srv_reply(abuf, alen, &srv_reply);
                        if (status == ARES_SUCCESS)
                                status = parse_srv(srv_reply, &srv, &res.n_srv);
                        res.srv = srv;
                        break;
                case DNS_QUERY_PTR:
                        status = ares_parse_ptr_reply(abuf, alen, &q->addr,
                                                      q->family == AF_INET ? sizeof(struct in_addr)
                                                                           : sizeof(struct in6_addr),
                                                      q->family, &host);
                        if (status == ARES_SUCCESS)
                                status = parse_ptr(host, &res.names, &res.n_names);
                        break;
                }
        if (status != ARES_SUCCESS) /* no partial answers */
                res = (DnsResult){.name = res.name, .timeouts = res.timeouts};
        res.error = dns_status_to_errno(status);
        res.message = ares_strerror(status);
        log_debug("dns: %s %s: %s (%zu answers, %u timeouts)", query_type_name[q->type], q->name,
                  res.message, res.n_addresses + res.n_srv + res.n_names, res.timeouts);
        q->callback(r, &res, q->userdata);
}

/* Every query's completion, exactly once per ares_query(). */
static void on_answer(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
        DnsQuery *q = arg;

        if (q->starting) {
                q->done_early = true;
                q->early_status = status;
                return;
        }

        _cleanup_(query_freep) _unused_ DnsQuery *owned = q;
        DnsResolver *r = q->resolver;
        if (!r)
                return; /* the caller already heard -ECANCELED */
        query_unlink(r, q);
        query_deliver(r, q, status, timeouts, abuf, alen);
}

static int resolver_query(DnsResolver *r, DnsQueryType type, const char *name, int family,
                          const DnsInAddr *addr, bool search, DnsCallback cb, void *userdata)
{
        _cleanup_(query_freep) DnsQuery *q = NULL;
        int status;

        if (r->dead)
                return -ECANCELED;
        q = calloc(1, sizeof *q);
        if (!q)
                return -ENOMEM;
        q->name = strdup(name);
        if (!q->name)
                return -ENOMEM;
        q->type = type;
        q->family = family;
        if (addr)
                q->addr = *addr;
        q->callback = cb;
        q->userdata = userdata;
        q->search = search;

        query_link(r, q);
        q->starting = true;
        resolver_enter(r);
        if (q->search)
                ares_search(r->channel, q->name, DNS_CLASS_IN, query_type_rr[type], on_answer, q);
        else
                ares_query(r->channel, q->name, DNS_CLASS_IN, query_type_rr[type], on_answer, q);
        q->starting = false;
        if (q->done_early) {
                /* Only errors complete this early; a success here would be news. */
                status = q->early_status == ARES_SUCCESS ? ARES_EBADRESP : q->early_status;
                query_unlink(r, q);
                resolver_leave(r); /* not dead: nothing called out to the user */
                return log_debug_errno(dns_status_to_errno(status), "dns: %s %s: %s", query_type_name[type],
                                       name, ares_strerror(status));
        }
        TAKE_PTR(q); /* c-ares calls on_answer() exactly once */
        resolver_leave(r);
        return 0;
}

int dns_lookup_a(DnsResolver *r, const char *name, DnsCallback cb, void *userdata)
{
        assert_return(r && name && cb, -EINVAL);
        assert_return(dns_lookup_name_is_valid(name), -EINVAL);
        return resolver_query(r, DNS_QUERY_A, name, AF_UNSPEC, NULL, false, cb, userdata);
}

int dns_lookup_aaaa(DnsResolver *r, const char *name, DnsCallback cb, void *userdata)
{
        assert_return(r && name && cb, -EINVAL);
        assert_return(dns_lookup_name_is_valid(name), -EINVAL);
        return resolver_query(r, DNS_QUERY_AAAA, name, AF_UNSPEC, NULL, false, cb, userdata);
}

int dns_search_a(DnsResolver *r, const char *name, DnsCallback cb, void *userdata)
{
        assert_return(r && name && cb, -EINVAL);
        assert_return(dns_lookup_name_is_valid(name), -EINVAL);
        return resolver_query(r, DNS_QUERY_A, name, AF_UNSPEC, NULL, true, cb, userdata);
}

int dns_search_aaaa(DnsResolver *r, const char *name, DnsCallback cb, void *userdata)
{
        assert_return(r && name && cb, -EINVAL);
        assert_return(dns_lookup_name_is_valid(name), -EINVAL);
        return resolver_query(r, DNS_QUERY_AAAA, name, AF_UNSPEC, NULL, true, cb, userdata);
}

int dns_lookup_srv(DnsResolver *r, const char *name, DnsCallback cb, void *userdata)
{
        assert_return(r && name && cb, -EINVAL);
        assert_return(dns_lookup_name_is_valid(name), -EINVAL);
        return resolver_query(r, DNS_QUERY_SRV, name, AF_UNSPEC, NULL, false, cb, userdata);
}

int dns_lookup_ptr(DnsResolver *r, const char *address, DnsCallback cb, void *userdata)
{
        _cleanup_free_ char *name = NULL;
        DnsInAddr addr;
        int family, k;

        assert_return(r && address && cb, -EINVAL);
        k = dns_reverse_name(address, &name, &family, &addr);
        if (k < 0)
                return k;
        return resolver_query(r, DNS_QUERY_PTR, name, family, &addr, false, cb, userdata);
}

/* ---- the resolver ---- */

int dns_resolver_new(Loop *loop, const DnsConfig *cfg, DnsResolver **ret)
{
        _cleanup_(dns_resolver_freep) DnsResolver *r = NULL;
        struct ares_addr_port_node *servers = NULL;
        const char *csv = cfg ? cfg->servers : NULL;
        usec_t timeout = cfg && cfg->timeout > 0 ? cfg->timeout : DNS_DEFAULT_TIMEOUT;
        unsigned tries = cfg && cfg->tries > 0 ? cfg->tries : DNS_DEFAULT_TRIES;
        int status;

        assert_return(loop && ret, -EINVAL);
        assert_return(timeout >= USEC_PER_MSEC && timeout <= 60 * USEC_PER_SEC, -EINVAL);
        assert_return(tries <= 8, -EINVAL);
        assert_return(!csv || dns_servers_are_valid(csv), -EINVAL);

        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->event = sd_event_ref(loop_get_event(loop));
        r->timeout = timeout / USEC_PER_MSEC * USEC_PER_MSEC;
        r->tries = tries;

        status = ares_library_init(ARES_LIB_INIT_ALL);
        if (status != ARES_SUCCESS)
                return log_debug_errno(dns_status_to_errno(status), "dns: ares_library_init: %s",
                                       ares_strerror(status));
        r->library_initialized = true;

        struct ares_options o = {
                .timeout = (int) (timeout / USEC_PER_MSEC),
                .tries = (int) tries,
                .sock_state_cb = on_sock_state,
                .sock_state_cb_data = r,
        };
        int mask = ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB;
        if (csv)
                mask |= ARES_OPT_NOROTATE; /* the caller's order is the order of preference */
        /* The caller's search list instead of resolv.conf's ("" for none). */
        _cleanup_free_ char *search = cfg && cfg->search ? strdup(cfg->search) : NULL;
        char *domains[DNS_MAX_SEARCH];
        if (cfg && cfg->search) {
                if (!search)
                        return -ENOMEM;
                int n = 0;
                for (char *save = NULL, *d = strtok_r(search, ",", &save); d;
                     d = strtok_r(NULL, ",", &save)) {
                        if (n == (int) ELEMENTSOF(domains) || !dns_lookup_name_is_valid(d))
                                return -EINVAL;
                        domains[n++] = d;
                }
                o.domains = domains;
                o.ndomains = n;
                mask |= ARES_OPT_DOMAINS;
        }
        status = ares_init_options(&r->channel, &o, mask);
        if (status != ARES_SUCCESS) {
                r->channel = NULL;
                return log_debug_errno(dns_status_to_errno(status), "dns: ares_init_options: %s",
                                       ares_strerror(status));
        }
        if (csv) {
                status = ares_set_servers_ports_csv(r->channel, csv);
                if (status != ARES_SUCCESS)
                        return log_debug_errno(status == ARES_ENOMEM ? -ENOMEM : -EINVAL,
                                               "dns: bad server list \"%s\": %s", csv,
                                               ares_strerror(status));
        }
        status = ares_get_servers_ports(r->channel, &servers);
        if (status != ARES_SUCCESS)
                return dns_status_to_errno(status);
        for (struct ares_addr_port_node *i = servers; i; i = i->next)
                r->n_servers++;
        ares_free_data(servers);
        if (r->n_servers == 0)
                return log_debug_errno(-EINVAL, "dns: no servers");

        *ret = TAKE_PTR(r);
        return 0;
}

static void resolver_destroy(DnsResolver *r)
{
        assert(r->busy == 0);
        assert(!r->queries);
        /* Pending queries were completed already; c-ares hands them back
         * with ARES_EDESTRUCTION and on_answer() only frees them. Their
         * sockets leave through on_sock_state(). */
        if (r->channel)
                ares_destroy(r->channel);
        while (r->sockets) {
                DnsSocket *s = r->sockets;
                r->sockets = s->next;
                socket_free(s);
        }
        (void) sd_event_source_disable_unref(r->timer);
        if (r->library_initialized)
                ares_library_cleanup();
        sd_event_unref(r->event);
        free(r);
}

DnsResolver *dns_resolver_free(DnsResolver *r)
{
        if (!r || r->dead)
                return NULL;
        r->dead = true;
        /* Callbacks may look at `r` (dns_lookup_*() fail with -ECANCELED,
         * dns_resolver_free() is a no-op), so complete them before it goes. */
        while (r->queries) {
                DnsQuery *q = r->queries;
                DnsResult res = {
                        .error = -ECANCELED,
                        .message = ares_strerror(ARES_ECANCELLED),
                        .name = q->name,
                };

                query_unlink(r, q); /* c-ares still owns q and frees it through on_answer() */
                q->callback(r, &res, q->userdata);
        }
        if (r->busy == 0)
                resolver_destroy(r);
        return NULL;
}

usec_t dns_resolver_get_max_duration(DnsResolver *r)
{
        assert_return(r, 0);
        return dns_max_duration(r->timeout, r->tries, r->n_servers);
}

unsigned dns_resolver_get_pending(DnsResolver *r)
{
        assert_return(r, 0);
        return r->n_queries;
}
