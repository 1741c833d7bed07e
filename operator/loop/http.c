/* HTTP requests on the loop: their options, the libcurl easy handle each
 * transfer gets, and what a finished transfer hands back. TLS material too. */
#include <openssl/ssl.h>
#include <strings.h>

#include <assert.h>

#include "base/log.h"
#include "loop-internal.h"

/* ---- TLS material ---- */

HttpTls *http_tls_free(HttpTls *t)
{
        if (!t)
                return NULL;
        if (t->n_ref > 1) {
                t->n_ref--;
                return NULL;
        }
        free(t->ca_pem);
        free(t->cert_pem);
        if (t->key_pem)
                explicit_bzero(t->key_pem, strlen(t->key_pem));
        free(t->key_pem);
        free(t->server_name);
        return mfree(t);
}

static int dup_field(char **dst, const char *src)
{
        if (!src)
                return 0;
        *dst = strdup(src);
        return *dst ? 0 : -ENOMEM;
}

HttpTls *http_tls_dup(const HttpTls *t)
{
        _cleanup_(http_tls_freep) HttpTls *n = calloc(1, sizeof *n);
        if (!n || !t)
                return TAKE_PTR(n);
        n->insecure_skip_verify = t->insecure_skip_verify;
        if (dup_field(&n->ca_pem, t->ca_pem) < 0 || dup_field(&n->cert_pem, t->cert_pem) < 0 ||
            dup_field(&n->key_pem, t->key_pem) < 0 || dup_field(&n->server_name, t->server_name) < 0)
                return NULL;
        return TAKE_PTR(n);
}

HttpTls *http_tls_share(const HttpTls *t)
{
        HttpTls *n = http_tls_dup(t);
        if (n)
                n->n_ref = 1;
        return n;
}

/* ---- HTTP requests ---- */

HttpRequest *http_request_new(const char *method, const char *url)
{
        HttpRequest *r = NULL;

        if (!method || !url)
                return NULL;
        r = calloc(1, sizeof *r);
        if (!r)
                return NULL;
        r->n_ref = 1;
        r->method = strdup(method);
        r->url = strdup(url);
        r->resp = BUF_INIT(64u << 20);
        r->timeout = 30 * USEC_PER_SEC;
        r->body_fd = -EBADF;
        /* No "Expect: 100-continue" round trip for our small bodies. */
        if (!r->method || !r->url || http_request_add_header(r, "Expect:") < 0)
                return http_request_unref(r);
        return r;
}

HttpRequest *http_request_ref(HttpRequest *r)
{
        if (r)
                r->n_ref++;
        return r;
}

/* In flight from loop_http_start() until it completes or is cancelled: its
 * name being resolved, its transfer in curl, or its failure waiting for the
 * next loop iteration. */
static void request_attach(Loop *l, HttpRequest *r, HttpDoneFunc done, void *userdata)
{
        r->loop = loop_ref(l);
        l->in_flight++;
        if (r->long_lived) {
                l->long_lived++;
                loop_update_max_connections(l);
        }
        r->done = done;
        r->userdata = userdata;
        http_request_ref(r); /* the transfer's own reference, dropped after done */
}

static void request_detach(HttpRequest *r)
{
        if (!r->loop)
                return;
        if (r->easy) {
                (void) curl_multi_remove_handle(r->loop->multi, r->easy);
                curl_easy_cleanup(r->easy);
                r->easy = NULL;
        }
        http_resolve_abandon(r);
        r->fail_later = sd_event_source_disable_unref(r->fail_later);
        r->loop->in_flight--;
        if (r->long_lived) {
                r->loop->long_lived--;
                loop_update_max_connections(r->loop);
        }
        r->loop = loop_unref(r->loop);
}

/* The request leaves the loop and its owner hears `error`. */
static void request_complete(HttpRequest *r, int error)
{
        /* The request may be freed by its callback: hold it until we are done. */
        HttpDoneFunc done = r->done;
        r->done = NULL;
        request_detach(r);
        if (done)
                done(r, error, r->userdata);
        http_request_unref(r); /* the transfer's reference */
}

