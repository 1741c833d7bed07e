/* The one event loop: sd-event driving libcurl's multi interface. This is the
 * only code that touches CURLM*. HTTP requests are reference counted; a
 * request started with loop_http_start() that returns 0 invokes its done
 * callback exactly once (unless cancelled first); one that returns an error
 * never invokes it. */
#pragma once

#include <systemd/sd-event.h>

#include "base/buf.h"
#include "base/timeutil.h"

typedef struct Loop Loop;
typedef struct HttpRequest HttpRequest;

Loop *loop_new(void);
Loop *loop_ref(Loop *l);
Loop *loop_unref(Loop *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(Loop *, loop_unref);

sd_event *loop_get_event(Loop *l);
int loop_run(Loop *l);
int loop_exit(Loop *l, int code);
/* Runs the loop until `*done` becomes true or `timeout` passes (-ETIMEDOUT).
 * For one-shot commands and tests. */
int loop_run_until(Loop *l, const bool *done, usec_t timeout);
/* Number of HTTP requests in flight (tests prove the loop ends empty). */
unsigned loop_http_in_flight(Loop *l);
/* Connections the finished transfers opened (a transfer that reused one opened none). */
uint64_t loop_http_connections(Loop *l);

/* TLS material as PEM blobs (a request copies it, or takes a reference of a
 * shared one). NULL fields mean "system default" / "no client certificate". */
typedef struct HttpTls {
        char *ca_pem;
        char *cert_pem;
        char *key_pem;
        bool insecure_skip_verify;
        char *server_name; /* overrides the name checked against the certificate */
        /* 0: the caller's own, which http_request_set_tls() copies; > 0: made by
         * http_tls_share(), which requests take a reference of instead. */
        unsigned n_ref;
} HttpTls;

/* Frees a copy, or drops one reference of a shared one. */
HttpTls *http_tls_free(HttpTls *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(HttpTls *, http_tls_free);
HttpTls *http_tls_dup(const HttpTls *t);
/* A copy that every request given it shares instead of copying (a client's
 * settings, the same for each of its requests: one copy, not one per watch).
 * It must not change once shared; http_tls_free() drops the caller's reference. */
HttpTls *http_tls_share(const HttpTls *t);

typedef void (*HttpDoneFunc)(HttpRequest *req, int error, void *userdata);
/* Streaming body consumer; a negative return aborts the transfer with that error. */
typedef int (*HttpDataFunc)(HttpRequest *req, const char *data, size_t n, void *userdata);

HttpRequest *http_request_new(const char *method, const char *url);
HttpRequest *http_request_ref(HttpRequest *r);
HttpRequest *http_request_unref(HttpRequest *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(HttpRequest *, http_request_unref);

int http_request_set_body(HttpRequest *r, const char *content_type, const char *body, size_t len);
int http_request_add_header(HttpRequest *r, const char *header);
void http_request_set_timeout(HttpRequest *r, usec_t timeout);
int http_request_set_tls(HttpRequest *r, const HttpTls *tls);
/* Connect to this unix socket instead of the URL's host and port. */
int http_request_set_unix_socket(HttpRequest *r, const char *path);
/* Connect where `entry` ("HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT", libcurl's
 * CURLOPT_CONNECT_TO) says while TLS still verifies the URL's host: a server
 * reached at an address its certificate does not name yet. CONNECT-TO-HOST is
 * an IP address (IPv6 in brackets): -EINVAL for a name, which nothing would
 * resolve. Replaces an earlier one. */
int http_request_set_connect_to(HttpRequest *r, const char *entry);
/* Largest body kept in memory (default 64 MiB); over it the request fails with -E2BIG. */
void http_request_set_max_body(HttpRequest *r, size_t max);
void http_request_set_stream(HttpRequest *r, HttpDataFunc f);
/* Marks a request that stays open for minutes carrying small messages (a
 * watch): it reads through a LOOP_LONG_LIVED_BUFFER-byte buffer instead of
 * 16 KiB, and its connection does not count against the
 * LOOP_IDLE_CONNECTIONS kept open between requests. Set before starting. */
void http_request_set_long_lived(HttpRequest *r, bool long_lived);
/* Asks for HTTP/1.1 where the server would otherwise agree on HTTP/2 (ALPN).
 * Set before starting. */
void http_request_set_http1(HttpRequest *r, bool http1);
#define LOOP_LONG_LIVED_BUFFER 4096
#define LOOP_IDLE_CONNECTIONS  8

/* For object stores (operator/s3). */
/* AWS Signature Version 4 by libcurl's signer (CURLOPT_AWS_SIGV4): `provider`
 * as curl takes it ("aws:amz:REGION:s3"), the access key ID and the secret
 * (copied; the secret is zeroed when the request is freed). The payload's
 * SHA-256 is the caller's x-amz-content-sha256 header, which curl signs with
 * every other header the caller set. */
int http_request_set_aws_sigv4(HttpRequest *r, const char *provider, const char *key_id, const char *secret);
/* The body read from `fd` as it is sent, `size` bytes from `offset`, instead
 * of a copy in memory: a PUT (or the request's method) with that
 * Content-Length. `fd` is borrowed and must stay open until the request
 * completes; a read that fails fails the request with its errno. */
int http_request_set_body_fd(HttpRequest *r, int fd, uint64_t offset, uint64_t size);
/* Fails the transfer with -ETIMEDOUT once it moved less than 1 byte/s for
 * `stall` (whole seconds; 0: never): transfers with no deadline of their own. */
void http_request_set_stall_timeout(HttpRequest *r, usec_t stall);
/* Refuses plain http:// (-EINVAL): https only. */
void http_request_set_https_only(HttpRequest *r, bool https_only);
/* The running libcurl's version (0xXXYYZZ) and its text (*ret_text, may be
 * NULL), for what depends on how its signer works. */
unsigned http_curl_version(const char **ret_text);

int loop_http_start(Loop *l, HttpRequest *r, HttpDoneFunc done, void *userdata);
/* Stops a request in flight; its done callback is not invoked. */
void http_request_cancel(HttpRequest *r);

long http_request_get_status(HttpRequest *r);
const char *http_request_get_body(HttpRequest *r, size_t *len);
/* Case-insensitive response header lookup; NULL when absent. */
const char *http_request_get_header(HttpRequest *r, const char *name);
const char *http_request_get_url(HttpRequest *r);
const char *http_request_get_method(HttpRequest *r);
/* Human-readable transport error text (curl's, or "cannot resolve NAME: " and
 * the resolver's words), "" when none. */
const char *http_request_get_error(HttpRequest *r);

/* Names. The loop resolves none itself, and lets libcurl resolve none: before
 * a request whose URL names its host (no IP address, no unix socket, no
 * connect-to entry) goes to curl, the loop's resolver looks the name up, and
 * curl gets the answer as a CURLOPT_RESOLVE entry. The resolver comes from a
 * layer above this one (dns_hostnames_attach(), operator/dns/hostnames.h);
 * on a loop without one such a request fails to start with -EHOSTUNREACH. A
 * name that does not resolve fails the request with -EHOSTUNREACH (-ENOMEM
 * and -ECANCELED pass as they are), http_request_get_error() naming the name
 * and giving the resolver's words. */
typedef struct LoopResolveAnswer {
        int error;                    /* 0 or a negative errno */
        const char *message;          /* the resolver's own words for an error ("Domain name not found") */
        const char *const *addresses; /* IPv4 and IPv6 addresses as text, in the order to try them */
        size_t n_addresses;           /* > 0 when error is 0; the loop uses at most LOOP_RESOLVE_MAX */
} LoopResolveAnswer;
#define LOOP_RESOLVE_MAX 16

/* The answer for `token`; everything in it is borrowed for the call. */
typedef void (*LoopResolveDone)(void *token, const LoopResolveAnswer *answer);
/* Looks `name` up (the URL's host as written). Returning 0 it calls `done`
 * exactly once, from the loop or before it returns (an answer it had);
 * returning an error, never. */
typedef int (*LoopResolveFunc)(void *userdata, const char *name, LoopResolveDone done, void *token);
typedef void (*LoopFreeFunc)(void *userdata);

/* Installs the resolver of the loop's requests, before any is in flight
 * (-EBUSY), replacing and freeing an earlier one. The loop owns `userdata`
 * from then on (on an error the caller keeps it) and hands it to
 * `free_userdata` with its last reference. */
int loop_set_resolver(Loop *l, LoopResolveFunc resolve, LoopFreeFunc free_userdata, void *userdata);
