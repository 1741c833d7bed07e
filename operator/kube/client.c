/* Kubernetes REST client: request building, auth headers, retries, Status
 * decoding and newline-delimited JSON streams. */
#include <strings.h>

#include "base/json.h"
#include "base/log.h"
#include "client.h"

#define MAX_RETRIES_RETRY_AFTER 10
#define MAX_RETRIES_TRANSPORT   3
#define MAX_STREAM_LINE         (16u << 20)
#define USER_AGENT              "User-Agent: cluster-etcd-operator/" CEO_VERSION " (linux/amd64)"

struct KubeClient {
        Loop *loop;
        KubeConfig *config;
        HttpTls *tls; /* config->tls, shared by every request (http_tls_share) */
        usec_t timeout;
        KubeCall *calls; /* in flight, for cancellation when the client goes */
        uint64_t n_requests;
        uint64_t n_retries;
        bool closing;
        bool http2;
};

struct KubeCall {
        KubeClient *client;
        KubeCall *prev, *next;
        char *method;
        char *path;
        char *body;
        char *content_type;
        usec_t timeout;
        KubeCallback cb;
        KubeStreamFunc on_line;
        void *userdata;
        HttpRequest *req;
        sd_event_source *retry_timer;
        unsigned retries;
        Buf line;
};

KubeClient *kube_client_new(Loop *loop, KubeConfig *config)
{
        KubeClient *c = calloc(1, sizeof *c);
        if (!c)
                return NULL;
        c->tls = http_tls_share(config ? &config->tls : NULL);
        if (!c->tls)
                return mfree(c);
        c->loop = loop_ref(loop);
        c->config = config;
        c->timeout = 30 * USEC_PER_SEC;
        return c;
}

static void call_free(KubeCall *call)
{
        KubeClient *c = call->client;
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
        call->retry_timer = sd_event_source_disable_unref(call->retry_timer);
        free(call->method);
        free(call->path);
        erase_and_free(call->body); /* a Secret's keys, a token review: review L6 */
        free(call->content_type);
        buf_free(&call->line);
        free(call);
}

static void call_finish(KubeCall *call, const KubeResponse *resp);

KubeClient *kube_client_free(KubeClient *c)
{
        if (!c)
                return NULL;
        /* Like closing a libuv handle: every call still pending completes with
         * -ECANCELED so its owner can release what it passed as userdata. */
        c->closing = true;
        while (c->calls) {
                KubeStatus st = {};
                KubeResponse resp = {.error = -ECANCELED, .status = &st};
                call_finish(c->calls, &resp);
        }
        kube_config_free(c->config);
        http_tls_free(c->tls);
        loop_unref(c->loop);
        return mfree(c);
}

Loop *kube_client_get_loop(KubeClient *c)
{
        return c->loop;
}

const KubeConfig *kube_client_get_config(KubeClient *c)
{
        return c->config;
}

void kube_client_set_timeout(KubeClient *c, usec_t timeout)
{
        c->timeout = timeout;
}

void kube_client_set_http2(KubeClient *c, bool http2)
{
        c->http2 = http2;
}

void kube_client_get_counters(KubeClient *c, uint64_t *requests, uint64_t *retries)
{
        if (requests)
                *requests = c->n_requests;
        if (retries)
                *retries = c->n_retries;
}

/* ---- Status ---- */

void kube_status_done(KubeStatus *s)
{
        s->reason = mfree(s->reason);
        s->message = mfree(s->message);
}

int kube_status_parse(const cJSON *body, KubeStatus *ret)
{
        int64_t code = 0, ra = 0;

        assert_return(ret, -EINVAL);
        if (!streq_ptr(json_get_string(body, "kind"), "Status"))
                return -EBADMSG;
        if (json_get_int64(body, "code", &code) >= 0)
                ret->code = (long) code;
        const char *reason = json_get_string(body, "reason");
        const char *message = json_get_string(body, "message");
        free(ret->reason);
        free(ret->message);
        ret->reason = reason ? strdup(reason) : NULL;
        ret->message = message ? strdup(message) : NULL;
        if (json_get_int64(body, "details.retryAfterSeconds", &ra) >= 0 && ra > 0 && ra < 3600)
                ret->retry_after = (unsigned) ra;
        return 0;
}