static int on_fail_later(sd_event_source *s, void *userdata)
{
        HttpRequest *r = userdata;

        (void) s;
        request_complete(r, r->fail_error);
        return 0;
}

int http_request_fail(HttpRequest *r, int error)
{
        int e;

        assert(r->loop && error < 0);
        if (!r->starting) {
                request_complete(r, error);
                return 0;
        }
        /* Inside loop_http_start(): its caller hears of it from the loop, as of any other end. */
        e = sd_event_add_defer(r->loop->event, &r->fail_later, on_fail_later, r);
        if (e < 0)
                return e;
        (void) sd_event_source_set_description(r->fail_later, "http-fail");
        r->fail_error = error;
        return 0;
}

/* Our copy of the Authorization header and of a body that may be a Secret: zeroed before
 * they go back to malloc (review L6). curl's own copy, in its send buffer, is beyond us. */
static void erase_headers(struct curl_slist *l)
{
        for (; l; l = l->next)
                (void) erase_and_free(TAKE_PTR(l->data));
}

HttpRequest *http_request_unref(HttpRequest *r)
{
        if (!r || --r->n_ref > 0)
                return NULL;
        request_detach(r);
        free(r->method);
        free(r->url);
        free(r->unix_socket);
        curl_slist_free_all(r->connect_to);
        curl_slist_free_all(r->resolve);
        if (r->body)
                explicit_bzero(r->body, r->body_len);
        free(r->body);
        erase_headers(r->headers);
        curl_slist_free_all(r->headers);
        curl_slist_free_all(r->resp_headers);
        http_tls_free(r->tls);
        buf_free(&r->resp);
        free(r->sigv4);
        free(r->sigv4_key_id);
        erase_and_free(r->sigv4_secret);
        return mfree(r);
}

int http_request_set_body(HttpRequest *r, const char *content_type, const char *body, size_t len)
{
        assert_return(r && (body || len == 0), -EINVAL);
        char *b = malloc(len + 1);
        if (!b)
                return -ENOMEM;
        memcpy(b, body, len);
        b[len] = 0;
        if (r->body)
                explicit_bzero(r->body, r->body_len);
        free(r->body);
        r->body = b;
        r->body_len = len;
        if (content_type) {
                _cleanup_free_ char *h = strdup_printf("Content-Type: %s", content_type);
                if (!h)
                        return -ENOMEM;
                return http_request_add_header(r, h);
        }
        return 0;
}

int http_request_add_header(HttpRequest *r, const char *header)
{
        assert_return(r && header, -EINVAL);
        struct curl_slist *n = curl_slist_append(r->headers, header);
        if (!n)
                return -ENOMEM;
        r->headers = n;
        return 0;
}

void http_request_set_timeout(HttpRequest *r, usec_t timeout)
{
        r->timeout = timeout;
}

int http_request_set_unix_socket(HttpRequest *r, const char *path)
{
        assert_return(r && path, -EINVAL);
        char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        free(r->unix_socket);
        r->unix_socket = p;
        return 0;
}

int http_request_set_connect_to(HttpRequest *r, const char *entry)
{
        assert_return(r && entry, -EINVAL);
        assert_return(http_connect_to_is_address(entry), -EINVAL);
        struct curl_slist *n = curl_slist_append(NULL, entry);
        if (!n)
                return -ENOMEM;
        curl_slist_free_all(r->connect_to);
        r->connect_to = n;
        return 0;
}

int http_request_set_tls(HttpRequest *r, const HttpTls *tls)
{
        assert_return(r, -EINVAL);
        assert_return(!r->loop, -EBUSY); /* curl points at the blobs of a transfer in flight */
        HttpTls *t;
        if (tls && tls->n_ref > 0) {
                /* Shared (http_tls_share): a reference. Not const for its count alone. */
                t = (HttpTls *) tls;
                t->n_ref++;
        } else if (!(t = http_tls_dup(tls)))
                return -ENOMEM;
        http_tls_free(r->tls);
        r->tls = t;
        return 0;
}

