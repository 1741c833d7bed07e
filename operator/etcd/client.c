/* etcd gateway client: request plumbing, failover and typed calls. */
#include <inttypes.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/log.h"
#include "client.h"

#define MAX_ENDPOINTS 16

typedef struct EtcdCall EtcdCall;

struct EtcdClient {
        Loop *loop;
        HttpTls *tls;
        char *endpoints[MAX_ENDPOINTS];
        size_t n_endpoints;
        char *leader;
        EtcdAddressAlias aliases[MAX_ENDPOINTS];
        /* The address itself answered last, with a certificate for it: ask it plainly first. */
        bool direct_first[MAX_ENDPOINTS];
        size_t n_aliases;
        usec_t timeout;
        EtcdCall *calls;
        bool closing;
};

struct EtcdCall {
        EtcdClient *client;
        EtcdCall *prev, *next;
        char *path;
        char *body;
        char *fixed_endpoint;
        char *order[MAX_ENDPOINTS + 1]; /* endpoints to try, borrowed copies owned here */
        size_t n_order, tried;
        unsigned flags;
        usec_t timeout;
        bool get; /* plain GET (/health) instead of POST */
        /* The endpoint being tried has an alias (a copy: the aliases may change meanwhile);
         * the attempt goes through it or not, and is the first or the second way tried. */
        bool aliased, via_alias, second_way;
        /* The endpoint's HTTP listener refused the connection: the attempt goes to its client
         * port itself, as a member of the older layout (HTTP on 2379, no 2381) serves it. */
        bool on_client_port;
        EtcdAddressAlias alias;
        EtcdCallback cb;
        void *userdata;
        HttpRequest *req;
};

EtcdClient *etcd_client_new(Loop *loop, const HttpTls *tls)
{
        EtcdClient *c = calloc(1, sizeof *c);
        if (!c)
                return NULL;
        c->loop = loop_ref(loop);
        c->tls = http_tls_dup(tls);
        c->timeout = 10 * USEC_PER_SEC;
        if (!c->tls)
                return etcd_client_free(c);
        return c;
}

static void call_free(EtcdCall *call)
{
        EtcdClient *c = call->client;
        if (call->prev)
                call->prev->next = call->next;
        else if (c->calls == call)
                c->calls = call->next;
        if (call->next)
                call->next->prev = call->prev;
        if (call->req) {
                http_request_cancel(call->req);
                call->req = http_request_unref(call->req);
        }
        for (size_t i = 0; i < call->n_order; i++)
                free(call->order[i]);
        free(call->path);
        free(call->body);
        free(call->fixed_endpoint);
        free(call);
}

static void call_finish(EtcdCall *call, const EtcdResponse *resp)
{
        EtcdCallback cb = call->cb;
        void *userdata = call->userdata;
        EtcdClient *c = call->client;
        /* resp->endpoint points into the call: keep a copy past call_free(). */
        _cleanup_free_ char *endpoint = resp->endpoint ? strdup(resp->endpoint) : NULL;
        EtcdResponse r = *resp;
        r.endpoint = endpoint;
        call_free(call);
        if (cb)
                cb(c, &r, userdata);
}

EtcdClient *etcd_client_free(EtcdClient *c)
{
        if (!c)
                return NULL;
        c->closing = true;
        while (c->calls) {
                EtcdResponse resp = {.error = -ECANCELED};
                call_finish(c->calls, &resp);
        }
        for (size_t i = 0; i < c->n_endpoints; i++)
                free(c->endpoints[i]);
        free(c->leader);
        http_tls_free(c->tls);
        loop_unref(c->loop);
        return mfree(c);
}

int etcd_client_set_tls(EtcdClient *c, const HttpTls *tls)
{
        assert_return(c && tls, -EINVAL);
        HttpTls *t = http_tls_dup(tls);
        if (!t)
                return -ENOMEM;
        http_tls_free(c->tls);
        c->tls = t;
        return 0;
}

Loop *etcd_client_get_loop(EtcdClient *c)
{
        return c->loop;
}

const HttpTls *etcd_client_get_tls(EtcdClient *c)
{
        return c->tls;
}