int kube_status_to_errno(long code, const char *reason)
{
        switch (code) {
        case 400:
                return -EBADMSG;
        case 401:
                return -EACCES;
        case 403:
                return -EPERM;
        case 404:
                return -ENOENT;
        case 405:
                return -EOPNOTSUPP;
        case 409:
                return streq_ptr(reason, "AlreadyExists") ? -EEXIST : -ESTALE;
        case 410:
                return KUBE_ERR_EXPIRED;
        case 415:
                return -EPROTONOSUPPORT;
        case 422:
                return -EINVAL;
        case 429:
                return -EBUSY;
        case 503:
                return -EAGAIN;
        case 504:
                return -ETIMEDOUT;
        default:
                if (code >= 500)
                        return -EREMOTEIO;
                return -EIO;
        }
}

const char *kube_strerror(int error)
{
        switch (error) {
        case -EBADMSG:
                return "bad request (400)";
        case -EACCES:
                return "unauthorized (401)";
        case -EPERM:
                return "forbidden (403)";
        case -ENOENT:
                return "not found (404)";
        case -EEXIST:
                return "already exists (409)";
        case -ESTALE:
                return "conflict: the object was modified (409)";
        case KUBE_ERR_EXPIRED:
                return "resource version expired (410)";
        case -EINVAL:
                return "invalid (422)";
        case -EBUSY:
                return "too many requests (429)";
        case -EAGAIN:
                return "service unavailable (503)";
        case -ETIMEDOUT:
                return "timed out";
        case -EREMOTEIO:
                return "server error (5xx)";
        default:
                return strerror(-error);
        }
}

/* ---- calls ---- */

static int call_send(KubeCall *call);

static void call_finish(KubeCall *call, const KubeResponse *resp)
{
        KubeCallback cb = call->cb;
        void *userdata = call->userdata;
        KubeClient *c = call->client;

        call_free(call);
        if (cb)
                cb(c, resp, userdata);
}

static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        KubeCall *call = userdata;
        int r;

        (void) s;
        (void) usec;
        call->retry_timer = sd_event_source_disable_unref(call->retry_timer);
        r = call_send(call);
        if (r < 0) {
                KubeResponse resp = {.error = r};
                call_finish(call, &resp);
        }
        return 0;
}

static bool schedule_retry(KubeCall *call, usec_t delay)
{
        int r = sd_event_add_time_relative(loop_get_event(call->client->loop), &call->retry_timer,
                                           CLOCK_MONOTONIC, delay, USEC_PER_MSEC, on_retry_timer, call);
        if (r < 0)
                return false;
        call->retries++;
        call->client->n_retries++;
        return true;
}

static unsigned parse_retry_after(HttpRequest *req, const KubeStatus *st)
{
        const char *h = http_request_get_header(req, "Retry-After");
        if (h) {
                char *end = NULL;
                unsigned long v = strtoul(h, &end, 10);
                if (end != h && v < 3600)
                        return (unsigned) MAX(v, 1UL);
        }
        return st->retry_after;
}