void http_request_set_max_body(HttpRequest *r, size_t max)
{
        r->resp.max = max;
}

void http_request_set_stream(HttpRequest *r, HttpDataFunc f)
{
        r->stream = f;
}

void http_request_set_http1(HttpRequest *r, bool http1)
{
        r->http1 = http1;
}

void http_request_set_long_lived(HttpRequest *r, bool long_lived)
{
        r->long_lived = long_lived;
}

int http_request_set_aws_sigv4(HttpRequest *r, const char *provider, const char *key_id, const char *secret)
{
        assert_return(r && provider && key_id && secret, -EINVAL);
        _cleanup_free_ char *p = strdup(provider), *k = strdup(key_id);
        char *s = strdup(secret);
        if (!p || !k || !s) {
                erase_and_free(s);
                return -ENOMEM;
        }
        free(r->sigv4);
        free(r->sigv4_key_id);
        erase_and_free(r->sigv4_secret);
        /* libcurl 7.88's signer signs an "Expect:" that removes the header as an empty one, which
         * then is not sent, and S3 refuses the signature ("signed header expect is missing"):
         * signed requests keep curl's own Expect: 100-continue for bodies over 1 MiB. */
        if (r->headers && streq(r->headers->data, "Expect:")) {
                struct curl_slist *first = r->headers;
                r->headers = first->next;
                first->next = NULL;
                curl_slist_free_all(first);
        }
        r->sigv4 = TAKE_PTR(p);
        r->sigv4_key_id = TAKE_PTR(k);
        r->sigv4_secret = s;
        return 0;
}

int http_request_set_body_fd(HttpRequest *r, int fd, uint64_t offset, uint64_t size)
{
        assert_return(r && fd >= 0, -EINVAL);
        assert_return(offset <= INT64_MAX && size <= INT64_MAX - offset, -EINVAL);
        r->body_fd = fd;
        r->body_fd_offset = offset;
        r->body_fd_size = size;
        return 0;
}

void http_request_set_stall_timeout(HttpRequest *r, usec_t stall)
{
        r->stall = stall;
}

void http_request_set_https_only(HttpRequest *r, bool https_only)
{
        r->https_only = https_only;
}

unsigned http_curl_version(const char **ret_text)
{
        const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

        if (ret_text)
                *ret_text = v->version;
        return v->version_num;
}

static size_t on_read_fd(char *buf, size_t size, size_t nitems, void *userdata)
{
        HttpRequest *r = userdata;
        size_t want = (size_t) MIN((uint64_t) size * nitems, r->body_fd_size - r->body_fd_sent);
        ssize_t k;

        if (want == 0)
                return 0;
        do
                k = pread(r->body_fd, buf, want, (off_t) (r->body_fd_offset + r->body_fd_sent));
        while (k < 0 && errno == EINTR);
        if (k <= 0) {
                /* Ending early would leave the server waiting for the rest. */
                r->write_error = k < 0 ? -errno : -EIO;
                return CURL_READFUNC_ABORT;
        }
        r->body_fd_sent += (uint64_t) k;
        return (size_t) k;
}

/* curl rewinds a body it must send again (a connection that closed under it). */
static int on_seek_fd(void *userdata, curl_off_t offset, int origin)
{
        HttpRequest *r = userdata;

        if (origin != SEEK_SET || offset < 0 || (uint64_t) offset > r->body_fd_size)
                return CURL_SEEKFUNC_CANTSEEK;
        r->body_fd_sent = (uint64_t) offset;
        return CURL_SEEKFUNC_OK;
}

