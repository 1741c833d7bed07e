/* One request of an S3 operation, on the store's loop (loop.h): the loop's
 * HTTP stack holds the TLS settings (the store's caBundle as the only CA, the
 * TLS 1.2 floor) and resolves the endpoint's name through c-ares, and curl's
 * SigV4 signer signs it. A command waits for each answer with
 * loop_run_until(), and between attempts on the loop too, never in sleep(). */
#include <inttypes.h>
#include <stdio.h>
#include <strings.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "loop/loop.h"
#include "s3-internal.h"

#define ATTEMPTS     4
#define STALL_SECS   60  /* a transfer below 1 byte/s for this long is dead */
#define REQUEST_SECS 300 /* a whole LIST, HEAD, DELETE or multipart call (not a transfer) */
#define CA_MAX       (1024 * 1024)

S3Request s3_request_new(const S3Store *s, const char *op, const char *method, const char *key)
{
        return (S3Request){.s = s,
                           .op = op,
                           .method = method,
                           .key = key,
                           .body_fd = -EBADF,
                           .out_fd = -EBADF,
                           .resp = BUF_INIT(XML_MAX)};
}

void s3_request_done(S3Request *q)
{
        free(q->url);
        buf_free(&q->resp);
}

int s3_request_error(const S3Request *q, char **ret_error)
{
        _cleanup_free_ char *code = q->resp.data ? s3_xml_get(q->resp.data, "Code") : NULL,
                            *msg = q->resp.data ? s3_xml_get(q->resp.data, "Message") : NULL, *hint = NULL;
        int r = q->status == 404 ? -ENOENT : q->status == 403 ? -EACCES : -EIO;
        if (streq_ptr(code, "InvalidAccessKeyId") || streq_ptr(code, "SignatureDoesNotMatch"))
                hint = strdup_printf(" (check accessKeyID and secretAccessKey in %s)",
                                     q->s->dir ? q->s->dir : "the credentials");
        else if (streq_ptr(code, "AccessDenied"))
                /* Not the key ID itself: this text ends up in Job termination messages and
                 * EtcdBackup conditions that more people read than the Secret (review L15). */
                hint = strdup_printf(" (the access key in %s may not do this in bucket %s)",
                                     q->s->dir ? q->s->dir : "the credentials", q->s->bucket);
        else if (streq_ptr(code, "NoSuchBucket"))
                hint = strdup_printf(" (create bucket %s at %s, or fix --bucket)", q->s->bucket,
                                     q->s->endpoint);
        else if (streq_ptr(code, "RequestTimeTooSkewed"))
                hint = strdup(" (this host's clock is off: fix its time sync)");
        else if (streq_ptr(code, "PermanentRedirect") || streq_ptr(code, "AuthorizationHeaderMalformed"))
                hint = strdup_printf(" (the bucket is in another region than %s: fix region in %s)",
                                     q->s->region, q->s->dir ? q->s->dir : "the credentials");
        return set_error(ret_error, r, "S3 %s s3://%s/%s: HTTP %ld %s: %s%s", q->op, q->s->bucket,
                         strempty(q->key), q->status, code ? code : "(no S3 error code)",
                         msg ? msg : "(no message)", strempty(hint));
}

typedef struct Attempt {
        S3Request *q;
        bool done;
        int error;
} Attempt;

static void on_done(HttpRequest *req, int error, void *userdata)
{
        Attempt *a = userdata;

        (void) req;
        a->done = true;
        a->error = error;
}