static void on_http_done(HttpRequest *req, int error, void *userdata)
{
        KubeCall *call = userdata;
        _cleanup_(kube_status_done) KubeStatus st = {};
        _cleanup_(cJSON_Deletep) cJSON *body = NULL;
        long code = http_request_get_status(req);
        size_t len = 0;
        const char *data = http_request_get_body(req, &len);
        bool stream = call->on_line != NULL;

        call->req = http_request_unref(call->req);

        const char *warn = http_request_get_header(req, "Warning");
        if (warn)
                log_debug("%s %s: server warning: %s", call->method, call->path, warn);

        if (error < 0) {
                /* A name that did not resolve: the resolver's words ("cannot resolve NAME: Domain
                 * name not found") go where callers look for the server's. */
                const char *why = error == -EHOSTUNREACH ? http_request_get_error(req) : "";
                if (streq(call->method, "GET") && !stream && call->retries < MAX_RETRIES_TRANSPORT &&
                    error != -EPROTO && schedule_retry(call, USEC_PER_SEC)) {
                        log_debug("%s %s: %s, retrying in 1 s", call->method, call->path,
                                  *why ? why : strerror(-error));
                        return;
                }
                st.code = 0;
                if (*why && !(st.message = strdup(why)))
                        error = -ENOMEM;
                KubeResponse resp = {.error = error, .http_code = code, .status = &st};
                call_finish(call, &resp);
                return;
        }

        if (code >= 200 && code < 300) {
                int r = 0;
                if (stream) {
                        /* A last line without its newline still counts. */
                        if (call->line.len > 0) {
                                cJSON *j = NULL;
                                r = json_parse(call->line.data, call->line.len, &j);
                                if (r >= 0) {
                                        r = call->on_line(call->client, j, call->userdata);
                                        cJSON_Delete(j);
                                }
                        }
                        KubeResponse resp = {.error = MIN(r, 0), .http_code = code, .status = &st};
                        call_finish(call, &resp);
                        return;
                }
                /* The body is the callback's until it returns (it copies what it keeps; the
                 * informer freezes the listed objects): the scratch arena (json.h). */
                json_scratch_begin();
                if (len > 0)
                        r = json_parse(data, len, &body);
                json_scratch_stop();
                KubeResponse resp = {.error = MIN(r, 0), .http_code = code, .body = body, .status = &st};
                call_finish(call, &resp);
                cJSON_Delete(body);
                body = NULL; /* before the reset, which takes its nodes back */
                json_scratch_reset();
                return;
        }

        /* Error: decode the Status if there is one; otherwise synthesise it. */
        if (len > 0 && json_parse(data, len, &body) >= 0)
                (void) kube_status_parse(body, &st);
        if (st.code == 0)
                st.code = code;
        int e = kube_status_to_errno(code, st.reason);
        unsigned ra = parse_retry_after(req, &st);
        /* A write is sent again by itself only when the server said it did nothing (429, 503);
         * after another 5xx (a 504 Timeout "may still be processing the request") its outcome is
         * unknown, and the caller finds out what happened before it writes again. */
        bool not_done = code == 429 || code == 503 || (code >= 500 && streq(call->method, "GET"));
        if (not_done && ra > 0 && call->retries < MAX_RETRIES_RETRY_AFTER &&
            schedule_retry(call, ra * USEC_PER_SEC)) {
                log_debug("%s %s: HTTP %ld, retrying after %u s", call->method, call->path, code, ra);
                return;
        }
        KubeResponse resp = {.error = e, .http_code = code, .status = &st};
        call_finish(call, &resp);
}

static int on_stream_data(HttpRequest *req, const char *data, size_t n, void *userdata)
{
        KubeCall *call = userdata;
        int r;

        (void) req;
        for (;;) {
                const char *nl = memchr(data, '\n', n);
                size_t take = nl ? (size_t) (nl - data) : n;
                if (!nl) {
                        if (take == 0 && call->line.len == 0) {
                                /* The chunk ended with a whole line: nothing is pending, and
                                 * a watch at rest keeps no line buffer (kept, each sized for its
                                 * largest event, they took 0.1 MB at rest). Within a burst the
                                 * buffer stays for the next line cut across chunks. */
                                buf_free(&call->line);
                                return 0;
                        }
                        return buf_append(&call->line, data, take); /* the rest comes later */
                }
                /* A whole line within this chunk is parsed where it is; one begun in an
                 * earlier chunk is completed in the line buffer first. */
                const char *line = data;
                size_t len = take;
                if (call->line.len > 0) {
                        r = buf_append(&call->line, data, take);
                        if (r < 0)
                                return r;
                        line = call->line.data;
                        len = call->line.len;
                }
                if (len > 0) {
                        cJSON *j = NULL;
                        /* The event's tree lives until on_line has taken what it keeps (the
                         * informer freezes a copy): the scratch arena (json.h). */
                        json_scratch_begin();
                        r = json_parse(line, len, &j);
                        json_scratch_stop();
                        buf_reset(&call->line);
                        if (r >= 0) {
                                r = call->on_line(call->client, j, call->userdata);
                                cJSON_Delete(j);
                        }
                        json_scratch_reset();
                        if (r < 0)
                                return r;
                }
                data = nl + 1;
                n -= take + 1;
        }
}