/* The options the object store's requests need (http_request_set_aws_sigv4() and the rest). */
static void setup_store_options(HttpRequest *r, CURL *c)
{
        if (r->sigv4) {
                (void) curl_easy_setopt(c, CURLOPT_AWS_SIGV4, r->sigv4);
                (void) curl_easy_setopt(c, CURLOPT_USERNAME, r->sigv4_key_id);
                (void) curl_easy_setopt(c, CURLOPT_PASSWORD, r->sigv4_secret);
        }
        if (r->stall > 0) {
                (void) curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
                (void) curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME,
                                        (long) MAX(r->stall / USEC_PER_SEC, (usec_t) 1));
        }
        if (r->https_only)
                (void) curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata)
{
        HttpRequest *r = userdata;
        size_t n = size * nmemb;
        int e;

        if (r->status == 0)
                (void) curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
        /* Stream only successful bodies; error bodies are kept for Status decoding. */
        if (r->stream && r->status >= 200 && r->status < 300)
                e = r->stream(r, data, n, r->userdata);
        else
                e = buf_append(&r->resp, data, n);
        if (e < 0) {
                r->write_error = e;
                return 0; /* makes curl fail with CURLE_WRITE_ERROR */
        }
        return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
        HttpRequest *r = userdata;
        size_t n = size * nmemb;

        /* A new status line (redirects, 100-continue) starts a fresh header set. */
        if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
                curl_slist_free_all(r->resp_headers);
                r->resp_headers = NULL;
                r->status = 0;
                return n;
        }
        while (n > 0 && (data[n - 1] == '\n' || data[n - 1] == '\r'))
                n--;
        if (n == 0 || n > 8192)
                return size * nmemb;
        char line[8193];
        memcpy(line, data, n);
        line[n] = 0;
        struct curl_slist *s = curl_slist_append(r->resp_headers, line);
        if (s)
                r->resp_headers = s;
        return size * nmemb;
}

static int map_curl_error(CURLcode c, int write_error)
{
        switch (c) {
        case CURLE_OK:
                return 0;
        case CURLE_WRITE_ERROR:
        case CURLE_ABORTED_BY_CALLBACK: /* a body read from a file (on_read_fd) */
                return write_error < 0 ? write_error : -EIO;
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_COULDNT_CONNECT:
                return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return -EHOSTUNREACH;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_SSL_ENGINE_NOTFOUND:
        case CURLE_SSL_ENGINE_SETFAILED:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
                return -EPROTO;
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
                return -ECONNRESET;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL:
                return -EINVAL;
        default:
                return -EIO;
        }
}

void http_transfer_done(HttpRequest *r, CURLcode code)
{
        Loop *l = r->loop;

        (void) curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
        int e = map_curl_error(code, r->write_error);
        if (e < 0)
                log_debug("%s %s: %s (%s)", r->method, r->url, curl_easy_strerror(code), r->errbuf);
        long n_connects = 0;
        (void) curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &n_connects);
        if (n_connects > 0) {
                l->connections += (uint64_t) n_connects;
                log_debug("%s %s: opened a connection (%u in flight, %u long-lived)", r->method, r->url,
                          l->in_flight, l->long_lived);
        }
        request_complete(r, e);
}

/* Every TLS connection gives its read and write buffers (~34 KiB) back while
 * it has nothing in flight: most of ours are watches that idle for minutes. */
