/* libmicrohttpd in external epoll mode, driven by sd-event. MHD watches its
 * sockets edge-triggered on an inner epoll fd; we watch that fd
 * (level-triggered) and run MHD when it is readable. Work MHD has already
 * seen but not finished (its fairness limits, TLS records buffered inside
 * GnuTLS) will not wake the inner epoll again, so after every MHD_run() the
 * timer is re-armed from MHD_get_timeout(), which answers 0 in that case and
 * otherwise the next idle-connection deadline. */
#include <arpa/inet.h>
#include <assert.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/socket.h>

#include "base/log.h"
#include "httpserver.h"

/* Why these limits (review H3, M8). With 64 connections for everyone, no
 * limit per client and a 30 s idle timeout, one client that holds 64
 * connections starves every other client. At the limit MHD takes its listen
 * socket out of epoll, so a probe waits in the kernel's accept queue behind
 * the holder's other connections. The starvation lasts only while those
 * connections stay open, though. A client that opens hundreds of connections
 * once and then sends nothing is dropped by MHD after 30 s idle, 64 at a
 * time, and it does not notice: its side of each socket stays open. Measured
 * with the real readyz over TLS, 200 idle connections opened once made two
 * probes in a row time out (30 s each) and the third answered after 19 s.
 * After about 90 s every probe answered at once. etcd's liveness probe
 * (period 5 s, timeout 30 s, 5 failures) needs about 175 s of starvation
 * without a break, so such a test restarts nothing. Readiness (timeout 5 s,
 * 3 failures) goes unready for a while instead, which is easy to miss. Bytes
 * in plain HTTP sent to the TLS port are refused by GnuTLS at the first
 * record, so a plain-text slowloris tool fails there too. A client that
 * keeps its connections alive by itself starves the probes for as long as
 * it likes: it can reconnect as soon as one is dropped, trickle a
 * ClientHello, or trickle a header line under the idle timeout. That client
 * is the one these limits are for:
 *   - at most PER_IP_DEFAULT connections per client address; MHD accepts a
 *     connection over that and closes it at once, so it never waits in the
 *     accept queue in front of anyone else's;
 *   - a request must be complete (TLS handshake, headers, body) within
 *     REQUEST_TIMEOUT_DEFAULT of the accept, or of the last response on a
 *     kept-alive connection, however slowly it trickles: MHD's own timeout
 *     counts only silence, so this server shuts the socket down itself;
 *   - a short idle timeout and a global cap far above what the probes and a
 *     scraper need, so that filling it takes many addresses that keep
 *     reconnecting. */
#define MAX_CONNECTIONS_DEFAULT    512U
#define PER_IP_DEFAULT             8U
#define CONNECTION_TIMEOUT_DEFAULT (10 * USEC_PER_SEC)
#define REQUEST_TIMEOUT_DEFAULT    (10 * USEC_PER_SEC)
#define METRICS_BODY_MAX           (16U * 1024 * 1024)
#define TEXT_PLAIN                 "text/plain; charset=utf-8"
#define METRICS_CONTENT_TYPE       "text/plain; version=0.0.4; charset=utf-8"

/* One accepted connection: the deadline of the request it is reading. */
typedef struct Conn {
        struct Conn *prev, *next;
        int fd;
        usec_t deadline;             /* USEC_INFINITY while a response is queued, or once shut down */
        struct MHD_Connection *held; /* suspended until the auth function has its answer */
} Conn;

struct HttpServer {
        sd_event *event;
        Conn *conns;
        usec_t request_timeout;
        usec_t next_deadline; /* the earliest of the conns' deadlines */
        struct MHD_Daemon *daemon;
        sd_event_source *io;
        sd_event_source *timer;
        uint16_t port;
        bool in_run; /* freeing from inside an MHD callback would pull MHD's state from under it */
        /* MHD keeps pointers to these until the daemon stops. */
        char *cert_pem;
        char *key_pem;
        char *client_ca_pem;
        MetricsRegistry *metrics;
        HttpReadyFunc ready;
        void *ready_userdata;
        HttpReadyFunc live;
        void *live_userdata;
        HttpAuthFunc auth;
        void *auth_userdata;
        unsigned n_held;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct MHD_Response *, MHD_destroy_response);