/* A successful answer's body: into the file, or into q->resp up to its maximum (-E2BIG). */
static int on_data(HttpRequest *req, const char *p, size_t len, void *userdata)
{
        S3Request *q = ((Attempt *) userdata)->q;

        if (q->out_fd < 0)
                return buf_append(&q->resp, p, len);
        if (q->written == 0) {
                /* What curl's CURLOPT_MAXFILESIZE did: refused on its announced size. */
                const char *cl = http_request_get_header(req, "Content-Length");
                if (cl && strtoull(cl, NULL, 10) > DOWNLOAD_MAX)
                        return -EFBIG;
        }
        if ((q->written += len) > DOWNLOAD_MAX)
                return -EFBIG;
        for (size_t off = 0; off < len;) {
                ssize_t k = write(q->out_fd, p + off, len - off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EIO;
                off += (size_t) k;
        }
        return 0;
}

/* The request of one attempt: the same headers, signature and body every time. */
static int request_build(const S3Request *q, const HttpTls *tls, HttpRequest **ret)
{
        _cleanup_(http_request_unrefp) HttpRequest *req = http_request_new(q->method, q->url);
        char sigv4[128], hdr[2200];
        bool sse = q->sse && q->s->sse, kms = sse && q->s->sse_kms_key_id;
        int r;

        if (!req)
                return -ENOMEM;
        (void) snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", q->s->region);
        if ((r = http_request_set_aws_sigv4(req, sigv4, q->s->access_key, q->s->secret_key)) < 0)
                return r;
        /* x-amz-* headers: curl's SigV4 signer signs every header set here (the peer checks). */
        (void) snprintf(hdr, sizeof hdr, "x-amz-content-sha256: %s", q->body_sha256);
        if ((r = http_request_add_header(req, hdr)) < 0)
                return r;
        if (q->checksum_sha256[0]) {
                (void) snprintf(hdr, sizeof hdr, "x-amz-checksum-sha256: %s", q->checksum_sha256);
                if ((r = http_request_add_header(req, hdr)) < 0)
                        return r;
        }
        if (q->content_type) {
                (void) snprintf(hdr, sizeof hdr, "Content-Type: %s", q->content_type);
                if ((r = http_request_add_header(req, hdr)) < 0)
                        return r;
        }
        if (sse) {
                (void) snprintf(hdr, sizeof hdr, "x-amz-server-side-encryption: %s", q->s->sse);
                if ((r = http_request_add_header(req, hdr)) < 0)
                        return r;
        }
        if (kms) {
                (void) snprintf(hdr, sizeof hdr, "x-amz-server-side-encryption-aws-kms-key-id: %s",
                                q->s->sse_kms_key_id);
                if ((r = http_request_add_header(req, hdr)) < 0)
                        return r;
        }
        if (q->body_fd >= 0)
                r = http_request_set_body_fd(req, q->body_fd, q->body_offset, q->body_len);
        else if (q->body)
                r = http_request_set_body(req, NULL, q->body, (size_t) q->body_len);
        if (r < 0 || (tls && (r = http_request_set_tls(req, tls)) < 0))
                return r;
        http_request_set_https_only(req, !q->s->insecure_http);
        http_request_set_stream(req, on_data);
        http_request_set_max_body(req, XML_MAX); /* error bodies */
        http_request_set_stall_timeout(req, STALL_SECS * USEC_PER_SEC);
        /* A transfer (an upload, a download into a file) takes as long as it moves. */
        bool transfer = q->out_fd >= 0 || streq(q->method, "PUT");
        http_request_set_timeout(req, transfer ? USEC_INFINITY : REQUEST_SECS * USEC_PER_SEC);
        *ret = TAKE_PTR(req);
        return 0;
}

/* The answer's status, ETag and Content-Length into q; an error body into q->resp. */
static void take_answer(S3Request *q, HttpRequest *req)
{
        const char *v;
        size_t len = 0;

        q->status = http_request_get_status(req);
        if ((v = http_request_get_header(req, "ETag"))) {
                (void) snprintf(q->etag, sizeof q->etag, "%s", v);
                (void) s3_etag_unquote(q->etag);
        }
        if ((v = http_request_get_header(req, "Content-Length"))) {
                char *end = NULL;
                errno = 0;
                q->length = strtoull(v, &end, 10);
                q->have_length = !errno && end != v;
        }
        if (q->status / 100 != 2) {
                const char *body = http_request_get_body(req, &len);
                (void) buf_append(&q->resp, body, len);
        }
}

/* The store's CA bundle as the only CA of its requests (as the AWS SDKs' custom CA bundle
 * replaces the system pool): the loop's TLS settings switch the system's directory off. */
static int load_ca(const S3Request *q, char **ret, char **ret_error)
{
        int r;

        *ret = NULL;
        if (!q->s->ca_file)
                return 0;
        r = read_full_file(q->s->ca_file, CA_MAX, ret, NULL);
        if (r < 0)
                return set_error(ret_error, r, "cannot read the CA bundle %s: %s", q->s->ca_file,
                                 r == -E2BIG ? "larger than 1 MiB" : strerror(-r));
        return 0;
}

/* Waits on the loop: nothing else runs meanwhile, but the loop's own sources do. */
static void wait_on_loop(Loop *l, usec_t delay)
{
        bool never = false;
        (void) loop_run_until(l, &never, delay);
}

static int rewind_download(S3Request *q, char **ret_error)
{
        if (q->out_fd < 0)
                return 0;
        q->written = 0; /* a retried download starts over */
        if (ftruncate(q->out_fd, 0) < 0 || lseek(q->out_fd, 0, SEEK_SET) < 0)
                return set_error(ret_error, -errno, "cannot rewind the download: %m");
        return 0;
}

/* One attempt: its transport error (< 0), or 0 with the answer in q; `why`: the loop's words. */
static int attempt_once(S3Request *q, const HttpTls *tls, char *why, size_t why_size)
{
        _cleanup_(http_request_unrefp) HttpRequest *req = NULL;
        Attempt a = {.q = q};
        int r;

        buf_reset(&q->resp);
        q->status = 0;
        q->etag[0] = 0;
        q->have_length = false;
        why[0] = 0;
        r = request_build(q, tls, &req);
        if (r < 0)
                return r;
        r = loop_http_start(q->s->loop, req, on_done, &a);
        if (r >= 0)
                r = loop_run_until(q->s->loop, &a.done, USEC_INFINITY);
        if (r < 0) {
                http_request_cancel(req);
                (void) snprintf(why, why_size, "%s", strerror(-r));
                return r;
        }
        take_answer(q, req);
        if (a.error < 0)
                (void) snprintf(why, why_size, "%s",
                                *http_request_get_error(req) ? http_request_get_error(req)
                                                             : strerror(-a.error));
        return a.error;
}

int s3_request_perform(S3Request *q, char **ret_error)
{
        _cleanup_free_ char *ca = NULL;
        char why[256];
        int r;

        assert_return(q && q->s && q->s->loop && q->url, -EINVAL);
        if (q->body_fd < 0) {
                unsigned char sha[DIGEST_SHA256];
                if (s3_digest(EVP_sha256(), q->body ? q->body : "", q->body ? (size_t) q->body_len : 0,
                              sha) < 0)
                        return set_error(ret_error, -EIO, "SHA-256 failed");
                s3_to_hex(sha, sizeof sha, q->body_sha256);
        }
        if ((r = load_ca(q, &ca, ret_error)) < 0)
                return r;
        HttpTls tls = {.ca_pem = ca};

        for (int attempt = 1;; attempt++) {
                if ((r = rewind_download(q, ret_error)) < 0)
                        return r;
                int e = attempt_once(q, ca ? &tls : NULL, why, sizeof why);
                if (e == -ENOMEM)
                        return e;
                if (e == -E2BIG && q->status / 100 == 2)
                        return set_error(ret_error, -E2BIG, "S3 %s s3://%s/%s: larger than %zu bytes", q->op,
                                         q->s->bucket, strempty(q->key), q->resp.max);
                if (e == -EFBIG)
                        return set_error(ret_error, -EFBIG,
                                         "S3 GET s3://%s/%s: larger than %llu GiB; refusing to download it",
                                         q->s->bucket, strempty(q->key), DOWNLOAD_MAX >> 30);
                /* An error body over its maximum still has an answer to read. */
                bool transport = e < 0 && !(e == -E2BIG && q->status > 0);
                bool transient = transport || q->status >= 500 || q->status == 429;
                if (!transient && q->status / 100 == 2)
                        return 0;
                if (!transient)
                        return s3_request_error(q, ret_error);
                if (attempt >= ATTEMPTS) {
                        if (transport)
                                return set_error(ret_error, -EHOSTUNREACH,
                                                 "S3 %s s3://%s/%s at %s: %s (after %d "
                                                 "attempts; check the endpoint in %s)",
                                                 q->op, q->s->bucket, strempty(q->key), q->s->endpoint, why,
                                                 attempt, strempty(q->s->dir));
                        return s3_request_error(q, ret_error);
                }
                usec_t delay = (usec_t) 500 * 1000 << (attempt - 1);
                log_warning("S3 %s s3://%s/%s: %s; retrying in %.1f s", q->op, q->s->bucket,
                            strempty(q->key), transport ? why : "server error",
                            (double) delay / USEC_PER_SEC);
                wait_on_loop(q->s->loop, delay);
        }
}
