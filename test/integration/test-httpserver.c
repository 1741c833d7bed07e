/* The HTTP server on a real sd-event loop, exercised with the project's own
 * HTTP client (and raw sockets where curl cannot say what we need: HEAD,
 * idle connections). Everything runs on one thread, so nothing here may
 * block: every wait is loop_run_until() with a deadline. Each test ends by
 * proving the loop has no request in flight. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fileio.h"
#include "loop/loop.h"
#include "runtime/httpserver.h"
#include "s3/s3.h"

#define DEADLINE (10 * USEC_PER_SEC)

static const char *const TEXT_PLAIN = "text/plain; charset=utf-8";
static const char *const METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/* ---- helpers ---- */

typedef struct Call {
        bool done;
        int error;
} Call;

static void on_done(HttpRequest *req, int error, void *userdata)
{
        Call *c = userdata;
        c->done = true;
        c->error = error;
}

/* One request, run to completion; returns the request (owned) and its error. */
static HttpRequest *fetch(Loop *l, const char *method, const char *url, const HttpTls *tls, int *ret_error)
{
        HttpRequest *r = http_request_new(method, url);
        Call c = {};

        assert_non_null(r);
        http_request_set_timeout(r, 5 * USEC_PER_SEC);
        if (tls)
                assert_int_equal(http_request_set_tls(r, tls), 0);
        assert_int_equal(loop_http_start(l, r, on_done, &c), 0);
        assert_int_equal(loop_run_until(l, &c.done, DEADLINE), 0);
        *ret_error = c.error;
        return r;
}

static char *url_for(HttpServer *s, const char *scheme, const char *path)
{
        char *u = strdup_printf("%s://127.0.0.1:%u%s", scheme, http_server_get_port(s), path);
        assert_non_null(u);
        return u;
}

/* GETs (or other method) `path` and checks status, body and content type. */
static void expect(Loop *l, HttpServer *s, const char *method, const char *path, long status,
                   const char *body, const char *content_type)
{
        _cleanup_free_ char *url = url_for(s, "http", path);
        int e = 0;
        _cleanup_(http_request_unrefp) HttpRequest *r = fetch(l, method, url, NULL, &e);

        assert_int_equal(e, 0);
        assert_int_equal(http_request_get_status(r), status);
        if (body)
                assert_string_equal(http_request_get_body(r, NULL), body);
        if (content_type)
                assert_string_equal(strempty(http_request_get_header(r, "Content-Type")), content_type);
}

static HttpServer *server_new(Loop *l, const HttpServerConfig *cfg)
{
        HttpServerConfig def = {.address = "127.0.0.1"};
        HttpServer *s = NULL;

        assert_int_equal(http_server_new(loop_get_event(l), cfg ? cfg : &def, &s), 0);
        assert_non_null(s);
        assert_int_not_equal(http_server_get_port(s), 0);
        return s;
}

static unsigned count_threads(void)
{
        _cleanup_(closedirp) DIR *d = opendir("/proc/self/task");
        unsigned n = 0;

        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_name[0] != '.')
                        n++;
        return n;
}

/* Polls a condition every 5 ms from a loop timer until it holds. */
typedef struct Poll {
        HttpServer *server;
        unsigned want_connections;
        bool done;
} Poll;

static int on_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
        Poll *p = userdata;

        if (http_server_get_connections(p->server) == p->want_connections) {
                p->done = true;
                return sd_event_source_set_enabled(src, SD_EVENT_OFF);
        }
        (void) sd_event_source_set_time(src, usec + 5 * USEC_PER_MSEC);
        return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

static void wait_connections(Loop *l, HttpServer *s, unsigned n)
{
        _cleanup_(sd_event_source_unrefp) sd_event_source *src = NULL;
        Poll p = {.server = s, .want_connections = n};

        assert_int_equal(
                sd_event_add_time_relative(loop_get_event(l), &src, CLOCK_MONOTONIC, 0, 1, on_poll, &p), 0);
        assert_int_equal(loop_run_until(l, &p.done, DEADLINE), 0);
}

/* A raw client socket read from the loop until the server closes it. */
typedef struct Raw {
        int fd;
        sd_event_source *src;
        Buf in;
        bool eof;
        usec_t eof_at;
} Raw;

static int on_raw_io(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
        Raw *raw = userdata;
        char b[4096];

        for (;;) {
                ssize_t n = recv(fd, b, sizeof b, 0);
                if (n > 0) {
                        assert_int_equal(buf_append(&raw->in, b, (size_t) n), 0);
                        continue;
                }
                if (n < 0 && errno == EAGAIN)
                        return 0;
                /* EOF, or a reset from a server closing with unread data. */
                raw->eof = true;
                raw->eof_at = now_usec(CLOCK_MONOTONIC);
                return sd_event_source_set_enabled(src, SD_EVENT_OFF);
        }
}

static void raw_open(Loop *l, HttpServer *s, Raw *raw)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(http_server_get_port(s))};

        *raw = (Raw){.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), .in = BUF_INIT(1 << 20)};
        assert_true(raw->fd >= 0);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        /* Loopback connects complete from the listen backlog, without the server's help. */
        assert_int_equal(connect(raw->fd, (struct sockaddr *) &a, sizeof a), 0);
        assert_int_equal(fcntl(raw->fd, F_SETFL, O_NONBLOCK), 0);
        assert_int_equal(sd_event_add_io(loop_get_event(l), &raw->src, raw->fd, EPOLLIN, on_raw_io, raw), 0);
}