DEFINE_TRIVIAL_CLEANUP_FUNC(gnutls_x509_crt_t, gnutls_x509_crt_deinit);

bool http_server_tls_supported(void)
{
        return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

_printf_(2, 0) static void on_mhd_log(void *userdata, const char *fmt, va_list ap)
{
        _cleanup_free_ char *msg = NULL;

        if (!log_level_enabled(LOG_LEVEL_DEBUG) || vasprintf(&msg, fmt, ap) < 0)
                return;
        msg[strcspn(msg, "\n")] = 0;
        log_debug("microhttpd: %s", msg);
}

static Conn *conn_of(struct MHD_Connection *c)
{
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return info ? info->socket_context : NULL;
}

static void on_connection(void *userdata, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
        HttpServer *s = userdata;
        Conn *conn = *socket_context;

        if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
                const union MHD_ConnectionInfo *info =
                        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
                conn = info ? calloc(1, sizeof *conn) : NULL;
                if (!conn)
                        return; /* out of memory: only MHD's idle timeout applies to it */
                conn->fd = info->connect_fd;
                conn->deadline = now_usec(CLOCK_MONOTONIC) + s->request_timeout;
                conn->next = s->conns;
                if (s->conns)
                        s->conns->prev = conn;
                s->conns = conn;
                *socket_context = conn;
                return;
        }
        if (toe == MHD_CONNECTION_NOTIFY_CLOSED && conn) {
                if (conn->held)
                        s->n_held--;
                if (conn->prev)
                        conn->prev->next = conn->next;
                else
                        s->conns = conn->next;
                if (conn->next)
                        conn->next->prev = conn->prev;
                free(conn);
                *socket_context = NULL;
        }
}

/* A response went out: the next request on a kept-alive connection gets its own time. */
static void on_completed(void *userdata, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        HttpServer *s = userdata;
        Conn *conn = conn_of(c);

        if (conn && conn->deadline == USEC_INFINITY && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
                conn->deadline = now_usec(CLOCK_MONOTONIC) + s->request_timeout;
}

/* Shuts down the sockets of requests past their deadline (MHD then reads EOF and closes
 * them) and notes the next deadline. */
static void server_sweep(HttpServer *s)
{
        usec_t now = now_usec(CLOCK_MONOTONIC);

        s->next_deadline = USEC_INFINITY;
        for (Conn *conn = s->conns; conn; conn = conn->next) {
                if (conn->deadline <= now) {
                        log_debug("HTTP: closing a connection whose request took over %" PRIu64 " ms",
                                  s->request_timeout / USEC_PER_MSEC);
                        (void) shutdown(conn->fd, SHUT_RDWR);
                        conn->deadline = USEC_INFINITY;
                }
                s->next_deadline = MIN(s->next_deadline, conn->deadline);
        }
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *content_type,
                               const char *body, bool allow)
{
        _cleanup_(MHD_destroy_responsep) struct MHD_Response *resp = NULL;
        Conn *conn = conn_of(c);

        if (conn)
                conn->deadline = USEC_INFINITY; /* answered: the client reads at its own pace */

        resp = MHD_create_response_from_buffer(strlen(body), (void *) body, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return MHD_NO;
        if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) != MHD_YES)
                return MHD_NO;
        if (allow && MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES)
                return MHD_NO;
        return MHD_queue_response(c, status, resp);
}

static enum MHD_Result serve_check(struct MHD_Connection *c, HttpReadyFunc f, void *userdata)
{
        const char *reason = NULL;

        if (!f || f(userdata, &reason))
                return respond(c, MHD_HTTP_OK, TEXT_PLAIN, "ok", false);
        return respond(c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT_PLAIN, reason ? reason : "not ready", false);
}