int etcd_client_set_endpoints(EtcdClient *c, char *const *endpoints, size_t n)
{
        char *copy[MAX_ENDPOINTS] = {};

        assert_return(c && (endpoints || n == 0), -EINVAL);
        if (n > MAX_ENDPOINTS)
                return -E2BIG;
        for (size_t i = 0; i < n; i++) {
                if (!etcd_url_is_valid(endpoints[i])) {
                        for (size_t k = 0; k < i; k++)
                                free(copy[k]);
                        return ETCD_ERR_BAD_URL;
                }
                copy[i] = strdup(endpoints[i]);
                if (!copy[i]) {
                        for (size_t k = 0; k < i; k++)
                                free(copy[k]);
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; i < c->n_endpoints; i++)
                free(c->endpoints[i]);
        memcpy(c->endpoints, copy, sizeof copy);
        c->n_endpoints = n;
        return 0;
}

size_t etcd_client_get_endpoints(EtcdClient *c, char *const **ret)
{
        *ret = c->endpoints;
        return c->n_endpoints;
}

static bool same_ip(const char *a, const char *b)
{
        unsigned char x[16], y[16];
        int fa = strchr(a, ':') ? AF_INET6 : AF_INET, fb = strchr(b, ':') ? AF_INET6 : AF_INET;
        return fa == fb && inet_pton(fa, a, x) == 1 && inet_pton(fb, b, y) == 1 &&
               memcmp(x, y, fa == AF_INET6 ? 16 : 4) == 0;
}

static bool is_ip(const char *s)
{
        unsigned char buf[16];
        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

bool etcd_address_alias_is_valid(const EtcdAddressAlias *a)
{
        return a && is_ip(a->serves_on) && is_ip(a->named);
}

static bool alias_equal(const EtcdAddressAlias *a, const EtcdAddressAlias *b)
{
        return streq(a->serves_on, b->serves_on) && streq(a->named, b->named);
}

int etcd_client_set_aliases(EtcdClient *c, const EtcdAddressAlias *a, size_t n)
{
        bool direct_first[MAX_ENDPOINTS] = {};

        assert_return(c && (a || n == 0), -EINVAL);
        if (n > ELEMENTSOF(c->aliases))
                return -E2BIG;
        for (size_t i = 0; i < n; i++) {
                if (!etcd_address_alias_is_valid(&a[i]))
                        return -EINVAL;
                /* What was learnt of an alias that stays is kept. */
                for (size_t j = 0; j < c->n_aliases; j++)
                        if (alias_equal(&a[i], &c->aliases[j]))
                                direct_first[i] = c->direct_first[j];
        }
        if (n)
                memcpy(c->aliases, a, n * sizeof *a);
        memcpy(c->direct_first, direct_first, sizeof direct_first);
        c->n_aliases = n;
        return 0;
}

/* The parts of "SCHEME://HOST:PORT[/path]": the scheme's length, the host (no brackets) and
 * where ":PORT" starts. False for anything else. */
static bool split_url(const char *url, size_t *ret_scheme, char host[static INET6_ADDRSTRLEN + 2],
                      const char **ret_port)
{
        size_t scheme = startswith(url, "https://") ? 8 : startswith(url, "http://") ? 7 : 0;
        const char *h = url + scheme, *end, *port;
        bool v6 = *h == '[';

        end = v6 ? strchr(h, ']') : strchr(h, ':');
        port = end ? (v6 ? end + 1 : end) : NULL;
        size_t len = end ? (size_t) (end - h - v6) : 0;
        if (!scheme || !port || *port != ':' || len == 0 || len >= INET6_ADDRSTRLEN + 2)
                return false;
        memcpy(host, h + v6, len);
        host[len] = 0;
        *ret_scheme = scheme;
        *ret_port = port;
        return true;
}

char *etcd_http_url(const char *url)
{
        char host[INET6_ADDRSTRLEN + 2];
        const char *port;
        size_t scheme;

        assert_return(url, NULL);
        char client_port[8];
        (void) snprintf(client_port, sizeof client_port, ":%d", ETCD_CLIENT_PORT);
        size_t n = strlen(client_port);
        if (!split_url(url, &scheme, host, &port) || !startswith(port, client_port) ||
            (port[n] != '\0' && port[n] != '/'))
                return strdup(url);
        return strdup_printf("%.*s:%d%s", (int) (port - url), url, ETCD_HTTP_PORT, port + n);
}

char *etcd_peer_url(const char *host, unsigned port)
{
        bool bracket = host && strchr(host, ':') && host[0] != '[';
        if (!host)
                return NULL;
        return strdup_printf("https://%s%s%s:%u", bracket ? "[" : "", host, bracket ? "]" : "", port);
}

static bool http_url_differs(const char *url)
{
        _cleanup_free_ char *http = etcd_http_url(url);
        return http && !streq(http, url);
}

/* The index of the alias for the host of `url`, or -1. */
static ssize_t alias_of(EtcdClient *c, const char *url)
{
        char host[INET6_ADDRSTRLEN + 2];
        const char *port;
        size_t scheme;

        if (c->n_aliases == 0 || !split_url(url, &scheme, host, &port))
                return -1; /* no URL is parsed for a client without aliases: every call asks */
        for (size_t i = 0; i < c->n_aliases; i++)
                if (same_ip(host, c->aliases[i].serves_on))
                        return (ssize_t) i;
        return -1;
}

/* The URL and connect-to entry of a request for `url` through alias `a` (NULL: as it is). */
static int route_via(const char *url, const EtcdAddressAlias *a, char **ret_url, char **ret_connect_to)
{
        char host[INET6_ADDRSTRLEN + 2];
        const char *port;
        size_t scheme;

        *ret_connect_to = NULL;
        if (!a || !split_url(url, &scheme, host, &port)) {
                *ret_url = strdup(url);
                return *ret_url ? 0 : -ENOMEM;
        }
        /* The port runs to the path, if any. */
        size_t port_len = strcspn(port + 1, "/");
        bool v6 = strchr(host, ':'), named_v6 = strchr(a->named, ':');
        _cleanup_free_ char *u = strdup_printf("%.*s%s%s%s%s", (int) scheme, url, named_v6 ? "[" : "",
                                               a->named, named_v6 ? "]" : "", port);
        _cleanup_free_ char *ct = strdup_printf("%s%s%s:%.*s:%s%s%s:%.*s", named_v6 ? "[" : "", a->named,
                                                named_v6 ? "]" : "", (int) port_len, port + 1, v6 ? "[" : "",
                                                host, v6 ? "]" : "", (int) port_len, port + 1);
        if (!u || !ct)
                return -ENOMEM;
        *ret_url = TAKE_PTR(u);
        *ret_connect_to = TAKE_PTR(ct);
        return 0;
}

int etcd_client_route(EtcdClient *c, const char *url, char **ret_url, char **ret_connect_to)
{
        assert_return(c && url && ret_url && ret_connect_to, -EINVAL);
        ssize_t i = alias_of(c, url);
        return route_via(url, i >= 0 && !c->direct_first[i] ? &c->aliases[i] : NULL, ret_url,
                         ret_connect_to);
}

/* A call through an endpoint with an alias got past TLS one way: ask that way first next time. */
static void note_way(EtcdClient *c, const EtcdCall *call)
{
        for (size_t i = 0; i < c->n_aliases; i++)
                if (alias_equal(&c->aliases[i], &call->alias) && c->direct_first[i] == call->via_alias) {
                        c->direct_first[i] = !call->via_alias;
                        log_info("etcd: the member at %s answers with a certificate for %s now",
                                 c->aliases[i].serves_on,
                                 call->via_alias ? c->aliases[i].named : c->aliases[i].serves_on);
                }
}

int etcd_client_set_leader(EtcdClient *c, const char *endpoint)
{
        char *l = endpoint ? strdup(endpoint) : NULL;
        if (endpoint && !l)
                return -ENOMEM;
        free(c->leader);
        c->leader = l;
        return 0;
}

void etcd_client_set_timeout(EtcdClient *c, usec_t timeout)
{
        c->timeout = timeout;
}

/* ---- sending ---- */

static int call_send(EtcdCall *call);

/* May the call move on to the next endpoint after this error? */
static bool may_fail_over(const EtcdCall *call, int error)
{
        switch (error) {
        case -ECONNREFUSED:
        case -EHOSTUNREACH:
        case -EPROTO:
        case ETCD_ERR_LEARNER:
        case ETCD_ERR_REMOVED:
        case ETCD_ERR_STOPPING:
                return true; /* certainly not processed */
        case -ETIMEDOUT:
        case -ECONNRESET:
        case -EIO:
        case ETCD_ERR_NO_LEADER:
        case ETCD_ERR_NO_QUORUM:
                return call->flags & ETCD_CALL_IDEMPOTENT;
        default:
                return false;
        }
}

static void on_http_done(HttpRequest *req, int error, void *userdata)
{
        EtcdCall *call = userdata;
        _cleanup_(cJSON_Deletep) cJSON *body = NULL;
        long status = http_request_get_status(req);
        size_t len = 0;
        const char *data = http_request_get_body(req, &len);
        const char *endpoint = call->order[call->tried];
        EtcdResponse resp = {.endpoint = endpoint, .http_status = status};

        call->req = http_request_unref(call->req);
        if (len > 0)
                (void) json_parse(data, len, &body);
        if (error >= 0 && call->get && (status == 200 || status == 503)) {
                /* /health: the status code is the answer; the body is "true"/"false" strings. */
                resp.error = status == 200 ? 0 : -EAGAIN;
                resp.body = body;
        } else if (error >= 0 && status >= 200 && status < 300) {
                if (!body && len > 0)
                        resp.error = -EBADMSG;
                resp.body = body;
        } else if (error >= 0)
                resp.error = etcd_parse_error(status, body, &resp.message);
        else {
                resp.error = error;
                /* An endpoint's name that did not resolve: the resolver's words, for the log line. */
                if (error == -EHOSTUNREACH && *http_request_get_error(req))
                        resp.message = http_request_get_error(req);
        }

        if (call->aliased && error >= 0)
                note_way(call->client, call);
        if (resp.error < 0) {
                log_debug("etcd %s%s%s: %s%s%s", endpoint, call->path,
                          call->via_alias ? " (through its alias)" : "", etcd_strerror(resp.error),
                          resp.message ? ": " : "", strempty(resp.message));
                /* A certificate for the other address: the same endpoint, the other way. Nothing
                 * was processed (TLS failed first). */
                if (call->aliased && !call->second_way && resp.error == -EPROTO) {
                        call->second_way = true;
                        int r = call_send(call);
                        if (r >= 0)
                                return;
                        resp.error = r;
                } else if (resp.error == -ECONNREFUSED && !call->on_client_port &&
                           http_url_differs(endpoint)) {
                        /* Nothing listens on 2381: a member still of the older layout (an upgrade
                         * rolls the new pod one node at a time). Nothing was processed. */
                        call->on_client_port = true;
                        int r = call_send(call);
                        if (r >= 0)
                                return;
                        resp.error = r;
                } else if (call->tried + 1 < call->n_order && may_fail_over(call, resp.error)) {
                        call->tried++;
                        call->second_way = false;
                        call->on_client_port = false;
                        int r = call_send(call);
                        if (r >= 0)
                                return;
                        resp.error = r;
                }
        }
        call_finish(call, &resp);
}

static int call_send(EtcdCall *call)
{
        EtcdClient *c = call->client;
        const char *endpoint = call->order[call->tried];
        _cleanup_free_ char *http = call->on_client_port ? strdup(endpoint) : etcd_http_url(endpoint),
                            *url = NULL, *connect_to = NULL;
        _cleanup_free_ char *asked = http ? strdup_printf("%s%s", http, call->path) : NULL;
        _cleanup_(http_request_unrefp) HttpRequest *req = NULL;
        char timeout_hdr[64];
        int r;

        if (!asked)
                return -ENOMEM;
        /* Through the alias first, unless the address answered as itself last time; the
         * second way is the other one. */
        ssize_t ai = alias_of(c, asked);
        call->aliased = ai >= 0;
        call->via_alias = call->aliased && c->direct_first[ai] == call->second_way;
        if (call->aliased)
                call->alias = c->aliases[ai];
        r = route_via(asked, call->via_alias ? &call->alias : NULL, &url, &connect_to);
        if (r < 0)
                return r;
        req = http_request_new(call->get ? "GET" : "POST", url);
        if (!req)
                return -ENOMEM;
        if (connect_to && (r = http_request_set_connect_to(req, connect_to)) < 0)
                return r;
        /* The server-side deadline; the client allows a second more for the answer. */
        (void) snprintf(timeout_hdr, sizeof timeout_hdr, "Grpc-Timeout: %" PRIu64 "m",
                        (uint64_t) (call->timeout / USEC_PER_MSEC));
        r = http_request_add_header(req, timeout_hdr);
        if (r >= 0 && !call->get)
                r = http_request_set_body(req, "application/json", call->body, strlen(call->body));
        if (r >= 0)
                r = http_request_set_tls(req, c->tls);
        if (r < 0)
                return r;
        http_request_set_timeout(req, call->timeout + USEC_PER_SEC);
        r = loop_http_start(c->loop, req, on_http_done, call);
        if (r < 0)
                return r;
        call->req = TAKE_PTR(req);
        return 0;
}

static int call_start(EtcdClient *c, const char *endpoint, const char *path, const cJSON *body,
                      unsigned flags, usec_t timeout, bool get, EtcdCallback cb, void *userdata)
{
        EtcdCall *call;
        int r;

        assert_return(c && path, -EINVAL);
        if (c->closing)
                return -ECANCELED;
        if (!endpoint && c->n_endpoints == 0)
                return -ENOTCONN;
        call = calloc(1, sizeof *call);
        if (!call)
                return -ENOMEM;
        call->client = c;
        call->next = c->calls;
        if (c->calls)
                c->calls->prev = call;
        c->calls = call;
        call->flags = flags;
        call->get = get;
        call->timeout = timeout ? timeout : c->timeout;
        call->cb = cb;
        call->userdata = userdata;
        call->path = strdup(path);
        call->body = body ? json_print(body) : strdup("{}");
        if (!call->path || !call->body) {
                call_free(call);
                return -ENOMEM;
        }
        /* The order to try: the given endpoint only, or the leader first (if asked and
         * known), then the rest in configured order. */
        if (endpoint)
                call->order[call->n_order++] = strdup(endpoint);
        else {
                if ((flags & ETCD_CALL_LEADER_FIRST) && c->leader)
                        call->order[call->n_order++] = strdup(c->leader);
                for (size_t i = 0; i < c->n_endpoints && call->n_order <= MAX_ENDPOINTS; i++)
                        if (!(flags & ETCD_CALL_LEADER_FIRST) || !streq_ptr(c->leader, c->endpoints[i]))
                                call->order[call->n_order++] = strdup(c->endpoints[i]);
        }
        for (size_t i = 0; i < call->n_order; i++)
                if (!call->order[i]) {
                        call_free(call);
                        return -ENOMEM;
                }
        r = call_send(call);
        if (r < 0) {
                call_free(call);
                return r;
        }
        return 0;
}

int etcd_call(EtcdClient *c, const char *endpoint, const char *path, const cJSON *body, unsigned flags,
              usec_t timeout, EtcdCallback cb, void *userdata)
{
        return call_start(c, endpoint, path, body, flags, timeout, false, cb, userdata);
}

/* ---- typed calls ---- */

static char *u64(uint64_t v, char buf[static 21])
{
        (void) snprintf(buf, 21, "%" PRIu64, v);
        return buf;
}

int etcd_member_list(EtcdClient *c, EtcdCallback cb, void *userdata)
{
        return etcd_call(c, NULL, "/v3/cluster/member/list", NULL, ETCD_CALL_IDEMPOTENT, 0, cb, userdata);
}

int etcd_member_add(EtcdClient *c, const char *peer_url, bool learner, EtcdCallback cb, void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        cJSON *urls;

        if (!etcd_url_is_valid(peer_url))
                return ETCD_ERR_BAD_URL;
        if (!b || !(urls = cJSON_AddArrayToObject(b, "peerURLs")) ||
            !cJSON_AddItemToArray(urls, cJSON_CreateString(peer_url)) ||
            (learner && !cJSON_AddTrueToObject(b, "isLearner")))
                return -ENOMEM;
        return etcd_call(c, NULL, "/v3/cluster/member/add", b, ETCD_CALL_LEADER_FIRST, 0, cb, userdata);
}

static int id_call(EtcdClient *c, const char *path, uint64_t id, EtcdCallback cb, void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        char buf[21];
        if (!b || !cJSON_AddStringToObject(b, "ID", u64(id, buf)))
                return -ENOMEM;
        return etcd_call(c, NULL, path, b, ETCD_CALL_LEADER_FIRST, 0, cb, userdata);
}

int etcd_member_promote(EtcdClient *c, uint64_t id, EtcdCallback cb, void *userdata)
{
        return id_call(c, "/v3/cluster/member/promote", id, cb, userdata);
}

int etcd_member_remove(EtcdClient *c, uint64_t id, EtcdCallback cb, void *userdata)
{
        return id_call(c, "/v3/cluster/member/remove", id, cb, userdata);
}

int etcd_member_update(EtcdClient *c, uint64_t id, char *const *peer_urls, size_t n, EtcdCallback cb,
                       void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        cJSON *urls;
        char buf[21];

        /* An invalid URL here is committed and crashes every 3.4 member that applies it. */
        if (n == 0)
                return ETCD_ERR_BAD_URL;
        for (size_t i = 0; i < n; i++)
                if (!etcd_url_is_valid(peer_urls[i]))
                        return ETCD_ERR_BAD_URL;
        if (!b || !cJSON_AddStringToObject(b, "ID", u64(id, buf)) ||
            !(urls = cJSON_AddArrayToObject(b, "peerURLs")))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!cJSON_AddItemToArray(urls, cJSON_CreateString(peer_urls[i])))
                        return -ENOMEM;
        return etcd_call(c, NULL, "/v3/cluster/member/update", b, ETCD_CALL_LEADER_FIRST, 0, cb, userdata);
}

int etcd_status_timeout(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdCallback cb, void *userdata)
{
        assert_return(endpoint, -EINVAL);
        return etcd_call(c, endpoint, "/v3/maintenance/status", NULL, ETCD_CALL_IDEMPOTENT, timeout, cb,
                         userdata);
}

int etcd_status(EtcdClient *c, const char *endpoint, EtcdCallback cb, void *userdata)
{
        return etcd_status_timeout(c, endpoint, 0, cb, userdata);
}

int etcd_health_timeout(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdCallback cb, void *userdata)
{
        assert_return(endpoint, -EINVAL);
        return call_start(c, endpoint, "/health", NULL, ETCD_CALL_IDEMPOTENT, timeout, true, cb, userdata);
}

int etcd_health(EtcdClient *c, const char *endpoint, EtcdCallback cb, void *userdata)
{
        return etcd_health_timeout(c, endpoint, 0, cb, userdata);
}

int etcd_health_reads(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdCallback cb, void *userdata)
{
        assert_return(endpoint, -EINVAL);
        return call_start(c, endpoint, "/health?exclude=NOSPACE", NULL, ETCD_CALL_IDEMPOTENT, timeout, true,
                          cb, userdata);
}

int etcd_alarm_list(EtcdClient *c, EtcdCallback cb, void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        if (!b || !cJSON_AddStringToObject(b, "action", "GET"))
                return -ENOMEM;
        return etcd_call(c, NULL, "/v3/maintenance/alarm", b, ETCD_CALL_IDEMPOTENT, 0, cb, userdata);
}

int etcd_alarm_disarm(EtcdClient *c, uint64_t member_id, const char *alarm, EtcdCallback cb, void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        char buf[21];
        if (!b || !cJSON_AddStringToObject(b, "action", "DEACTIVATE") ||
            !cJSON_AddStringToObject(b, "memberID", u64(member_id, buf)) ||
            !cJSON_AddStringToObject(b, "alarm", alarm))
                return -ENOMEM;
        return etcd_call(c, NULL, "/v3/maintenance/alarm", b, ETCD_CALL_IDEMPOTENT, 0, cb, userdata);
}

int etcd_downgrade(EtcdClient *c, const char *action, const char *version, EtcdCallback cb, void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        assert_return(action, -EINVAL);
        if (!b || !cJSON_AddStringToObject(b, "action", action) ||
            (version && !cJSON_AddStringToObject(b, "version", version)))
                return -ENOMEM;
        return etcd_call(c, NULL, "/v3/maintenance/downgrade", b, ETCD_CALL_IDEMPOTENT, 0, cb, userdata);
}

int etcd_defragment(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdCallback cb, void *userdata)
{
        assert_return(endpoint, -EINVAL);
        return etcd_call(c, endpoint, "/v3/maintenance/defragment", NULL, 0,
                         timeout ? timeout : 120 * USEC_PER_SEC, cb, userdata);
}

int etcd_hash(EtcdClient *c, const char *endpoint, EtcdCallback cb, void *userdata)
{
        assert_return(endpoint, -EINVAL);
        return etcd_call(c, endpoint, "/v3/maintenance/hash", NULL, ETCD_CALL_IDEMPOTENT, 0, cb, userdata);
}

int etcd_move_leader(EtcdClient *c, const char *leader_endpoint, uint64_t target, EtcdCallback cb,
                     void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        char buf[21];

        assert_return(leader_endpoint, -EINVAL);
        if (!b || !cJSON_AddStringToObject(b, "targetID", u64(target, buf)))
                return -ENOMEM;
        return etcd_call(c, leader_endpoint, "/v3/maintenance/transfer-leadership", b, 0, 0, cb, userdata);
}

static int add_bytes(cJSON *o, const char *name, const void *p, size_t n)
{
        _cleanup_free_ char *b64 = base64_encode(p, n);
        return b64 && cJSON_AddStringToObject(o, name, b64) ? 0 : -ENOMEM;
}

int etcd_kv_put(EtcdClient *c, const void *key, size_t key_len, const void *value, size_t value_len,
                EtcdCallback cb, void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        assert_return(key && key_len > 0, -EINVAL);
        if (!b || add_bytes(b, "key", key, key_len) < 0 || add_bytes(b, "value", value, value_len) < 0)
                return -ENOMEM;
        return etcd_call(c, NULL, "/v3/kv/put", b, 0, 0, cb, userdata);
}

int etcd_kv_range(EtcdClient *c, const char *endpoint, const void *key, size_t key_len,
                  const void *range_end, size_t range_end_len, bool serializable, EtcdCallback cb,
                  void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        assert_return(key && key_len > 0, -EINVAL);
        if (!b || add_bytes(b, "key", key, key_len) < 0 ||
            (range_end && add_bytes(b, "range_end", range_end, range_end_len) < 0) ||
            (serializable && !cJSON_AddTrueToObject(b, "serializable")))
                return -ENOMEM;
        return etcd_call(c, endpoint, "/v3/kv/range", b, ETCD_CALL_IDEMPOTENT, 0, cb, userdata);
}

int etcd_kv_compact(EtcdClient *c, uint64_t revision, bool physical, EtcdCallback cb, void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        char buf[21];
        if (!b || !cJSON_AddStringToObject(b, "revision", u64(revision, buf)) ||
            (physical && !cJSON_AddTrueToObject(b, "physical")))
                return -ENOMEM;
        return etcd_call(c, NULL, "/v3/kv/compaction", b, 0, 2 * 60 * USEC_PER_SEC, cb, userdata);
}

int etcd_kv_create(EtcdClient *c, const void *key, size_t key_len, const void *value, size_t value_len,
                   EtcdCallback cb, void *userdata)
{
        _cleanup_(cJSON_Deletep) cJSON *b = cJSON_CreateObject();
        cJSON *cmp, *cmps, *succ, *put, *fail, *rng;

        assert_return(key && key_len > 0, -EINVAL);
        /* A txn: compare create_revision == 0, then put, else read what is there. */
        if (!b || !(cmps = cJSON_AddArrayToObject(b, "compare")) || !(cmp = cJSON_CreateObject()) ||
            !cJSON_AddItemToArray(cmps, cmp) || add_bytes(cmp, "key", key, key_len) < 0 ||
            !cJSON_AddStringToObject(cmp, "target", "CREATE") ||
            !cJSON_AddStringToObject(cmp, "result", "EQUAL") ||
            !cJSON_AddStringToObject(cmp, "create_revision", "0") ||
            !(succ = cJSON_AddArrayToObject(b, "success")) || !(put = cJSON_CreateObject()) ||
            !cJSON_AddItemToArray(succ, put) || !(put = cJSON_AddObjectToObject(put, "request_put")) ||
            add_bytes(put, "key", key, key_len) < 0 || add_bytes(put, "value", value, value_len) < 0 ||
            !(fail = cJSON_AddArrayToObject(b, "failure")) || !(rng = cJSON_CreateObject()) ||
            !cJSON_AddItemToArray(fail, rng) || !(rng = cJSON_AddObjectToObject(rng, "request_range")) ||
            add_bytes(rng, "key", key, key_len) < 0)
                return -ENOMEM;
        return etcd_call(c, NULL, "/v3/kv/txn", b, 0, 0, cb, userdata);
}