static void raw_close(Raw *raw)
{
        raw->src = sd_event_source_disable_unref(raw->src);
        if (raw->fd >= 0)
                (void) close(raw->fd);
        raw->fd = -EBADF;
        buf_free(&raw->in);
}

/* Sends a whole request and returns everything the server sent before closing. */
static char *raw_exchange(Loop *l, HttpServer *s, const char *request)
{
        Raw raw;

        raw_open(l, s, &raw);
        assert_int_equal(send(raw.fd, request, strlen(request), MSG_NOSIGNAL), (ssize_t) strlen(request));
        assert_int_equal(loop_run_until(l, &raw.eof, DEADLINE), 0);
        char *out = strdup(raw.in.data ? raw.in.data : "");
        raw_close(&raw);
        return out;
}

/* ---- routes ---- */

static void test_routes(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        Metric *g = NULL;

        assert_int_equal(metrics_gauge(reg, &g, "openshift_etcd_operator_signer_expiration_days",
                                       "Days until the signer expires.", "name", NULL),
                         0);
        assert_int_equal(metrics_set(g, 42, "etcd-signer", NULL), 0);

        _cleanup_(http_server_freep) HttpServer *s = server_new(l, NULL);
        http_server_set_metrics(s, reg);
        /* No thread of its own: MHD runs from our loop. */
        assert_int_equal(count_threads(), 1);

        expect(l, s, "GET", "/healthz", 200, "ok", TEXT_PLAIN);
        expect(l, s, "GET", "/healthz?verbose=1", 200, "ok", TEXT_PLAIN);
        expect(l, s, "GET", "/readyz", 200, "ok", TEXT_PLAIN); /* no readiness function: ready */
        expect(l, s, "GET", "/metrics", 200,
               "# HELP openshift_etcd_operator_signer_expiration_days Days until the signer expires.\n"
               "# TYPE openshift_etcd_operator_signer_expiration_days gauge\n"
               "openshift_etcd_operator_signer_expiration_days{name=\"etcd-signer\"} 42\n",
               METRICS_TYPE);
        expect(l, s, "GET", "/", 404, "not found", TEXT_PLAIN);
        expect(l, s, "GET", "/healthz/", 404, NULL, NULL);
        expect(l, s, "GET", "/metricsx", 404, NULL, NULL);
        expect(l, s, "POST", "/nope", 404, NULL, NULL);
        expect(l, s, "PUT", "/readyz", 405, "method not allowed", TEXT_PLAIN);
        expect(l, s, "DELETE", "/metrics", 405, NULL, NULL);

        /* 405 says what is allowed; a POST body is not read. */
        _cleanup_free_ char *url = url_for(s, "http", "/healthz");
        _cleanup_(http_request_unrefp) HttpRequest *post = http_request_new("POST", url);
        _cleanup_free_ char *big = calloc(1, 256 * 1024);
        Call c = {};
        memset(big, 'x', 256 * 1024 - 1);
        assert_int_equal(http_request_set_body(post, "text/plain", big, strlen(big)), 0);
        assert_int_equal(loop_http_start(l, post, on_done, &c), 0);
        assert_int_equal(loop_run_until(l, &c.done, DEADLINE), 0);
        assert_int_equal(c.error, 0);
        assert_int_equal(http_request_get_status(post), 405);
        assert_string_equal(strempty(http_request_get_header(post, "Allow")), "GET, HEAD");

        /* HEAD: headers as for GET, no body. */
        _cleanup_free_ char *head =
                raw_exchange(l, s, "HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert_true(startswith(head, "HTTP/1.1 200 OK\r\n"));
        assert_non_null(strstr(head, "\r\nContent-Length: 2\r\n"));
        assert_non_null(strstr(head, "\r\nContent-Type: text/plain; charset=utf-8\r\n"));
        assert_non_null(strstr(head, "\r\n\r\n"));
        assert_true(strstr(head, "\r\n\r\n")[4] == 0);
        _cleanup_free_ char *head_metrics = raw_exchange(l, s, "HEAD /metrics HTTP/1.0\r\n\r\n");
        assert_true(startswith(head_metrics, "HTTP/1.0 200 OK\r\n") ||
                    startswith(head_metrics, "HTTP/1.1 200 OK\r\n"));
        assert_non_null(strstr(head_metrics, "\r\n\r\n"));
        assert_true(strstr(head_metrics, "\r\n\r\n")[4] == 0);

        /* Garbage is answered (400) or dropped, and the server keeps serving. */
        _cleanup_free_ char *junk = raw_exchange(l, s, "\x01\x02 nonsense\r\n\r\n");
        assert_true(junk[0] == 0 || startswith(junk, "HTTP/1.1 400"));
        expect(l, s, "GET", "/healthz", 200, "ok", TEXT_PLAIN);

        assert_int_equal(count_threads(), 1);
        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

static void test_no_metrics_registry(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, NULL);

        expect(l, s, "GET", "/metrics", 404, NULL, NULL);
        expect(l, s, "GET", "/healthz", 200, "ok", NULL);
        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* ---- readiness ---- */

typedef struct Readiness {
        bool ready;
        const char *reason;
        unsigned asked;
} Readiness;

static bool is_ready(void *userdata, const char **ret_reason)
{
        Readiness *rd = userdata;
        rd->asked++;
        if (!rd->ready)
                *ret_reason = rd->reason;
        return rd->ready;
}

static void test_readiness_flips(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, NULL);
        Readiness rd = {.reason = "informers not synced: pods, configmaps"};

        http_server_set_ready(s, is_ready, &rd);
        expect(l, s, "GET", "/readyz", 503, "informers not synced: pods, configmaps", TEXT_PLAIN);
        rd.reason = NULL;
        expect(l, s, "GET", "/readyz", 503, "not ready", TEXT_PLAIN);
        /* Liveness does not depend on readiness. */
        expect(l, s, "GET", "/healthz", 200, "ok", NULL);
        rd.ready = true;
        expect(l, s, "GET", "/readyz", 200, "ok", TEXT_PLAIN);
        rd.ready = false;
        rd.reason = "lost leadership";
        expect(l, s, "GET", "/readyz", 503, "lost leadership", NULL);
        assert_int_equal(rd.asked, 4);

        http_server_set_ready(s, NULL, NULL);
        expect(l, s, "GET", "/readyz", 200, "ok", NULL);
        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* ---- metrics at scrape time ---- */

typedef struct Scrapes {
        Metric *scrapes;
        int fail;
} Scrapes;

static int collect_scrapes(MetricsRegistry *reg, void *userdata)
{
        Scrapes *sc = userdata;
        return sc->fail < 0 ? sc->fail : metrics_add(sc->scrapes, 1, NULL);
}

static void test_metrics_collected_per_scrape(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, NULL);
        Scrapes sc = {};

        assert_int_equal(metrics_counter(reg, &sc.scrapes, "ceo_scrapes_total", "Scrapes.", NULL), 0);
        assert_int_equal(metrics_register_collector(reg, collect_scrapes, &sc), 0);
        http_server_set_metrics(s, reg);

        expect(l, s, "GET", "/metrics", 200,
               "# HELP ceo_scrapes_total Scrapes.\n# TYPE ceo_scrapes_total counter\nceo_scrapes_total 1\n",
               METRICS_TYPE);
        expect(l, s, "GET", "/metrics", 200,
               "# HELP ceo_scrapes_total Scrapes.\n# TYPE ceo_scrapes_total counter\nceo_scrapes_total 2\n",
               METRICS_TYPE);
        sc.fail = -EIO;
        expect(l, s, "GET", "/metrics", 500, NULL, TEXT_PLAIN);
        sc.fail = 0;
        expect(l, s, "GET", "/metrics", 200, NULL, METRICS_TYPE);
        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* ---- load and bounds ---- */

static void test_many_requests(void **state)
{
        static const char *const paths[] = {"/healthz", "/readyz", "/metrics", "/missing"};
        static const long codes[] = {200, 200, 200, 404};
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        /* One client address here: its limit (8 by default) raised for the 48 at once below. */
        HttpServerConfig cfg = {.address = "127.0.0.1", .max_connections_per_ip = 64};
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, &cfg);
        Metric *m = NULL;

        assert_int_equal(metrics_counter(reg, &m, "ceo_requests_total", "Requests.", NULL), 0);
        http_server_set_metrics(s, reg);

        for (unsigned i = 0; i < 100; i++) {
                expect(l, s, "GET", paths[i % 4], codes[i % 4], NULL, NULL);
                assert_int_equal(metrics_add(m, 1, NULL), 0);
        }
        /* All on one kept-alive connection: answering GET before MHD has the
         * whole request would make MHD close after every response. */
        assert_int_equal(http_server_get_connections(s), 1);

        /* 48 at once, within the limits. */
        HttpRequest *reqs[48] = {};
        Call calls[48] = {};
        for (unsigned i = 0; i < ELEMENTSOF(reqs); i++) {
                _cleanup_free_ char *url = url_for(s, "http", paths[i % 4]);
                reqs[i] = http_request_new("GET", url);
                assert_non_null(reqs[i]);
                http_request_set_timeout(reqs[i], 5 * USEC_PER_SEC);
                assert_int_equal(loop_http_start(l, reqs[i], on_done, &calls[i]), 0);
        }
        assert_int_equal(loop_http_in_flight(l), ELEMENTSOF(reqs));
        for (unsigned i = 0; i < ELEMENTSOF(reqs); i++) {
                assert_int_equal(loop_run_until(l, &calls[i].done, DEADLINE), 0);
                assert_int_equal(calls[i].error, 0);
                assert_int_equal(http_request_get_status(reqs[i]), codes[i % 4]);
                reqs[i] = http_request_unref(reqs[i]);
        }
        expect(l, s, "GET", "/metrics", 200,
               "# HELP ceo_requests_total Requests.\n"
               "# TYPE ceo_requests_total counter\n"
               "ceo_requests_total 100\n",
               NULL);

        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

static void test_connection_limit(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        HttpServerConfig cfg = {.address = "127.0.0.1", .max_connections = 2};
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, &cfg);
        _cleanup_free_ char *url = url_for(s, "http", "/healthz");
        Raw a, b;
        int e = 0;

        /* Two idle clients take both slots... */
        raw_open(l, s, &a);
        raw_open(l, s, &b);
        wait_connections(l, s, 2);

        /* ...so a third is not served while they stay. */
        _cleanup_(http_request_unrefp) HttpRequest *r = http_request_new("GET", url);
        Call c = {};
        http_request_set_timeout(r, USEC_PER_SEC);
        assert_int_equal(loop_http_start(l, r, on_done, &c), 0);
        assert_int_equal(loop_run_until(l, &c.done, DEADLINE), 0);
        assert_true(c.error < 0);
        assert_int_equal(http_server_get_connections(s), 2);

        raw_close(&a);
        raw_close(&b);
        wait_connections(l, s, 0);
        _cleanup_(http_request_unrefp) HttpRequest *ok = fetch(l, "GET", url, NULL, &e);
        assert_int_equal(e, 0);
        assert_int_equal(http_request_get_status(ok), 200);

        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* An idle connection is closed after the configured timeout: proves the
 * sd-event timer armed from MHD_get_timeout() drives MHD when no I/O does. */
static void test_idle_timeout(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        HttpServerConfig cfg = {.address = "127.0.0.1", .connection_timeout = USEC_PER_SEC};
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, &cfg);
        Raw raw;

        raw_open(l, s, &raw);
        usec_t start = now_usec(CLOCK_MONOTONIC);
        wait_connections(l, s, 1);
        assert_int_equal(loop_run_until(l, &raw.eof, DEADLINE), 0);
        usec_t took = raw.eof_at - start;
        assert_true(took >= 900 * USEC_PER_MSEC);
        assert_true(took < 4 * USEC_PER_SEC);
        assert_int_equal(raw.in.len, 0);
        raw_close(&raw);
        wait_connections(l, s, 0);

        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* ---- idle and slow clients (review H3, M8) ---- */

static void make_cert(char **ret_cert, char **ret_key);

#define ATTACK_IDLE 200
#define ATTACK_SLOW 50
#define ATTACK_TICK (100 * USEC_PER_MSEC)

/* One client address (127.0.0.2) that keeps ATTACK_IDLE connections open doing nothing and
 * ATTACK_SLOW trickling a request one byte per tick (partial headers; for TLS a ClientHello
 * record that never ends), and opens them again whenever the server closes them. */
typedef struct Attacker {
        uint16_t port;
        bool tls;
        int fds[ATTACK_IDLE + ATTACK_SLOW];
        size_t sent[ATTACK_IDLE + ATTACK_SLOW];
        unsigned ticks, reconnects, max_connections;
        HttpServer *server;
        sd_event_source *timer;
} Attacker;

static int attacker_connect(uint16_t port)
{
        struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000002)};
        struct sockaddr_in dst = {
                .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &src, sizeof src), 0);
        if (connect(fd, (struct sockaddr *) &dst, sizeof dst) < 0)
                assert_int_equal(errno, EINPROGRESS);
        return fd;
}