static enum MHD_Result serve_metrics(HttpServer *s, struct MHD_Connection *c)
{
        _cleanup_(buf_free) Buf b = BUF_INIT(METRICS_BODY_MAX);
        char err[128];

        int r = metrics_render(s->metrics, &b);
        if (r < 0) {
                (void) log_debug_errno(r, "Rendering metrics failed");
                (void) snprintf(err, sizeof err, "rendering metrics: %s", strerror(-r));
                return respond(c, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT_PLAIN, err, false);
        }
        return respond(c, MHD_HTTP_OK, METRICS_CONTENT_TYPE, b.data ? b.data : "", false);
}

/* One attribute of a certificate's subject (the index-th of that OID) into buf; false when absent. */
static bool subject_attr(gnutls_x509_crt_t crt, const char *oid, unsigned index, char *buf, size_t size)
{
        size_t len = size;
        return gnutls_x509_crt_get_dn_by_oid(crt, oid, index, 0, buf, &len) == 0 && len < size && buf[0];
}

/* The connection's client certificate, verified as kube-apiserver's x509 authenticator does:
 * its chain to the client CA (the daemon's trust), its validity now, and the client-auth
 * purpose; then the user is the subject's CN and the groups its O values. */
static void peer_of(HttpServer *s, struct MHD_Connection *c, HttpPeer *ret)
{
        _cleanup_(gnutls_x509_crt_deinitp) gnutls_x509_crt_t crt = NULL;
        gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                         .data = (unsigned char *) GNUTLS_KP_TLS_WWW_CLIENT};
        gnutls_datum_t text = {};
        unsigned n = 0, status = 0;
        int r;

        *ret = (HttpPeer){};
        if (!s->client_ca_pem)
                return;
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        if (!info || !info->tls_session)
                return;
        gnutls_session_t session = info->tls_session;
        const gnutls_datum_t *chain = gnutls_certificate_get_peers(session, &n);
        if (!chain || n == 0)
                return;
        ret->presented = true;
        r = gnutls_certificate_verify_peers(session, &purpose, 1, &status);
        if (r < 0) {
                (void) snprintf(ret->error, sizeof ret->error,
                                "the client certificate cannot be verified: %s", gnutls_strerror(r));
                return;
        }
        if (status != 0) {
                if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0) {
                        (void) snprintf(ret->error, sizeof ret->error,
                                        "the client certificate is not one kube-apiserver's client CA "
                                        "vouches for: %s",
                                        (const char *) text.data);
                        gnutls_free(text.data);
                } else
                        (void) snprintf(ret->error, sizeof ret->error,
                                        "the client certificate is not one kube-apiserver's client CA "
                                        "vouches for");
                return;
        }
        if (gnutls_x509_crt_init(&crt) < 0) {
                crt = NULL;
                (void) snprintf(ret->error, sizeof ret->error, "out of memory");
                return;
        }
        if (gnutls_x509_crt_import(crt, &chain[0], GNUTLS_X509_FMT_DER) < 0) {
                (void) snprintf(ret->error, sizeof ret->error, "the client certificate does not parse");
                return;
        }
        if (!subject_attr(crt, GNUTLS_OID_X520_COMMON_NAME, 0, ret->user, sizeof ret->user)) {
                (void) snprintf(ret->error, sizeof ret->error,
                                "the client certificate's subject has no common name (the user)");
                return;
        }
        while (ret->n_groups < HTTP_PEER_GROUPS_MAX &&
               subject_attr(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, (unsigned) ret->n_groups,
                            ret->groups[ret->n_groups], sizeof ret->groups[0]))
                ret->n_groups++;
        ret->verified = true;
}

/* /metrics behind the auth function: a verdict now, or the request held until there is one. */
static enum MHD_Result serve_metrics_authorized(HttpServer *s, struct MHD_Connection *c)
{
        const char *reason = NULL;
        Conn *conn = conn_of(c);
        HttpPeer peer;

