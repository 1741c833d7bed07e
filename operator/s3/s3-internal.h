/* What s3.c (settings, names, listings), request.c (one request on the loop,
 * retried) and objects.c (the operations) share; nothing outside operator/s3
 * sees it. */
#pragma once

#include <openssl/evp.h>

#include "base/buf.h"
#include "s3.h"

#define XML_MAX       (16 * 1024 * 1024)
#define DIGEST_SHA256 32
#define DIGEST_MD5    16
#define ETAG_MAX      48 /* hex MD5, "-", part count */
/* Review L2: a download larger than this is refused. */
#define DOWNLOAD_MAX (64ULL << 30)

/* The text of the first <tag> anywhere in xml (s3_xml_next()). */
char *s3_xml_get(const char *xml, const char *tag);
/* An ETag without its quotes, in place. */
char *s3_etag_unquote(char *etag);

int s3_digest(const EVP_MD *md, const void *p, size_t n, unsigned char *out);
/* Whether this process may compute MD5. A FIPS-enabled host refuses it (OpenSSL's FIPS provider
 * has no MD5): uploads then send x-amz-checksum-sha256, which the store checks and keeps, and
 * are checked by size instead of by their MD5 ETags. Asked once. */
bool s3_md5_available(void);
/* n bytes as 2n lower-case hex digits and a NUL. */
void s3_to_hex(const unsigned char *d, size_t n, char *out);

/* One operation's request, sent until it gets a final answer (request.c). */
typedef struct S3Request {
        const S3Store *s;
        const char *op; /* "PUT", "upload part", ... for messages */
        const char *method;
        const char *key; /* for messages */
        char *url;
        /* The body: `body_len` bytes of `body` in memory, or of the file `body_fd` from
         * `body_offset` on, whose SHA-256 (hex) the caller computed into `body_sha256`. */
        const char *body;
        int body_fd;
        uint64_t body_offset;
        uint64_t body_len;
        char body_sha256[2 * DIGEST_SHA256 + 1];
        char checksum_sha256[64]; /* base64 SHA-256 for x-amz-checksum-sha256; "" sends none */
        const char *content_type;
        bool sse;         /* send the store's server-side encryption headers (object creation) */
        int out_fd;       /* GET: the body goes here (-1: into resp) */
        uint64_t written; /* into out_fd */
        Buf resp;         /* a body that did not go to out_fd, and error bodies */
        long status;
        char etag[160];
        uint64_t length;
        bool have_length;
} S3Request;

S3Request s3_request_new(const S3Store *s, const char *op, const char *method, const char *key);
void s3_request_done(S3Request *q);
/* Sends q on the store's loop once per attempt until a final answer: 2xx -> 0;
 * 4xx -> S3's error; 5xx, 429 and transport errors are retried, then reported. */
int s3_request_perform(S3Request *q, char **ret_error);
/* S3's <Code> and <Message> from q's answer, with what to check for the common ones. */
int s3_request_error(const S3Request *q, char **ret_error);