static bool attacker_closed(int fd)
{
        char b;
        ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static int on_attack_tick(sd_event_source *src, uint64_t usec, void *userdata)
{
        static const char http_head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
        static const char tls_head[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
        Attacker *a = userdata;

        a->ticks++;
        a->max_connections = MAX(a->max_connections, http_server_get_connections(a->server));
        for (size_t i = 0; i < ELEMENTSOF(a->fds); i++) {
                /* Closed by the server: opened again (every 10th tick, not to spin). */
                if (a->ticks % 10 == 0 && attacker_closed(a->fds[i])) {
                        (void) close(a->fds[i]);
                        a->fds[i] = attacker_connect(a->port);
                        a->sent[i] = 0;
                        a->reconnects++;
                }
                if (i < ATTACK_IDLE)
                        continue;
                const char *head = a->tls ? tls_head : http_head;
                size_t hlen = a->tls ? sizeof tls_head - 1 : sizeof http_head - 1;
                char c = a->sent[i] < hlen ? head[a->sent[i]] : 'a';
                if (send(a->fds[i], &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
                        a->sent[i]++;
        }
        (void) sd_event_source_set_time(src, usec + ATTACK_TICK);
        return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

static void attacker_start(Loop *l, HttpServer *s, bool tls, Attacker *a)
{
        *a = (Attacker){.port = http_server_get_port(s), .tls = tls, .server = s};
        for (size_t i = 0; i < ELEMENTSOF(a->fds); i++)
                a->fds[i] = attacker_connect(a->port);
        assert_int_equal(sd_event_add_time_relative(loop_get_event(l), &a->timer, CLOCK_MONOTONIC, 0, 1,
                                                    on_attack_tick, a),
                         0);
}

static void attacker_stop(Attacker *a)
{
        a->timer = sd_event_source_disable_unref(a->timer);
        for (size_t i = 0; i < ELEMENTSOF(a->fds); i++)
                (void) close(a->fds[i]);
}

/* While one address holds ATTACK_IDLE idle and ATTACK_SLOW slow connections (and opens them
 * again as they are closed), a probe from another loopback address gets 200 within 1 s,
 * every time, for longer than the request timeout (so the slow ones are cut and come back).
 * Before the per-address limit and the request deadline, the 64-connection cap made the
 * probe wait in the accept queue until the server dropped idle connections (30 s) and
 * forever behind slow ones. */
static void probe_beside_attacker(bool tls)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_free_ char *cert = NULL, *key = NULL;
        HttpServerConfig cfg = {.address = "127.0.0.1"}; /* the limits as shipped */
        Attacker a;
        unsigned probes = 0;
        bool never = false;

        if (tls) {
                make_cert(&cert, &key);
                cfg.tls_cert_pem = cert;
                cfg.tls_key_pem = key;
        }
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, &cfg);
        HttpTls client_tls = {.ca_pem = cert};
        _cleanup_free_ char *url = url_for(s, tls ? "https" : "http", "/healthz");
        attacker_start(l, s, tls, &a);
        (void) loop_run_until(l, &never, 500 * USEC_PER_MSEC); /* the attack in place first */

        for (usec_t end = now_usec(CLOCK_MONOTONIC) + 11 * USEC_PER_SEC; now_usec(CLOCK_MONOTONIC) < end;) {
                _cleanup_(http_request_unrefp) HttpRequest *r = http_request_new("GET", url);
                Call c = {};
                assert_non_null(r);
                http_request_set_timeout(r, USEC_PER_SEC);
                if (tls)
                        assert_int_equal(http_request_set_tls(r, &client_tls), 0);
                usec_t t0 = now_usec(CLOCK_MONOTONIC);
                assert_int_equal(loop_http_start(l, r, on_done, &c), 0);
                assert_int_equal(loop_run_until(l, &c.done, DEADLINE), 0);
                usec_t took = now_usec(CLOCK_MONOTONIC) - t0;
                if (c.error < 0 || http_request_get_status(r) != 200 || took >= USEC_PER_SEC)
                        fail_msg("%s probe %u beside %u idle and %u slow connections: error %d, status %ld, "
                                 "%" PRIu64 " ms (server holds %u connections)",
                                 tls ? "HTTPS" : "HTTP", probes, ATTACK_IDLE, ATTACK_SLOW, c.error,
                                 http_request_get_status(r), took / USEC_PER_MSEC,
                                 http_server_get_connections(s));
                probes++;
                (void) loop_run_until(l, &never, 200 * USEC_PER_MSEC);
        }
        /* The attack reached the server (it held a full share) and was cut back to it. */
        assert_true(probes >= 30);
        assert_true(a.max_connections >= 8);
        assert_true(a.max_connections <= 8 + 2);
        assert_true(a.reconnects > 0);
        attacker_stop(&a);
        wait_connections(l, s, 0);
        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

static void test_probe_beside_idle_and_slow_clients(void **state)
{
        probe_beside_attacker(false);
}

static void test_probe_beside_idle_and_slow_tls_clients(void **state)
{
        if (!http_server_tls_supported())
                fail_msg("libmicrohttpd was built without TLS (GnuTLS): install Debian's libmicrohttpd12 "
                         "(hack/install-deps.sh), which has it");
        probe_beside_attacker(true);
}

/* A slow request is cut at the request timeout even though it never goes idle. */
static void test_request_timeout(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        HttpServerConfig cfg = {.address = "127.0.0.1", .request_timeout = USEC_PER_SEC};
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, &cfg);
        Raw raw;
        bool never = false;

        raw_open(l, s, &raw);
        usec_t start = now_usec(CLOCK_MONOTONIC);
        wait_connections(l, s, 1);
        static const char req[] = "GET /healthz HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        for (size_t i = 0; i < sizeof req - 1 && !raw.eof; i++) {
                (void) send(raw.fd, req + i, 1, MSG_NOSIGNAL);
                (void) loop_run_until(l, &never, 100 * USEC_PER_MSEC);
        }
        assert_int_equal(loop_run_until(l, &raw.eof, DEADLINE), 0);
        usec_t took = raw.eof_at - start;
        assert_true(took >= 900 * USEC_PER_MSEC);
        assert_true(took < 3 * USEC_PER_SEC);
        raw_close(&raw);
        wait_connections(l, s, 0);
        /* A whole request on a kept-alive connection after that is served as before. */
        expect(l, s, "GET", "/healthz", 200, "ok", TEXT_PLAIN);
        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* ---- lifecycle and configuration ---- */

static void test_free_is_clean(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        HttpServer *s = server_new(l, NULL);
        _cleanup_free_ char *url = url_for(s, "http", "/healthz");
        int e = 0;

        _cleanup_(http_request_unrefp) HttpRequest *r = fetch(l, "GET", url, NULL, &e);
        assert_int_equal(e, 0);
        /* A client connected but idle when the server goes away. */
        Raw raw;
        raw_open(l, s, &raw);
        wait_connections(l, s, 2); /* curl keeps its connection alive too */

        assert_null(http_server_free(s));
        assert_int_equal(loop_http_in_flight(l), 0);
        /* The server closed its connections... */
        assert_int_equal(loop_run_until(l, &raw.eof, DEADLINE), 0);
        raw_close(&raw);
        /* ...and its listening socket, and left no source behind that fires. */
        _cleanup_(http_request_unrefp) HttpRequest *after = fetch(l, "GET", url, NULL, &e);
        assert_int_equal(e, -ECONNREFUSED);
        assert_true(sd_event_run(loop_get_event(l), 50 * USEC_PER_MSEC) >= 0);
        assert_int_equal(loop_http_in_flight(l), 0);
        assert_null(http_server_free(NULL));
}

static void test_config_errors(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        HttpServer *s = NULL;

        assert_int_equal(http_server_new(loop_get_event(l), &(HttpServerConfig){.address = "localhost"}, &s),
                         -EINVAL);
        assert_int_equal(
                http_server_new(loop_get_event(l), &(HttpServerConfig){.address = "127.0.0.1:80"}, &s),
                -EINVAL);
        assert_int_equal(http_server_new(loop_get_event(l),
                                         &(HttpServerConfig){.address = "127.0.0.1", .tls_cert_pem = "x"},
                                         &s),
                         -EINVAL);
        assert_int_equal(http_server_new(NULL, &(HttpServerConfig){}, &s), -EINVAL);
        assert_null(s);

        /* The same port twice. */
        _cleanup_(http_server_freep) HttpServer *first = server_new(l, NULL);
        HttpServerConfig same = {.address = "127.0.0.1", .port = http_server_get_port(first)};
        assert_int_equal(http_server_new(loop_get_event(l), &same, &s), -EADDRINUSE);
        assert_null(s);

        /* An explicit port is the one bound. */
        uint16_t port = http_server_get_port(first);
        first = http_server_free(first);
        _cleanup_(http_server_freep) HttpServer *again = server_new(l, &same);
        assert_int_equal(http_server_get_port(again), port);
        expect(l, again, "GET", "/healthz", 200, "ok", NULL);
}

static void test_ipv6_loopback(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(http_server_freep) HttpServer *s = NULL;
        int e = 0;

        int r = http_server_new(loop_get_event(l), &(HttpServerConfig){.address = "::1"}, &s);
        if (r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT) {
                print_message("IPv6 loopback (::1) is not configured on this host: IPv6 part not run\n");
                return;
        }
        assert_int_equal(r, 0);
        _cleanup_free_ char *url = strdup_printf("http://[::1]:%u/healthz", http_server_get_port(s));
        _cleanup_(http_request_unrefp) HttpRequest *req = fetch(l, "GET", url, NULL, &e);
        assert_int_equal(e, 0);
        assert_int_equal(http_request_get_status(req), 200);
        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* ---- TLS ---- */

/* A self-signed P-256 certificate for 127.0.0.1 named `cn`, made in memory. */
static void make_named_cert(const char *cn, char **ret_cert, char **ret_key)
{
        EVP_PKEY *key = EVP_EC_gen("P-256");
        X509 *x = X509_new();
        BIO *bc = BIO_new(BIO_s_mem()), *bk = BIO_new(BIO_s_mem());
        X509V3_CTX ctx;
        char *p = NULL;
        long n;

        assert_non_null(key);
        assert_non_null(x);
        assert_true(X509_set_version(x, 2));
        assert_true(ASN1_INTEGER_set(X509_get_serialNumber(x), 1));
        assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
        assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 3600));
        assert_true(X509_set_pubkey(x, key));
        X509_NAME *name = X509_get_subject_name(x);
        assert_true(
                X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *) cn, -1, -1, 0));
        assert_true(X509_set_issuer_name(x, name));
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
        static const struct {
                int nid;
                const char *value;
        } exts[] = {
                {NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
                {NID_basic_constraints, "critical,CA:TRUE"},
                {NID_key_usage, "critical,digitalSignature,keyCertSign"},
                {NID_ext_key_usage, "serverAuth"},
        };
        for (size_t i = 0; i < ELEMENTSOF(exts); i++) {
                X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, exts[i].nid, exts[i].value);
                assert_non_null(ext);
                assert_true(X509_add_ext(x, ext, -1));
                X509_EXTENSION_free(ext);
        }
        assert_true(X509_sign(x, key, EVP_sha256()) > 0);

        assert_true(PEM_write_bio_X509(bc, x));
        assert_true(PEM_write_bio_PrivateKey(bk, key, NULL, NULL, 0, NULL, NULL));
        n = BIO_get_mem_data(bc, &p);
        *ret_cert = strndup(p, (size_t) n);
        n = BIO_get_mem_data(bk, &p);
        *ret_key = strndup(p, (size_t) n);
        assert_non_null(*ret_cert);
        assert_non_null(*ret_key);
        BIO_free(bc);
        BIO_free(bk);
        X509_free(x);
        EVP_PKEY_free(key);
}