        if (!s->auth)
                return serve_metrics(s, c);
        peer_of(s, c, &peer);
        HttpAuthVerdict v = s->auth(
                s->auth_userdata, &peer,
                MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), &reason);
        switch (v) {
        case HTTP_AUTH_ALLOW:
                return serve_metrics(s, c);
        case HTTP_AUTH_PENDING:
                if (!conn) /* no bookkeeping for it (out of memory): it cannot be resumed */
                        return respond(c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT_PLAIN, "try again", false);
                conn->held = c;
                s->n_held++;
                MHD_suspend_connection(c);
                return MHD_YES;
        case HTTP_AUTH_UNAUTHORIZED: {
                _cleanup_(MHD_destroy_responsep) struct MHD_Response *resp = NULL;
                const char *body = reason ? reason : "Unauthorized";
                if (conn)
                        conn->deadline = USEC_INFINITY;
                resp = MHD_create_response_from_buffer(strlen(body), (void *) body, MHD_RESPMEM_MUST_COPY);
                if (!resp ||
                    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, TEXT_PLAIN) != MHD_YES ||
                    MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer") != MHD_YES)
                        return MHD_NO;
                return MHD_queue_response(c, MHD_HTTP_UNAUTHORIZED, resp);
        }
        case HTTP_AUTH_FORBIDDEN:
                return respond(c, MHD_HTTP_FORBIDDEN, TEXT_PLAIN, reason ? reason : "Forbidden", false);
        default:
                return respond(c, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT_PLAIN,
                               reason ? reason : "cannot check the request's credentials now", false);
        }
}

/* GET and HEAD are answered on the second call, once MHD has the whole
 * request: a response queued on the first call counts as "early" and MHD
 * then closes the connection after it, losing keep-alive. Other methods are
 * answered early on purpose, so their body is discarded unread. The path
 * decides 404 before the method decides 405: a resource that does not exist
 * has no allowed methods. */
static enum MHD_Result on_request(void *userdata, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        static char seen;
        HttpServer *s = userdata;
        bool known =
                streq(url, "/healthz") || streq(url, "/readyz") || (s->metrics && streq(url, "/metrics"));
        bool get = streq(method, MHD_HTTP_METHOD_GET) || streq(method, MHD_HTTP_METHOD_HEAD);

        if (get && !*con_cls) {
                *con_cls = &seen;
                return MHD_YES;
        }
        if (get && *upload_data_size > 0) {
                *upload_data_size = 0; /* a GET body means nothing to us: drop it */
                return MHD_YES;
        }

        log_debug("HTTP %s %s", method, url);
        if (!known)
                return respond(c, MHD_HTTP_NOT_FOUND, TEXT_PLAIN, "not found", false);
        if (!get)
                return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_PLAIN, "method not allowed", true);
        /* MHD leaves the body out of HEAD responses itself. */
        if (streq(url, "/healthz"))
                return serve_check(c, s->live, s->live_userdata);
        if (streq(url, "/readyz"))
                return serve_check(c, s->ready, s->ready_userdata);
        return serve_metrics_authorized(s, c);
}

static void server_arm_timer(HttpServer *s, bool now)
{
        MHD_UNSIGNED_LONG_LONG ms = 0;
        usec_t t = now_usec(CLOCK_MONOTONIC), at = now ? t : s->next_deadline;
        int r;

        if (!now && MHD_get_timeout(s->daemon, &ms) == MHD_YES)
                at = MIN(at, t + MIN(ms, (MHD_UNSIGNED_LONG_LONG) 24 * 3600 * 1000) * USEC_PER_MSEC);
        if (at == USEC_INFINITY) {
                (void) sd_event_source_set_enabled(s->timer, SD_EVENT_OFF);
                return;
        }
        r = sd_event_source_set_time(s->timer, at);
        if (r >= 0)
                r = sd_event_source_set_enabled(s->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                (void) log_debug_errno(r, "Arming the HTTP server timer failed");
}

/* MHD takes its listening socket out of its epoll set while at the
 * connection limit and puts it back only at the start of a later run, which
 * nothing would trigger: no event is pending and MHD_get_timeout() does not
 * know. So when a run closed connections, run again at once. */
static void server_run(HttpServer *s)
{
        unsigned before = http_server_get_connections(s);

        s->in_run = true;
        if (MHD_run(s->daemon) != MHD_YES)
                log_debug("MHD_run() failed");
        s->in_run = false;
        server_sweep(s);
        server_arm_timer(s, http_server_get_connections(s) < before);
}

static int on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        server_run(userdata);
        return 0;
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata)
{
        server_run(userdata);
        return 0;
}

