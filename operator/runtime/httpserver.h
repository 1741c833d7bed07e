/* The operator's own HTTP endpoint: /healthz, /readyz and /metrics, served
 * by libmicrohttpd inside our sd-event loop. MHD runs in external epoll mode
 * with no thread of its own: its epoll fd is an sd-event I/O source and its
 * timeout an sd-event timer, so handlers run on the loop thread and may read
 * caches directly. Only GET and HEAD are served (405 otherwise), 404 for any
 * other path. Connections are bounded in number, per client address, in idle
 * time and in the time a request may take to arrive, so that slow or idle
 * clients cannot starve a probe from another address (etcd's probes go
 * through this server; see httpserver.c for what each limit is for). */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

#include "base/timeutil.h"
#include "metrics.h"

typedef struct HttpServer HttpServer;

/* Runs on the loop for every GET or HEAD of /readyz: true when ready; otherwise it may
 * point *ret_reason at text (borrowed) that becomes the 503 body. It must not
 * free the server. */
typedef bool (*HttpReadyFunc)(void *userdata, const char **ret_reason);

typedef struct HttpServerConfig {
        const char *address;             /* numeric IPv4/IPv6 literal; NULL = "0.0.0.0" */
        uint16_t port;                   /* 0 = a free port, see http_server_get_port() */
        const char *tls_cert_pem;        /* both set = HTTPS (copied); -EOPNOTSUPP if */
        const char *tls_key_pem;         /* libmicrohttpd lacks TLS */
        const char *client_ca_pem;       /* with TLS: client certificates are asked for (never required) and
                                          * those that chain to it are the requests' HttpPeer (copied) */
        unsigned max_connections;        /* 0 = 512 */
        unsigned max_connections_per_ip; /* 0 = 8; more from one address are closed at once */
        usec_t connection_timeout;       /* idle limit, whole seconds; 0 = 10 s */
        usec_t request_timeout; /* a request whole (TLS handshake, headers, body), from the accept or
                                 * the last response, however slowly it trickles; 0 = 10 s */
} HttpServerConfig;

/* Whether this libmicrohttpd was built with GnuTLS (Debian's is). */
bool http_server_tls_supported(void);

/* Binds and starts serving at once. -EADDRINUSE etc. from bind; -EINVAL for
 * a bad address or only one of cert/key; -EPROTO when MHD rejects the TLS
 * material or fails to start for another reason. */
int http_server_new(sd_event *e, const HttpServerConfig *cfg, HttpServer **ret);
HttpServer *http_server_free(HttpServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(HttpServer *, http_server_free);

/* Borrowed, must outlive the server; without one /metrics is 404. */
void http_server_set_metrics(HttpServer *s, MetricsRegistry *reg);
/* Without a readiness function /readyz is always 200. */
void http_server_set_ready(HttpServer *s, HttpReadyFunc f, void *userdata);
/* Same for /healthz (liveness); without one it is 200 while the loop runs. */
void http_server_set_live(HttpServer *s, HttpReadyFunc f, void *userdata);

/* Who may read /metrics. Called on the loop for each GET or HEAD of /metrics with the client
 * certificate of the connection (see HttpPeer) and the request's Authorization header (NULL when
 * it has none). PENDING: the answer is being sought (a review); the server holds the request,
 * without blocking anything else, and asks again after http_server_auth_settled(). Otherwise the
 * verdict stands; `*ret_reason` (borrowed, optional) becomes the body of a refusal. */
typedef enum HttpAuthVerdict {
        HTTP_AUTH_ALLOW,
        HTTP_AUTH_UNAUTHORIZED, /* 401: no credentials, or none the cluster knows */
        HTTP_AUTH_FORBIDDEN,    /* 403: known, but may not */
        HTTP_AUTH_UNAVAILABLE,  /* 503: the question could not be asked */
        HTTP_AUTH_PENDING,
} HttpAuthVerdict;

#define HTTP_PEER_GROUPS_MAX 8

/* The client certificate a request's connection presented. Only with a client CA configured;
 * otherwise no certificate is asked for and `presented` is false. */
typedef struct HttpPeer {
        bool presented; /* a certificate came with the TLS handshake */
        bool verified;  /* it chains to the client CA, is within its validity, may authenticate
                         * clients and names a user: then `user` and `groups` hold */
        char user[256]; /* the subject's CN, as kube-apiserver's x509 authenticator reads it */
        char groups[HTTP_PEER_GROUPS_MAX][128]; /* the subject's O values */
        size_t n_groups;
        char error[256]; /* why a certificate presented is not `verified` */
} HttpPeer;

typedef HttpAuthVerdict (*HttpAuthFunc)(void *userdata, const HttpPeer *peer, const char *authorization,
                                        const char **ret_reason);

/* Without one, /metrics is served to anyone who can connect. /healthz and /readyz always are
 * (the kubelet's probes carry no token), as library-go's always-allowed paths. */
void http_server_set_metrics_auth(HttpServer *s, HttpAuthFunc f, void *userdata);
/* Resumes every request held for an answer: each asks the auth function again. Never call
 * it from inside the auth function itself. */
void http_server_auth_settled(HttpServer *s);
/* Requests held for an answer now (tests). */
unsigned http_server_get_held(HttpServer *s);

uint16_t http_server_get_port(HttpServer *s);
/* Open client connections (tests wait on it; bounded by max_connections). */
unsigned http_server_get_connections(HttpServer *s);