static void make_cert(char **ret_cert, char **ret_key)
{
        make_named_cert("metrics", ret_cert, ret_key);
}

static void test_tls(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_free_ char *cert = NULL, *key = NULL;
        HttpServer *bad = NULL;
        int e = 0;

        if (!http_server_tls_supported())
                fail_msg("libmicrohttpd was built without TLS (GnuTLS): install Debian's libmicrohttpd12 "
                         "(hack/install-deps.sh), which has it");

        make_cert(&cert, &key);
        HttpServerConfig cfg = {.address = "127.0.0.1", .tls_cert_pem = cert, .tls_key_pem = key};
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, &cfg);
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = metrics_registry_new();
        Metric *m = NULL;
        assert_int_equal(metrics_gauge(reg, &m, "ceo_up", "Up.", NULL), 0);
        assert_int_equal(metrics_set(m, 1, NULL), 0);
        http_server_set_metrics(s, reg);

        HttpTls tls = {.ca_pem = cert};
        _cleanup_free_ char *url = url_for(s, "https", "/metrics");
        for (unsigned i = 0; i < 20; i++) {
                _cleanup_(http_request_unrefp) HttpRequest *r = fetch(l, "GET", url, &tls, &e);
                assert_int_equal(e, 0);
                assert_int_equal(http_request_get_status(r), 200);
                assert_string_equal(http_request_get_body(r, NULL),
                                    "# HELP ceo_up Up.\n# TYPE ceo_up gauge\nceo_up 1\n");
                assert_string_equal(strempty(http_request_get_header(r, "Content-Type")), METRICS_TYPE);
        }

        /* Shared settings (a client's, http_tls_share): every request takes a reference,
         * not a copy, and keeps it past the owner's (ASan catches a use after free). */
        HttpTls *shared = http_tls_share(&tls);
        assert_non_null(shared);
        HttpRequest *held[3];
        for (size_t i = 0; i < ELEMENTSOF(held); i++) {
                held[i] = fetch(l, "GET", url, shared, &e);
                assert_int_equal(e, 0);
                assert_int_equal(http_request_get_status(held[i]), 200);
        }
        assert_int_equal(shared->n_ref, 1 + ELEMENTSOF(held));
        assert_null(http_tls_free(shared)); /* the owner's reference: the requests still hold theirs */
        held[0] = http_request_unref(held[0]);
        _cleanup_(http_request_unrefp) HttpRequest *again = fetch(l, "GET", url, shared, &e);
        assert_int_equal(e, 0);
        for (size_t i = 1; i < ELEMENTSOF(held); i++)
                held[i] = http_request_unref(held[i]);
        again = http_request_unref(again); /* the last reference: freed with it */

        /* A client that does not trust the certificate fails the handshake. */
        HttpTls other = {.ca_pem = NULL};
        _cleanup_(http_request_unrefp) HttpRequest *untrusted = fetch(l, "GET", url, &other, &e);
        assert_int_equal(e, -EPROTO);
        /* Plain HTTP on the TLS port gets no HTTP answer. */
        _cleanup_free_ char *plain = url_for(s, "http", "/healthz");
        _cleanup_(http_request_unrefp) HttpRequest *p = fetch(l, "GET", plain, NULL, &e);
        assert_true(e < 0 || http_request_get_status(p) != 200);
        /* The server still serves TLS clients afterwards. */
        _cleanup_(http_request_unrefp) HttpRequest *r = fetch(l, "GET", url, &tls, &e);
        assert_int_equal(e, 0);
        assert_int_equal(http_request_get_status(r), 200);

        /* Material MHD cannot load makes the start fail. */
        HttpServerConfig garbage = {
                .address = "127.0.0.1", .tls_cert_pem = "not a cert", .tls_key_pem = key};
        assert_int_equal(http_server_new(loop_get_event(l), &garbage, &bad), -EPROTO);
        garbage =
                (HttpServerConfig){.address = "127.0.0.1", .tls_cert_pem = cert, .tls_key_pem = "not a key"};
        assert_int_equal(http_server_new(loop_get_event(l), &garbage, &bad), -EPROTO);
        assert_null(bad);

        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* ---- only the given CA is trusted ---- */