static CURLcode on_ssl_ctx(CURL *c, void *ssl_ctx, void *userdata)
{
        (void) c;
        (void) userdata;
        (void) SSL_CTX_set_mode((SSL_CTX *) ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
        return CURLE_OK;
}

/* The blobs are not copied: curl points at the request's own HttpTls, which
 * lives until the request is freed and cannot be replaced while a transfer
 * runs (http_request_set_tls). A connection keeps curl's own copy of what it
 * matches on, so this saves a copy of the CA bundle (and the client
 * certificate and key) per watch, not per connection. */
static int setup_tls(HttpRequest *r)
{
        const HttpTls *t = r->tls;
        struct curl_blob b;

        if (!t)
                return 0;
        /* Not every libcurl build has an OpenSSL backend; without one this is refused and harmless. */
        (void) curl_easy_setopt(r->easy, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
        if (t->ca_pem) {
                b = (struct curl_blob){
                        .data = t->ca_pem, .len = strlen(t->ca_pem), .flags = CURL_BLOB_NOCOPY};
                if (curl_easy_setopt(r->easy, CURLOPT_CAINFO_BLOB, &b) != CURLE_OK)
                        return -EPROTO;
                /* The given CAs are the only ones trusted, as client-go and
                 * etcdctl trust only theirs: the blob replaces curl's CA file,
                 * but its built-in CA directory (Debian: /etc/ssl/certs) would
                 * still be searched for an issuer, so any public CA could
                 * vouch for the API server or an etcd member. */
                (void) curl_easy_setopt(r->easy, CURLOPT_CAPATH, NULL);
        }
        if (t->cert_pem) {
                b = (struct curl_blob){
                        .data = t->cert_pem, .len = strlen(t->cert_pem), .flags = CURL_BLOB_NOCOPY};
                if (curl_easy_setopt(r->easy, CURLOPT_SSLCERT_BLOB, &b) != CURLE_OK)
                        return -EPROTO;
                (void) curl_easy_setopt(r->easy, CURLOPT_SSLCERTTYPE, "PEM");
        }
        if (t->key_pem) {
                b = (struct curl_blob){
                        .data = t->key_pem, .len = strlen(t->key_pem), .flags = CURL_BLOB_NOCOPY};
                if (curl_easy_setopt(r->easy, CURLOPT_SSLKEY_BLOB, &b) != CURLE_OK)
                        return -EPROTO;
                (void) curl_easy_setopt(r->easy, CURLOPT_SSLKEYTYPE, "PEM");
        }
        if (t->insecure_skip_verify) {
                (void) curl_easy_setopt(r->easy, CURLOPT_SSL_VERIFYPEER, 0L);
                (void) curl_easy_setopt(r->easy, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        return 0;
}

int http_transfer_start(HttpRequest *r)
{
        Loop *l = r->loop;
        int e;

        assert(l && !r->easy);
        CURL *c = curl_easy_init();
        if (!c)
                return -ENOMEM;
        r->easy = c;

        (void) curl_easy_setopt(c, CURLOPT_URL, r->url);
        if (r->unix_socket)
                (void) curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, r->unix_socket);
        if (r->connect_to)
                (void) curl_easy_setopt(c, CURLOPT_CONNECT_TO, r->connect_to);
        if (r->resolve)
                (void) curl_easy_setopt(c, CURLOPT_RESOLVE, r->resolve);
        /* What curl resolved itself would be kept a minute and used instead of a later
         * answer of ours; it resolves nothing, but keeps nothing either (our entries,
         * CURLOPT_RESOLVE's, never expire and are replaced by each request's). */
        (void) curl_easy_setopt(c, CURLOPT_DNS_CACHE_TIMEOUT, 0L);
        (void) curl_easy_setopt(c, CURLOPT_PRIVATE, r);
        (void) curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
        (void) curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
        (void) curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        (void) curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        (void) curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
        (void) curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        (void) curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        /* Our floor, not the distro's OpenSSL policy (which a host may lower): the API
         * server and etcd both speak TLS 1.2 and 1.3 (review L5). */
        (void) curl_easy_setopt(c, CURLOPT_SSLVERSION, (long) CURL_SSLVERSION_TLSv1_2);
        (void) curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        (void) curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
        /* Requests started together to one server (an etcd round's health
         * and status of a member) wait for the first connection's ALPN
         * instead of each opening one: over HTTP/2 they become streams of it
         * (an idle HTTP/2 TLS connection holds about 60 KiB in curl, nghttp2
         * and OpenSSL); over HTTP/1.1 the waiting one then opens its own. */
        (void) curl_easy_setopt(c, CURLOPT_PIPEWAIT, 1L);
        /* HTTPS requests go out through the upload buffer, at most 16 KiB at
         * a time; curl's default of 64 KiB per handle is never used. */
        (void) curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
        if (r->long_lived)
                (void) curl_easy_setopt(c, CURLOPT_BUFFERSIZE, (long) LOOP_LONG_LIVED_BUFFER);
        if (r->http1)
                (void) curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
        if (r->timeout != USEC_INFINITY && r->timeout > 0)
                (void) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long) (r->timeout / USEC_PER_MSEC));
        if (r->body_fd >= 0) {
                r->body_fd_sent = 0;
                (void) curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
                (void) curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read_fd);
                (void) curl_easy_setopt(c, CURLOPT_READDATA, r);
                (void) curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek_fd);
                (void) curl_easy_setopt(c, CURLOPT_SEEKDATA, r);
                (void) curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t) r->body_fd_size);
                if (!streq(r->method, "PUT"))
                        (void) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
        } else if (streq(r->method, "GET"))
                (void) curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        else if (streq(r->method, "HEAD"))
                (void) curl_easy_setopt(c, CURLOPT_NOBODY, 1L); /* no body will come: do not wait for one */
        else {
                (void) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
                if (r->body || !streq(r->method, "DELETE")) {
                        (void) curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body ? r->body : "");
                        (void) curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) r->body_len);
                }
        }
        setup_store_options(r, c);
        e = setup_tls(r);
        if (e < 0) {
                curl_easy_cleanup(c);
                r->easy = NULL;
                return e;
        }
        (void) curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->headers);

        if (curl_multi_add_handle(l->multi, c) != CURLM_OK) {
                curl_easy_cleanup(c);
                r->easy = NULL;
                return -ENOMEM;
        }
        return 0;
}