static int call_send(KubeCall *call)
{
        KubeClient *c = call->client;
        _cleanup_free_ char *url = strdup_printf("%s%s", c->config->server, call->path);
        _cleanup_(http_request_unrefp) HttpRequest *req = NULL;
        int r;

        if (!url)
                return -ENOMEM;
        req = http_request_new(call->method, url);
        if (!req)
                return -ENOMEM;
        r = http_request_add_header(req, "Accept: application/json");
        if (r >= 0)
                r = http_request_add_header(req, USER_AGENT);
        /* Like kubectl, credentials only ever travel over TLS. */
        const char *token = kube_config_get_token(c->config, now_usec(CLOCK_MONOTONIC));
        if (r >= 0 && token && startswith(c->config->server, "https://")) {
                _cleanup_free_ char *h = strdup_printf("Authorization: Bearer %s", token);
                r = h ? http_request_add_header(req, h) : -ENOMEM;
                if (h)
                        explicit_bzero(h, strlen(h));
        }
        if (r >= 0 && call->body)
                r = http_request_set_body(req, call->content_type, call->body, strlen(call->body));
        if (r >= 0)
                r = http_request_set_tls(req, c->tls);
        if (r < 0)
                return r;
        http_request_set_timeout(req, call->timeout);
        http_request_set_http1(req, !c->http2);
        if (call->on_line) {
                http_request_set_stream(req, on_stream_data);
                http_request_set_long_lived(req, true);
                buf_reset(&call->line);
        }
        r = loop_http_start(c->loop, req, on_http_done, call);
        if (r < 0)
                return r;
        c->n_requests++;
        call->req = TAKE_PTR(req);
        return 0;
}

static int call_start(KubeClient *c, const char *method, const char *path, const cJSON *body,
                      const char *content_type, usec_t timeout, KubeCallback cb, KubeStreamFunc on_line,
                      void *userdata, KubeCall **ret_call)
{
        KubeCall *call = calloc(1, sizeof *call);
        int r;

        assert_return(c && method && path && path[0] == '/', -EINVAL);
        if (c->closing) {
                free(call);
                return -ECANCELED;
        }
        if (!call)
                return -ENOMEM;
        call->client = c;
        call->method = strdup(method);
        call->path = strdup(path);
        call->content_type = content_type ? strdup(content_type) : NULL;
        call->body = body ? json_print(body) : NULL;
        call->timeout = timeout;
        call->cb = cb;
        call->on_line = on_line;
        call->userdata = userdata;
        call->line = BUF_INIT(MAX_STREAM_LINE);
        call->next = c->calls;
        if (c->calls)
                c->calls->prev = call;
        c->calls = call;
        if (!call->method || !call->path || (content_type && !call->content_type) || (body && !call->body)) {
                call_free(call);
                return -ENOMEM;
        }
        r = call_send(call);
        if (r < 0) {
                call_free(call);
                return r;
        }
        if (ret_call)
                *ret_call = call;
        return 0;
}

int kube_call(KubeClient *c, const char *method, const char *path, const cJSON *body,
              const char *content_type, KubeCallback cb, void *userdata, KubeCall **ret_call)
{
        assert_return(c, -EINVAL);
        return call_start(c, method, path, body,
                          body ? (content_type ? content_type : "application/json") : NULL, c->timeout, cb,
                          NULL, userdata, ret_call);
}

int kube_stream(KubeClient *c, const char *path, usec_t timeout, KubeStreamFunc on_line, KubeCallback done,
                void *userdata, KubeCall **ret_call)
{
        assert_return(on_line, -EINVAL);
        return call_start(c, "GET", path, NULL, NULL, timeout, done, on_line, userdata, ret_call);
}

int kube_call_feed(KubeCall *call, const char *data, size_t n)
{
        assert_return(call && call->on_line, -EINVAL);
        return on_stream_data(NULL, data, n, call);
}

void kube_call_cancel(KubeCall *call)
{
        if (call)
                call_free(call);
}