typedef struct SystemCa {
        char dir[64];
        char file[128];
        char bundle[128];
        char *capath; /* libcurl's built-in CA directory, with dir bind-mounted over it */
        bool mounted;
} SystemCa;

static int system_ca_teardown(void **state)
{
        SystemCa *sc = *state;

        if (!sc)
                return 0;
        if (sc->mounted)
                (void) umount2(sc->capath, MNT_DETACH);
        if (sc->file[0])
                (void) unlink(sc->file);
        if (sc->bundle[0])
                (void) unlink(sc->bundle);
        if (sc->dir[0])
                (void) rmdir(sc->dir);
        free(sc->capath);
        free(sc);
        *state = NULL;
        return 0;
}

typedef struct Child {
        pid_t pid;
        int status;
        bool done;
} Child;

static int on_child_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
        Child *c = userdata;

        if (waitpid(c->pid, &c->status, WNOHANG) == c->pid) {
                c->done = true;
                return sd_event_source_set_enabled(src, SD_EVENT_OFF);
        }
        (void) sd_event_source_set_time(src, usec + 10 * USEC_PER_MSEC);
        return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

/* An S3 HEAD to the test server with `ca_pem` as the store's CA bundle. The
 * S3 client waits for its answer on a loop of its own, so it runs in a child
 * while this loop serves; returns 1
 * if TLS refused the server, 0 if the request got past TLS (the server
 * answers 404 to S3 paths). */