int loop_http_start(Loop *l, HttpRequest *r, HttpDoneFunc done, void *userdata)
{
        _cleanup_free_ char *name = NULL;
        unsigned port = 0;
        int e;

        assert_return(l && r, -EINVAL);
        assert_return(!r->loop, -EBUSY);

        e = http_request_target(r, &name, &port);
        if (e < 0)
                return e;
        if (name && !l->resolve)
                return log_debug_errno(-EHOSTUNREACH, "%s %s: no resolver on this loop for %s", r->method,
                                       r->url, name);
        buf_reset(&r->resp);
        curl_slist_free_all(r->resp_headers);
        r->resp_headers = NULL;
        curl_slist_free_all(r->resolve);
        r->resolve = NULL;
        r->status = 0;
        r->write_error = 0;
        r->errbuf[0] = 0;

        request_attach(l, r, done, userdata);
        r->starting = true;
        e = name ? http_resolve_start(r, name, port) : http_transfer_start(r);
        r->starting = false;
        if (e < 0) {
                r->done = NULL;
                request_detach(r);
                http_request_unref(r); /* the transfer's reference: the caller still holds its own */
        }
        return e;
}

void http_request_cancel(HttpRequest *r)
{
        if (!r || !r->loop)
                return;
        r->done = NULL;
        request_detach(r);
        http_request_unref(r); /* the transfer's reference */
}

long http_request_get_status(HttpRequest *r)
{
        return r->status;
}

const char *http_request_get_body(HttpRequest *r, size_t *len)
{
        if (len)
                *len = r->resp.len;
        return r->resp.data ? r->resp.data : "";
}

const char *http_request_get_header(HttpRequest *r, const char *name)
{
        size_t n = strlen(name);
        for (struct curl_slist *s = r->resp_headers; s; s = s->next)
                if (strncasecmp(s->data, name, n) == 0 && s->data[n] == ':') {
                        const char *v = s->data + n + 1;
                        while (*v == ' ' || *v == '\t')
                                v++;
                        return v;
                }
        return NULL;
}

const char *http_request_get_url(HttpRequest *r)
{
        return r->url;
}

const char *http_request_get_method(HttpRequest *r)
{
        return r->method;
}

const char *http_request_get_error(HttpRequest *r)
{
        return r->errbuf;
}