HttpServer *http_server_free(HttpServer *s)
{
        if (!s)
                return NULL;
        assert(!s->in_run);
        /* MHD must not be stopped with connections suspended: they go back to it first. */
        for (Conn *conn = s->conns; conn; conn = conn->next)
                if (conn->held) {
                        MHD_resume_connection(conn->held);
                        conn->held = NULL;
                }
        s->n_held = 0;
        /* Sources go first: MHD_stop_daemon() closes the epoll fd they watch. */
        s->io = sd_event_source_disable_unref(s->io);
        s->timer = sd_event_source_disable_unref(s->timer);
        if (s->daemon)
                MHD_stop_daemon(s->daemon);
        sd_event_unref(s->event);
        if (s->key_pem) {
                explicit_bzero(s->key_pem, strlen(s->key_pem));
                free(s->key_pem);
        }
        free(s->cert_pem);
        free(s->client_ca_pem);
        return mfree(s);
}

static int parse_address(const char *a, uint16_t port, struct sockaddr_storage *ret, bool *ret_ipv6)
{
        struct sockaddr_in *in = (struct sockaddr_in *) ret;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ret;

        *ret = (struct sockaddr_storage){};
        if (inet_pton(AF_INET, a, &in->sin_addr) == 1) {
                in->sin_family = AF_INET;
                in->sin_port = htons(port);
                *ret_ipv6 = false;
                return 0;
        }
        if (inet_pton(AF_INET6, a, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(port);
                *ret_ipv6 = true;
                return 0;
        }
        return -EINVAL;
}

/* MHD only says NULL; errno still holds the cause when a socket call failed. */
static int start_error(int e)
{
        switch (e) {
        case EADDRINUSE:
        case EADDRNOTAVAIL:
        case EACCES:
        case EMFILE:
        case ENFILE:
        case ENOMEM:
                return -e;
        default:
                return -EPROTO;
        }
}

static int server_start(HttpServer *s, const HttpServerConfig *cfg)
{
        struct sockaddr_storage addr;
        bool ipv6 = false;
        unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
        usec_t timeout = cfg->connection_timeout > 0 ? cfg->connection_timeout : CONNECTION_TIMEOUT_DEFAULT;
        unsigned timeout_sec = (unsigned) MAX((timeout + USEC_PER_SEC - 1) / USEC_PER_SEC, (usec_t) 1);
        unsigned max_conn = cfg->max_connections > 0 ? cfg->max_connections : MAX_CONNECTIONS_DEFAULT;
        unsigned per_ip = cfg->max_connections_per_ip > 0 ? cfg->max_connections_per_ip : PER_IP_DEFAULT;
        struct MHD_OptionItem tls[] = {
                {MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert_pem},
                {MHD_OPTION_HTTPS_MEM_KEY, 0, s->key_pem},
                /* MHD asks for (GNUTLS_CERT_REQUEST: never requires) a client certificate once it
                 * has a trust, and names the trusted CAs in its request, as a client picks its
                 * certificate by them. Last, so that without a client CA the array ends here. */
                {s->client_ca_pem ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, s->client_ca_pem},
                {MHD_OPTION_END, 0, NULL},
        };
        int r;

        s->request_timeout = cfg->request_timeout > 0 ? cfg->request_timeout : REQUEST_TIMEOUT_DEFAULT;
        s->next_deadline = USEC_INFINITY;
        r = parse_address(cfg->address ? cfg->address : "0.0.0.0", cfg->port, &addr, &ipv6);
        if (r < 0)
                return r;
        if (ipv6)
                flags |= MHD_USE_IPv6;
        if (s->cert_pem)
                flags |= MHD_USE_TLS;

        errno = 0;
        s->daemon = MHD_start_daemon(
                flags, cfg->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &addr,
                MHD_OPTION_CONNECTION_LIMIT, max_conn, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
                MHD_OPTION_CONNECTION_TIMEOUT, timeout_sec, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
                MHD_OPTION_ARRAY, s->cert_pem ? tls : tls + 3, MHD_OPTION_END);
        if (!s->daemon)
                return start_error(errno);

        const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info)
                return -EPROTO;
        int epoll_fd = info->epoll_fd;
        info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
        if (!info || info->port == 0)
                return -EPROTO;
        s->port = info->port;

        r = sd_event_add_io(s->event, &s->io, epoll_fd, EPOLLIN, on_io, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s->io, "httpserver-io");
        /* 1 ms accuracy: the default 250 ms slack would delay MHD's "run again now". */
        r = sd_event_add_time(s->event, &s->timer, CLOCK_MONOTONIC, 0, USEC_PER_MSEC, on_timer, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s->timer, "httpserver-timer");
        server_arm_timer(s, false);

        log_debug("HTTP%s server listening on %s port %u (max %u connections, %u per client address, "
                  "%u s idle timeout, %" PRIu64 " ms per request)",
                  s->cert_pem ? "S" : "", cfg->address ? cfg->address : "0.0.0.0", s->port, max_conn, per_ip,
                  timeout_sec, s->request_timeout / USEC_PER_MSEC);
        return 0;
}