static int s3_head_tls_outcome(Loop *l, const char *url, const char *dir, const char *ca_pem)
{
        _cleanup_free_ char *ca_file = strdup_printf("%s/s3-ca.pem", dir);
        _cleanup_free_ char *endpoint = strndup(url, strlen(url) - strlen("/healthz"));
        _cleanup_(sd_event_source_unrefp) sd_event_source *src = NULL;

        assert_non_null(ca_file);
        assert_non_null(endpoint);
        assert_int_equal(write_file_atomic(ca_file, ca_pem, strlen(ca_pem), 0644), 0);
        Child c = {.pid = fork()};
        assert_true(c.pid >= 0);
        if (c.pid == 0) {
                S3Store st = {.endpoint = endpoint,
                              .region = (char *) "us-east-1",
                              .bucket = (char *) "bkt",
                              .prefix = (char *) "",
                              .access_key = (char *) "a",
                              .secret_key = (char *) "s",
                              .ca_file = ca_file,
                              .dir = (char *) dir,
                              .path_style = true,
                              .loop = loop_new()};
                S3Object o = {};
                char *err = NULL;
                int r = s3_head(&st, "bkt/k", &o, &err);
                _exit(r < 0 && err && strstr(err, "certificate") ? 1 : r < 0 && err ? 0 : 2);
        }
        assert_true(sd_event_add_time_relative(loop_get_event(l), &src, CLOCK_MONOTONIC, 0, 0, on_child_poll,
                                               &c) >= 0);
        assert_int_equal(loop_run_until(l, &c.done, 30 * USEC_PER_SEC), 0);
        (void) unlink(ca_file);
        assert_true(WIFEXITED(c.status));
        return WEXITSTATUS(c.status);
}

