/* What loop.c (the sd-event and libcurl multi glue), http.c (requests) and
 * names.c (their host names) share; nothing outside operator/loop sees it. */
#pragma once

#include <curl/curl.h>

#include "loop.h"

struct Loop {
        unsigned n_ref;
        sd_event *event;
        CURLM *multi;
        sd_event_source *timer;
        unsigned in_flight;
        unsigned long_lived;  /* of in_flight: watches and other idle-for-minutes streams */
        uint64_t connections; /* opened by finished transfers (loop_http_connections) */
        LoopResolveFunc resolve;
        LoopFreeFunc resolve_free;
        void *resolve_userdata;
};

typedef struct HttpResolving HttpResolving;

/* Fields by size, so that the struct has no holes (one per watch adds up). */
struct HttpRequest {
        Loop *loop;
        CURL *easy;
        char *method;
        char *url;
        char *body;
        size_t body_len;
        struct curl_slist *headers;
        struct curl_slist *resp_headers;
        usec_t timeout;
        HttpTls *tls;
        char *unix_socket;             /* connect here instead of the URL's host (a local etcd) */
        struct curl_slist *connect_to; /* "HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT" */
        struct curl_slist *resolve;    /* "NAME:PORT:ADDRESS,...": our answer for the URL's host */
        HttpResolving *resolving;      /* its name being looked up */
        sd_event_source *fail_later;   /* a failure met inside loop_http_start() */
        char *sigv4;                   /* CURLOPT_AWS_SIGV4's provider, its key ID and secret */
        char *sigv4_key_id;
        char *sigv4_secret;
        uint64_t body_fd_offset, body_fd_size, body_fd_sent; /* of body_fd */
        usec_t stall;
        HttpDataFunc stream;
        HttpDoneFunc done;
        void *userdata;
        long status;
        Buf resp;
        unsigned n_ref;
        int fail_error;
        int start_error; /* a failure inside loop_http_start() that cannot wait */
        int body_fd;     /* the body read from here instead of `body` */
        int write_error;
        bool starting; /* inside loop_http_start() */
        bool https_only;
        bool long_lived;
        bool http1;
        char errbuf[CURL_ERROR_SIZE];
};

/* curl's connection cache cap, after the count of long-lived streams changed. */
void loop_update_max_connections(Loop *l);
/* A transfer curl finished with `code`: the request completes. */
void http_transfer_done(HttpRequest *r, CURLcode code);
/* Hands an attached request (http.c's request_attach()) to curl. */
int http_transfer_start(HttpRequest *r);
/* Completes an attached request with `error`: at once, or from the loop when
 * inside loop_http_start() (< 0 only then, when that cannot be arranged). */
int http_request_fail(HttpRequest *r, int error);

/* The name curl would resolve for the request, and its port; *ret_name NULL
 * when there is none (an IP address, a unix socket, a connect-to entry, or a
 * URL curl will refuse itself). */
int http_request_target(HttpRequest *r, char **ret_name, unsigned *ret_port);
/* Whether a CURLOPT_CONNECT_TO entry connects to an IP address. */
bool http_connect_to_is_address(const char *entry);
/* Looks up the name of an attached request; its transfer starts with the answer. */
int http_resolve_start(HttpRequest *r, const char *name, unsigned port);
/* The request leaves the loop: an answer still to come finds nobody. */
void http_resolve_abandon(HttpRequest *r);