int http_server_new(sd_event *e, const HttpServerConfig *cfg, HttpServer **ret)
{
        assert_return(e && cfg && ret, -EINVAL);
        assert_return(!cfg->tls_cert_pem == !cfg->tls_key_pem, -EINVAL);

        if (cfg->tls_cert_pem && !http_server_tls_supported())
                return -EOPNOTSUPP;

        _cleanup_(http_server_freep) HttpServer *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(e);
        if (cfg->tls_cert_pem) {
                s->cert_pem = strdup(cfg->tls_cert_pem);
                s->key_pem = strdup(cfg->tls_key_pem);
                if (!s->cert_pem || !s->key_pem)
                        return -ENOMEM;
                if (cfg->client_ca_pem && !(s->client_ca_pem = strdup(cfg->client_ca_pem)))
                        return -ENOMEM;
        }
        int r = server_start(s, cfg);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

void http_server_set_metrics(HttpServer *s, MetricsRegistry *reg)
{
        if (s)
                s->metrics = reg;
}

void http_server_set_ready(HttpServer *s, HttpReadyFunc f, void *userdata)
{
        if (!s)
                return;
        s->ready = f;
        s->ready_userdata = userdata;
}

void http_server_set_live(HttpServer *s, HttpReadyFunc f, void *userdata)
{
        if (!s)
                return;
        s->live = f;
        s->live_userdata = userdata;
}

void http_server_set_metrics_auth(HttpServer *s, HttpAuthFunc f, void *userdata)
{
        if (!s)
                return;
        s->auth = f;
        s->auth_userdata = userdata;
}

void http_server_auth_settled(HttpServer *s)
{
        if (!s || s->n_held == 0)
                return;
        for (Conn *conn = s->conns; conn; conn = conn->next)
                if (conn->held) {
                        MHD_resume_connection(conn->held);
                        conn->held = NULL;
                }
        s->n_held = 0;
        server_arm_timer(s, true); /* MHD takes them back on its next run */
}

unsigned http_server_get_held(HttpServer *s)
{
        return s ? s->n_held : 0;
}

uint16_t http_server_get_port(HttpServer *s)
{
        return s ? s->port : 0;
}

unsigned http_server_get_connections(HttpServer *s)
{
        const union MHD_DaemonInfo *info;

        if (!s || !s->daemon)
                return 0;
        info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        return info ? info->num_connections : 0;
}