/* A server whose certificate a "system" CA signed: the test's own
 * certificate placed, in a mount namespace of this process only, over
 * libcurl's built-in CA directory. A request with no CA of its own trusts
 * it (the directory is really searched); a request given a CA must trust
 * that CA alone, as client-go's CAData and etcdctl's --cacert do, or any
 * public CA could vouch for an API server or an etcd member. */
static void test_tls_trusts_only_its_ca(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = NULL;
        _cleanup_free_ char *cert = NULL, *key = NULL, *other = NULL, *other_key = NULL, *url = NULL;
        SystemCa *sc = calloc(1, sizeof *sc);
        char *capath = NULL, *cainfo = NULL;
        int e = 0;

        assert_non_null(sc);
        *state = sc;
        CURL *probe = curl_easy_init();
        assert_non_null(probe);
        if (curl_easy_getinfo(probe, CURLINFO_CAPATH, &capath) == CURLE_OK && capath)
                sc->capath = strdup(capath);
        _cleanup_free_ char *bundle_name = NULL;
        if (curl_easy_getinfo(probe, CURLINFO_CAINFO, &cainfo) == CURLE_OK && cainfo && sc->capath &&
            startswith(cainfo, sc->capath) && cainfo[strlen(sc->capath)] == '/')
                bundle_name = strdup(cainfo + strlen(sc->capath) + 1);
        curl_easy_cleanup(probe);
        if (!sc->capath) {
                print_message("skipped: this libcurl has no built-in CA directory, so no system CA can "
                              "be searched beside a given one\n");
                skip();
        }
        if (unshare(CLONE_NEWNS) < 0) {
                print_message("skipped: a private mount namespace needs root (unshare: %s)\n",
                              strerror(errno));
                skip();
        }
        assert_int_equal(mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);

        make_cert(&cert, &key);
        /* Another name: an issuer looked up by name must not find the given CA. */
        make_named_cert("someone else", &other, &other_key);
        BIO *bio = BIO_new_mem_buf(cert, -1);
        X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        assert_non_null(x);
        int ok = 0;
        unsigned long hash = X509_NAME_hash_ex(X509_get_subject_name(x), NULL, NULL, &ok);
        assert_true(ok);
        X509_free(x);
        BIO_free(bio);
        strcpy(sc->dir, "/tmp/test-httpserver-ca.XXXXXX");
        assert_non_null(mkdtemp(sc->dir));
        (void) snprintf(sc->file, sizeof sc->file, "%s/%08lx.0", sc->dir, hash);
        assert_int_equal(write_file_atomic(sc->file, cert, strlen(cert), 0644), 0);
        /* Debian's CA bundle lives in that directory too: the mount would hide
         * it and a request without a CA would fail to load it. It gets the
         * other certificate, so that what vouches below is the hashed file. */
        if (bundle_name) {
                (void) snprintf(sc->bundle, sizeof sc->bundle, "%s/%s", sc->dir, bundle_name);
                assert_int_equal(write_file_atomic(sc->bundle, other, strlen(other), 0644), 0);
        }
        assert_int_equal(mount(sc->dir, sc->capath, NULL, MS_BIND, NULL), 0);
        sc->mounted = true;

        l = loop_new();
        HttpServerConfig cfg = {.address = "127.0.0.1", .tls_cert_pem = cert, .tls_key_pem = key};
        _cleanup_(http_server_freep) HttpServer *s = server_new(l, &cfg);
        url = url_for(s, "https", "/healthz");

        /* The system's trust: the directory vouches for the server. */
        _cleanup_(http_request_unrefp) HttpRequest *sys = fetch(l, "GET", url, NULL, &e);
        assert_int_equal(e, 0);
        /* The server's own CA given: trusted. */
        HttpTls tls = {.ca_pem = cert};
        _cleanup_(http_request_unrefp) HttpRequest *own = fetch(l, "GET", url, &tls, &e);
        assert_int_equal(e, 0);
        /* Another CA given: the directory must not vouch any more. */
        HttpTls pinned = {.ca_pem = other};
        _cleanup_(http_request_unrefp) HttpRequest *foreign = fetch(l, "GET", url, &pinned, &e);
        assert_int_equal(e, -EPROTO);

        /* The S3 client's CA bundle (backups to a private endpoint) likewise. */
        assert_int_equal(s3_head_tls_outcome(l, url, sc->dir, cert), 0);
        assert_int_equal(s3_head_tls_outcome(l, url, sc->dir, other), 1);

        s = http_server_free(s);
        assert_int_equal(loop_http_in_flight(l), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_routes),
                cmocka_unit_test(test_no_metrics_registry),
                cmocka_unit_test(test_readiness_flips),
                cmocka_unit_test(test_metrics_collected_per_scrape),
                cmocka_unit_test(test_many_requests),
                cmocka_unit_test(test_connection_limit),
                cmocka_unit_test(test_idle_timeout),
                cmocka_unit_test(test_request_timeout),
                cmocka_unit_test(test_probe_beside_idle_and_slow_clients),
                cmocka_unit_test(test_probe_beside_idle_and_slow_tls_clients),
                cmocka_unit_test(test_free_is_clean),
                cmocka_unit_test(test_config_errors),
                cmocka_unit_test(test_ipv6_loopback),
                cmocka_unit_test(test_tls),
                /* Last: it moves this process into a mount namespace of its own. */
                cmocka_unit_test_teardown(test_tls_trusts_only_its_ca, system_ca_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
