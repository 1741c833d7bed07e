/* An S3-compatible object store client for backups (etcd-backup-restore's
 * store, done in C): AWS Signature Version 4 by libcurl's own signer
 * (CURLOPT_AWS_SIGV4) with the payload's SHA-256 as x-amz-content-sha256,
 * single PUT for small objects and multipart upload (S3's 5 MiB minimum
 * part, at most 10000 parts) for large ones, every upload checked after the
 * fact (HEAD: the size, and the ETag against the MD5s we computed before
 * sending), listings (ListObjectsV2, all pages), downloads written
 * atomically and checked, deletes. Uploads and downloads stream between the
 * file and the network. The requests run on the store's loop, on its HTTP
 * stack: the TLS settings are the loop's (the TLS 1.2 floor; a caBundle as
 * the only CA) and the endpoint's name is resolved by c-ares (loop.h,
 * "Names"). Each call returns when it is done (loop_run_until()), so none
 * may be made from inside a callback of that loop: the commands that call
 * it run once on a node.
 *
 * Credentials come as etcd-backup-restore takes them: a directory (a mounted
 * Secret) with the files accessKeyID, secretAccessKey, region, endpoint and
 * s3ForcePathStyle (the last three optional), and ours beside them:
 * insecureHTTP (an http:// endpoint is refused without "true" there: a
 * backup holds every Secret of the cluster and its private keys),
 * serverSideEncryption and sseKMSKeyId (sent, signed, with every upload) and
 * backupKey (the HMAC key of the backups' checksum files, backup-manifest.h).
 * Errors name the operation, the object, S3's code and message, and what to
 * check. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "loop/loop.h"

#define S3_MIN_PART_SIZE     (5u * 1024 * 1024)
#define S3_DEFAULT_PART_SIZE (16u * 1024 * 1024)
#define S3_MAX_PART_SIZE     (512u * 1024 * 1024)
#define S3_MAX_PARTS         10000
#define S3_BACKUP_KEY_MIN    32 /* characters of backupKey */

typedef struct S3Store {
        char *endpoint;     /* "https://host[:port]" (no path); default https://s3.<region>.amazonaws.com */
        char *region;       /* default us-east-1 */
        char *bucket;       /* required */
        char *prefix;       /* "" or "a/b" (no leading or trailing '/'); every key is under it */
        char *access_key;   /* accessKeyID */
        char *secret_key;   /* secretAccessKey */
        char *ca_file;      /* optional: CA bundle for an https endpoint */
        char *dir;          /* where the credentials came from, for messages */
        char *backup_key;   /* backupKey: the HMAC key of the checksum files (NULL: none) */
        bool path_style;    /* https://host/bucket/key instead of https://bucket.host/key */
        bool insecure_http; /* insecureHTTP "true": an http:// endpoint is allowed */
        char *sse;          /* serverSideEncryption: NULL, "AES256" (SSE-S3) or "aws:kms" (SSE-KMS) */
        char *sse_kms_key_id; /* sseKMSKeyId: aws:kms only; NULL: the account's default KMS key */
        size_t part_size;     /* multipart parts (and the single-PUT limit); 0: S3_DEFAULT_PART_SIZE */
        Loop *loop; /* where its requests run: a reference, which s3_store_done() drops; required */
} S3Store;

void s3_store_done(S3Store *s);
/* S3's bucket naming rules: 3 to 63 of a-z 0-9 '.' '-', alphanumeric at both ends, no "..". */
bool s3_bucket_name_is_valid(const char *b);
/* A key prefix: "" or "a/b" (no leading or trailing '/', no empty, "." or ".." part, at most 512
 * bytes) of AWS's safe characters only: letters, digits and ! - _ . * ' ( ) /. */
bool s3_prefix_is_valid(const char *p);

/* Reads the credential files of `dir` (accessKeyID, secretAccessKey, and
 * optionally region, endpoint, s3ForcePathStyle, insecureHTTP, and caBundle:
 * the CA of an https endpoint no system CA signs). On failure *ret_error
 * names the file and the fix. The bucket and prefix are the caller's (flags). */
int s3_store_load_dir(const char *dir, S3Store *s, char **ret_error);
/* The commands that write or choose backups (cluster-backup's upload,
 * get-backup, gc) need backupKey: -ENOKEY naming the file and the fix. */
int s3_store_check_backup_key(const S3Store *s, char **ret_error);
/* Checks bucket, prefix, endpoint (https://, or http:// with insecure_http),
 * server-side encryption and part size; fills the defaults. Uploads with
 * `sse` set carry x-amz-server-side-encryption (and, for aws:kms with a key,
 * x-amz-server-side-encryption-aws-kms-key-id), signed with the request. */
int s3_store_check(S3Store *s, char **ret_error);

/* The full key of `name` under the prefix ("prefix/name"); NULL on OOM. */
char *s3_key(const S3Store *s, const char *name);
/* The URL of `key` (already full), or of the bucket when key is NULL, with
 * `query` (already canonical: sorted, encoded; may be NULL) appended. */
char *s3_url(const S3Store *s, const char *key, const char *query);
/* AWS URI encoding: every byte but A-Za-z0-9-_.~ as %XX (upper case); '/'
 * kept when keep_slash. NULL on OOM. */
char *s3_uri_encode(const char *s, bool keep_slash);

/* The text of the first <tag>...</tag> in xml from *pos on, entities decoded
 * (&amp; &lt; &gt; &quot; &apos; &#N; &#xN;); *pos moves past it. NULL when
 * there is none (or on OOM: errno ENOMEM). */
char *s3_xml_next(const char *xml, const char *tag, size_t *pos);

typedef struct S3Object {
        char *key; /* full key */
        uint64_t size;
        char *etag; /* without quotes */
        time_t last_modified;
} S3Object;

typedef struct S3ObjectList {
        S3Object *v;
        size_t n;
} S3ObjectList;

void s3_object_list_done(S3ObjectList *l);
/* Parses one ListObjectsV2 page into l (appending); *ret_next is the
 * continuation token when the listing is truncated, else NULL. */
int s3_parse_list_page(const char *xml, S3ObjectList *l, char **ret_next);

/* Every call below returns 0 or a negative errno-style code; on failure
 * *ret_error (when given) says what happened in one line. */

/* Uploads `path` as `key` (full key). Multipart above part_size. */
int s3_put_file(const S3Store *s, const char *key, const char *path, char **ret_error);
/* Downloads `key` to `path` (temp file, fsync, rename); -ENOENT when absent. */
int s3_get_file(const S3Store *s, const char *key, const char *path, char **ret_error);
/* A small object into memory (NUL-terminated): -ENOENT when absent, -E2BIG above max bytes. */
int s3_get_bytes(const S3Store *s, const char *key, size_t max, char **ret, size_t *ret_len,
                 char **ret_error);
/* Every object whose key starts with `prefix` (full; NULL: the store's prefix). */
int s3_list(const S3Store *s, const char *prefix, S3ObjectList *ret, char **ret_error);
int s3_head(const S3Store *s, const char *key, S3Object *ret, char **ret_error);
int s3_delete(const S3Store *s, const char *key, char **ret_error);
