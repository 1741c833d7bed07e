/* What loop.c (the sd-event and libcurl multi glue) and http.c (requests)
 * share; nothing outside operator/loop sees it. */
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
};

struct HttpRequest {
        unsigned n_ref;
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
        Buf resp;
        HttpDataFunc stream;
        bool long_lived;
        bool http1;
        HttpDoneFunc done;
        void *userdata;
        int write_error;
        long status;
        char errbuf[CURL_ERROR_SIZE];
};

/* curl's connection cache cap, after the count of long-lived streams changed. */
void loop_update_max_connections(Loop *l);
/* A transfer curl finished with `code`: the request completes. */
void http_transfer_done(HttpRequest *r, CURLcode code);
