/* The S3 client (s3.h). */
#include "s3.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/timeutil.h"

#define SETTING_MAX  (64 * 1024)
#define XML_MAX      (16 * 1024 * 1024)
#define ATTEMPTS     4
#define CONNECT_SECS 10L
#define STALL_SECS   60L  /* a transfer below 1 byte/s for this long is dead */
#define REQUEST_SECS 300L /* a whole LIST, HEAD, DELETE or multipart call (not a transfer) */
/* Review L2: what a hostile or broken endpoint can make us do. A listing of more pages
 * (1000 keys each) than this is refused, as is a download larger than this. */
#define LIST_MAX_PAGES 1000
#define DOWNLOAD_MAX   (64ULL << 30)
#define DIGEST_SHA256  32
#define DIGEST_MD5     16
#define ETAG_MAX       48 /* hex MD5, "-", part count */

/* ---- settings ---- */

void s3_store_done(S3Store *s)
{
        free(s->endpoint);
        free(s->region);
        free(s->bucket);
        free(s->prefix);
        free(s->access_key);
        if (s->secret_key)
                explicit_bzero(s->secret_key, strlen(s->secret_key));
        free(s->secret_key);
        free(s->ca_file);
        free(s->dir);
        free(s->sse);
        free(s->sse_kms_key_id);
        if (s->backup_key)
                explicit_bzero(s->backup_key, strlen(s->backup_key));
        free(s->backup_key);
        *s = (S3Store){};
}

/* One credential file, surrounding whitespace trimmed; *ret NULL when it is absent and optional. */
static int read_setting(const char *dir, const char *name, bool required, char **ret, char **ret_error)
{
        _cleanup_free_ char *path = strdup_printf("%s/%s", dir, name), *data = NULL;
        int r;

        *ret = NULL;
        if (!path)
                return -ENOMEM;
        r = read_full_file(path, SETTING_MAX, &data, NULL);
        if (r == -ENOENT && !required)
                return 0;
        if (r < 0)
                return set_error(ret_error, r, "cannot read %s: %s%s", path,
                                 r == -E2BIG ? "larger than 64 KiB" : strerror(-r),
                                 r == -ENOENT ? " (the S3 credentials Secret needs the keys accessKeyID and "
                                                "secretAccessKey)"
                                              : "");
        char *b = data, *e = data + strlen(data);
        while (*b && isspace((unsigned char) *b))
                b++;
        while (e > b && isspace((unsigned char) e[-1]))
                *--e = 0;
        if (!*b) {
                if (!required)
                        return 0;
                return set_error(ret_error, -EINVAL, "%s is empty; put the %s there", path, name);
        }
        *ret = strdup(b);
        explicit_bzero(data, strlen(data));
        return *ret ? 0 : -ENOMEM;
}

int s3_store_load_dir(const char *dir, S3Store *s, char **ret_error)
{
        _cleanup_free_ char *style = NULL, *insecure = NULL;
        int r;

        if (!(s->dir = strdup(dir)))
                return -ENOMEM;
        if ((r = read_setting(dir, "accessKeyID", true, &s->access_key, ret_error)) < 0 ||
            (r = read_setting(dir, "secretAccessKey", true, &s->secret_key, ret_error)) < 0 ||
            (r = read_setting(dir, "region", false, &s->region, ret_error)) < 0 ||
            (r = read_setting(dir, "endpoint", false, &s->endpoint, ret_error)) < 0 ||
            (r = read_setting(dir, "s3ForcePathStyle", false, &style, ret_error)) < 0 ||
            (r = read_setting(dir, "insecureHTTP", false, &insecure, ret_error)) < 0 ||
            (r = read_setting(dir, "backupKey", false, &s->backup_key, ret_error)) < 0 ||
            (r = read_setting(dir, "serverSideEncryption", false, &s->sse, ret_error)) < 0 ||
            (r = read_setting(dir, "sseKMSKeyId", false, &s->sse_kms_key_id, ret_error)) < 0)
                return r;
        if (style && !streq(style, "true") && !streq(style, "false"))
                return set_error(ret_error, -EINVAL, "%s/s3ForcePathStyle is \"%s\"; write true or false",
                                 dir, style);
        s->path_style = streq_ptr(style, "true");
        if (insecure && !streq(insecure, "true") && !streq(insecure, "false"))
                return set_error(ret_error, -EINVAL, "%s/insecureHTTP is \"%s\"; write true or false", dir,
                                 insecure);
        s->insecure_http = streq_ptr(insecure, "true");
        /* caBundle: the CA that signs an https endpoint no system CA signs (a private MinIO). */
        _cleanup_free_ char *ca = strdup_printf("%s/caBundle", dir);
        if (!ca)
                return -ENOMEM;
        if (access(ca, R_OK) == 0)
                s->ca_file = TAKE_PTR(ca);
        return 0;
}

int s3_store_check_backup_key(const S3Store *s, char **ret_error)
{
        assert_return(s, -EINVAL);
        if (s->backup_key && strlen(s->backup_key) >= S3_BACKUP_KEY_MIN)
                return 0;
        return set_error(ret_error, -ENOKEY,
                         "%s/backupKey is %s: a backup in a store counts only with a checksum file signed "
                         "by this cluster's own key. Write at least %d random characters there (e.g. "
                         "`openssl rand -base64 32`), a different key for each cluster that shares the "
                         "bucket, and keep a copy with the credentials for disaster recovery",
                         strempty(s->dir), s->backup_key ? "too short" : "missing", S3_BACKUP_KEY_MIN);
}

bool s3_bucket_name_is_valid(const char *b)
{
        size_t n = b ? strlen(b) : 0;
        if (n < 3 || n > 63 || !isalnum((unsigned char) b[0]) || !isalnum((unsigned char) b[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(islower((unsigned char) b[i]) || isdigit((unsigned char) b[i]) || b[i] == '-' ||
                      b[i] == '.'))
                        return false;
        return !strstr(b, "..");
}

bool s3_prefix_is_valid(const char *p)
{
        if (!*p)
                return true;
        if (p[0] == '/' || endswith(p, "/") || strstr(p, "//") || strlen(p) > 512)
                return false;
        for (const char *seg = p; seg; seg = strchr(seg, '/') ? strchr(seg, '/') + 1 : NULL) {
                size_t len = strcspn(seg, "/");
                if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
                        return false;
        }
        /* AWS's "safe characters" for object key names only: a prefix travels in URLs, in
         * signatures, in Job arguments and in messages, and needs no quoting in any of them. */
        for (const char *c = p; *c; c++)
                if (!isalnum((unsigned char) *c) && !strchr("!-_.*'()/", *c))
                        return false;
        return true;
}

int s3_store_check(S3Store *s, char **ret_error)
{
        if (!s3_bucket_name_is_valid(s->bucket))
                return set_error(ret_error, -EINVAL,
                                 "bucket \"%s\" is not an S3 bucket name (3 to 63 of a-z, 0-9, '.' and '-', "
                                 "starting and ending with a letter or digit)",
                                 strempty(s->bucket));
        if (!s->prefix && !(s->prefix = strdup("")))
                return -ENOMEM;
        if (!s3_prefix_is_valid(s->prefix))
                return set_error(ret_error, -EINVAL,
                                 "prefix \"%s\" is not a key prefix (no leading or trailing '/', no empty, "
                                 "\".\" or \"..\" part, no control characters), e.g. clusters/prod-1",
                                 s->prefix);
        if (!s->region && !(s->region = strdup("us-east-1")))
                return -ENOMEM;
        for (const char *c = s->region; *c; c++)
                if (!isalnum((unsigned char) *c) && *c != '-')
                        return set_error(ret_error, -EINVAL,
                                         "%s/region \"%s\" is not a region name (e.g. "
                                         "us-east-1)",
                                         strempty(s->dir), s->region);
        if (!s->endpoint && !(s->endpoint = strdup_printf("https://s3.%s.amazonaws.com", s->region)))
                return -ENOMEM;
        size_t n = strlen(s->endpoint);
        while (n > 0 && s->endpoint[n - 1] == '/')
                s->endpoint[--n] = 0;
        const char *host = startswith(s->endpoint, "https://")  ? s->endpoint + 8
                           : startswith(s->endpoint, "http://") ? s->endpoint + 7
                                                                : NULL;
        if (!host || !*host || strpbrk(host, "/?#@ \t"))
                return set_error(
                        ret_error, -EINVAL,
                        "%s/endpoint \"%s\" is not an S3 endpoint URL (https://HOST[:PORT], no path), "
                        "e.g. https://s3.eu-west-1.amazonaws.com",
                        strempty(s->dir), s->endpoint);
        /* Review M1: a backup is every Secret of the cluster and the etcd and kube-apiserver
         * private keys; over http anyone on the path reads them (SigV4 protects only the
         * request's integrity). Only a setting that says so in so many words allows it. */
        if (startswith(s->endpoint, "http://") && !s->insecure_http)
                return set_error(ret_error, -EPERM,
                                 "%s/endpoint \"%s\" is plain http: the backups (every Secret of the "
                                 "cluster, the etcd and kube-apiserver private keys) would cross the "
                                 "network unencrypted. Use an https:// endpoint, or, for a store on a "
                                 "network you trust, write true into %s/insecureHTTP",
                                 strempty(s->dir), s->endpoint, strempty(s->dir));
        if (s->sse && !streq(s->sse, "AES256") && !streq(s->sse, "aws:kms"))
                return set_error(
                        ret_error, -EINVAL,
                        "%s/serverSideEncryption \"%s\" is not AES256 (SSE-S3) or aws:kms (SSE-KMS)",
                        strempty(s->dir), s->sse);
        if (s->sse_kms_key_id && !streq_ptr(s->sse, "aws:kms"))
                return set_error(ret_error, -EINVAL,
                                 "%s/sseKMSKeyId is set but %s/serverSideEncryption is not aws:kms: write "
                                 "aws:kms there, or remove sseKMSKeyId",
                                 strempty(s->dir), strempty(s->dir));
        if (s->sse_kms_key_id) {
                size_t len = strlen(s->sse_kms_key_id);
                bool ok = len <= 2048;
                for (const char *c = s->sse_kms_key_id; ok && *c; c++)
                        ok = isalnum((unsigned char) *c) || strchr(":/-_.", *c);
                if (!ok)
                        return set_error(ret_error, -EINVAL,
                                         "%s/sseKMSKeyId is not a KMS key ID, alias or ARN (letters, digits "
                                         "and : / - _ . only), e.g. "
                                         "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-"
                                         "1234567890ab",
                                         strempty(s->dir));
                /* Before 8.10.0 libcurl's SigV4 signer sorts canonical headers as whole
                 * "name:value" lines, so x-amz-server-side-encryption-aws-kms-key-id goes before
                 * x-amz-server-side-encryption and S3 answers SignatureDoesNotMatch (curl #14370). */
                const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
                if (cv->version_num < 0x080a00)
                        return set_error(
                                ret_error, -EOPNOTSUPP,
                                "%s/sseKMSKeyId needs libcurl 8.10.0 or newer to be signed as S3 "
                                "checks it (this is libcurl %s); remove sseKMSKeyId to encrypt with "
                                "the account's default KMS key (or make the key the bucket's default "
                                "encryption key)",
                                strempty(s->dir), cv->version);
        }
        if (s->part_size == 0)
                s->part_size = S3_DEFAULT_PART_SIZE;
        if (s->part_size < S3_MIN_PART_SIZE || s->part_size > S3_MAX_PART_SIZE)
                return set_error(ret_error, -EINVAL, "part size %zu is outside S3's %u MiB to %u MiB",
                                 s->part_size, S3_MIN_PART_SIZE >> 20, S3_MAX_PART_SIZE >> 20);
        return 0;
}

/* ---- names ---- */

char *s3_uri_encode(const char *s, bool keep_slash)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(s);
        char *out = malloc(n * 3 + 1), *o = out;
        if (!out)
                return NULL;
        for (const unsigned char *c = (const unsigned char *) s; *c; c++) {
                if (isalnum(*c) || *c == '-' || *c == '_' || *c == '.' || *c == '~' ||
                    (keep_slash && *c == '/')) {
                        *o++ = (char) *c;
                        continue;
                }
                *o++ = '%';
                *o++ = hex[*c >> 4];
                *o++ = hex[*c & 15];
        }
        *o = 0;
        return out;
}

char *s3_key(const S3Store *s, const char *name)
{
        return s->prefix && *s->prefix ? strdup_printf("%s/%s", s->prefix, name) : strdup(name);
}

char *s3_url(const S3Store *s, const char *key, const char *query)
{
        _cleanup_free_ char *k = key ? s3_uri_encode(key, true) : strdup("");
        const char *q = query && *query ? "?" : "";
        if (!k)
                return NULL;
        if (s->path_style)
                return strdup_printf("%s/%s/%s%s%s", s->endpoint, s->bucket, k, q, query ? query : "");
        const char *host = strstr(s->endpoint, "://") + 3;
        return strdup_printf("%.*s%s.%s/%s%s%s", (int) (host - s->endpoint), s->endpoint, s->bucket, host, k,
                             q, query ? query : "");
}

/* ---- XML ---- */

static char *xml_decode(const char *b, size_t n)
{
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (b[i] != '&') {
                        *o++ = b[i];
                        continue;
                }
                const char *semi = memchr(b + i, ';', n - i);
                size_t len = semi ? (size_t) (semi - (b + i)) + 1 : 0;
                static const struct {
                        const char *name;
                        char c;
                } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
                bool done = false;
                for (size_t e = 0; e < ELEMENTSOF(ents) && !done; e++)
                        if (len == strlen(ents[e].name) && strncmp(b + i, ents[e].name, len) == 0) {
                                *o++ = ents[e].c;
                                done = true;
                        }
                if (!done && len > 3 && b[i + 1] == '#') {
                        bool x = b[i + 2] == 'x' || b[i + 2] == 'X';
                        char *end;
                        unsigned long cp = strtoul(b + i + (x ? 3 : 2), &end, x ? 16 : 10);
                        if (end == semi && cp > 0 && cp < 0x80) { /* S3 escapes control characters so */
                                *o++ = (char) cp;
                                done = true;
                        }
                }
                if (!done) { /* not an entity we know: kept as it is */
                        *o++ = '&';
                        continue;
                }
                i += len - 1;
        }
        *o = 0;
        return out;
}

char *s3_xml_next(const char *xml, const char *tag, size_t *pos)
{
        char open[80], close[80];
        (void) snprintf(open, sizeof open, "<%s>", tag);
        (void) snprintf(close, sizeof close, "</%s>", tag);
        const char *b = xml ? strstr(xml + *pos, open) : NULL;
        if (!b)
                return NULL;
        b += strlen(open);
        const char *e = strstr(b, close);
        if (!e)
                return NULL;
        *pos = (size_t) (e - xml) + strlen(close);
        char *v = xml_decode(b, (size_t) (e - b));
        if (!v)
                errno = ENOMEM;
        return v;
}

/* The text of the first <tag> anywhere in xml. */
static char *xml_get(const char *xml, const char *tag)
{
        size_t pos = 0;
        return s3_xml_next(xml, tag, &pos);
}

void s3_object_list_done(S3ObjectList *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->v[i].key);
                free(l->v[i].etag);
        }
        free(l->v);
        *l = (S3ObjectList){};
}

static char *unquote(char *etag)
{
        size_t n = etag ? strlen(etag) : 0;
        if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
                memmove(etag, etag + 1, n - 2);
                etag[n - 2] = 0;
        }
        return etag;
}

int s3_parse_list_page(const char *xml, S3ObjectList *l, char **ret_next)
{
        size_t pos = 0;
        char *block;

        *ret_next = NULL;
        while ((block = s3_xml_next(xml, "Contents", &pos))) {
                _cleanup_free_ char *b = block, *size = xml_get(b, "Size"),
                                    *mod = xml_get(b, "LastModified");
                S3Object o = {.key = xml_get(b, "Key"), .etag = unquote(xml_get(b, "ETag"))};
                usec_t t = 0;
                char *end = NULL;
                if (!o.key || !size) {
                        free(o.key);
                        free(o.etag);
                        return -EBADMSG;
                }
                errno = 0;
                o.size = strtoull(size, &end, 10);
                if (errno || !end || *end || (mod && parse_rfc3339(mod, &t) < 0)) {
                        free(o.key);
                        free(o.etag);
                        return -EBADMSG;
                }
                o.last_modified = (time_t) (t / USEC_PER_SEC);
                S3Object *v = realloc(l->v, (l->n + 1) * sizeof *v);
                if (!v) {
                        free(o.key);
                        free(o.etag);
                        return -ENOMEM;
                }
                l->v = v;
                l->v[l->n++] = o;
        }
        if (errno == ENOMEM)
                return -ENOMEM;
        _cleanup_free_ char *truncated = xml_get(xml, "IsTruncated");
        if (streq_ptr(truncated, "true")) {
                *ret_next = xml_get(xml, "NextContinuationToken");
                if (!*ret_next)
                        return -EBADMSG; /* truncated without a way on: the listing would be partial */
        }
        return 0;
}

/* ---- digests ---- */

static int digest(const EVP_MD *md, const void *p, size_t n, unsigned char *out)
{
        unsigned int len = 0;
        return EVP_Digest(p, n, out, &len, md, NULL) == 1 ? 0 : -EIO;
}

static void to_hex(const unsigned char *d, size_t n, char *out)
{
        for (size_t i = 0; i < n; i++)
                (void) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* ---- one request ---- */

typedef struct Req {
        const S3Store *s;
        const char *op; /* "PUT", "upload part 3 of", ... for messages */
        const char *method;
        const char *key; /* for messages */
        char *url;
        const char *body; /* request body (may be NULL: none) */
        size_t body_len, body_off;
        const char *content_type;
        bool sse;         /* send the store's server-side encryption headers (object creation) */
        int out_fd;       /* GET: the body goes here (-1: into resp) */
        uint64_t written; /* into out_fd */
        Buf resp;
        long status;
        char etag[160];
        uint64_t length;
        bool have_length;
        bool too_big; /* the body went over resp's maximum */
} Req;

static size_t on_read(char *buf, size_t size, size_t n, void *userdata)
{
        Req *q = userdata;
        size_t k = MIN(size * n, q->body_len - q->body_off);
        memcpy(buf, q->body + q->body_off, k);
        q->body_off += k;
        return k;
}

static size_t on_write(char *p, size_t size, size_t n, void *userdata)
{
        Req *q = userdata;
        size_t len = size * n;
        if (q->out_fd >= 0 && q->status / 100 == 2) {
                if ((q->written += len) > DOWNLOAD_MAX)
                        return 0; /* curl ends the transfer: a write error */
                for (size_t off = 0; off < len;) {
                        ssize_t k = write(q->out_fd, p + off, len - off);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0)
                                return 0;
                        off += (size_t) k;
                }
                return len;
        }
        if (buf_append(&q->resp, p, len) < 0) {
                q->too_big = true;
                return 0;
        }
        return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata)
{
        Req *q = userdata;
        size_t len = size * n;
        char line[512];
        if (len >= sizeof line)
                return len;
        memcpy(line, p, len);
        line[len] = 0;
        line[strcspn(line, "\r\n")] = 0;
        if (startswith(line, "HTTP/")) {
                /* a new response (after a 100 Continue): forget the last one's headers */
                q->etag[0] = 0;
                q->have_length = false;
                (void) sscanf(line, "HTTP/%*s %ld", &q->status);
                return len;
        }
        char *colon = strchr(line, ':');
        if (!colon)
                return len;
        *colon = 0;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
                v++;
        if (strcasecmp(line, "etag") == 0) {
                (void) snprintf(q->etag, sizeof q->etag, "%s", v);
                (void) unquote(q->etag);
        } else if (strcasecmp(line, "content-length") == 0) {
                char *end;
                errno = 0;
                q->length = strtoull(v, &end, 10);
                q->have_length = !errno && end != v;
        }
        return len;
}

/* S3's <Code> and <Message>, with what to check for the common ones. */
static int s3_error(const Req *q, char **ret_error)
{
        _cleanup_free_ char *code = q->resp.data ? xml_get(q->resp.data, "Code") : NULL,
                            *msg = q->resp.data ? xml_get(q->resp.data, "Message") : NULL, *hint = NULL;
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

/* Sends q once per attempt until a final answer: 2xx -> 0; 4xx -> S3's error;
 * 5xx, 429 and transport errors are retried, then reported. */
static int perform(Req *q, char **ret_error)
{
        char sigv4[128], hash_hdr[128], ctype[128], sse_hdr[64], kms_hdr[2200];
        unsigned char sha[DIGEST_SHA256];
        char sha_hex[2 * DIGEST_SHA256 + 1];
        char curl_err[CURL_ERROR_SIZE];

        if (digest(EVP_sha256(), q->body ? q->body : "", q->body ? q->body_len : 0, sha) < 0)
                return set_error(ret_error, -EIO, "SHA-256 failed");
        to_hex(sha, sizeof sha, sha_hex);
        (void) snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", q->s->region);
        (void) snprintf(hash_hdr, sizeof hash_hdr, "x-amz-content-sha256: %s", sha_hex);
        (void) snprintf(ctype, sizeof ctype, "Content-Type: %s", q->content_type ? q->content_type : "");
        /* x-amz-* headers: curl's SigV4 signer signs every header set here (the peer checks). */
        bool sse = q->sse && q->s->sse, kms = sse && q->s->sse_kms_key_id;
        (void) snprintf(sse_hdr, sizeof sse_hdr, "x-amz-server-side-encryption: %s", strempty(q->s->sse));
        (void) snprintf(kms_hdr, sizeof kms_hdr, "x-amz-server-side-encryption-aws-kms-key-id: %s",
                        strempty(q->s->sse_kms_key_id));

        for (int attempt = 1;; attempt++) {
                CURL *c = curl_easy_init();
                struct curl_slist *h = curl_slist_append(NULL, hash_hdr);
                if (h &&
                    ((q->content_type && !curl_slist_append(h, ctype)) ||
                     (sse && !curl_slist_append(h, sse_hdr)) || (kms && !curl_slist_append(h, kms_hdr)))) {
                        curl_slist_free_all(h);
                        h = NULL;
                }
                if (!c || !h) {
                        curl_slist_free_all(h);
                        curl_easy_cleanup(c);
                        return -ENOMEM;
                }
                buf_reset(&q->resp);
                q->status = 0;
                q->body_off = 0;
                q->etag[0] = 0;
                q->have_length = false;
                q->too_big = false;
                curl_err[0] = 0;
                (void) curl_easy_setopt(c, CURLOPT_URL, q->url);
                (void) curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4);
                (void) curl_easy_setopt(c, CURLOPT_USERNAME, q->s->access_key);
                (void) curl_easy_setopt(c, CURLOPT_PASSWORD, q->s->secret_key);
                (void) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
                (void) curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
                (void) curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_SECS);
                (void) curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
                (void) curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, STALL_SECS);
                (void) curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
                (void) curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
                (void) curl_easy_setopt(c, CURLOPT_WRITEDATA, q);
                (void) curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
                (void) curl_easy_setopt(c, CURLOPT_HEADERDATA, q);
                (void) curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR,
                                        q->s->insecure_http ? "http,https" : "https");
                (void) curl_easy_setopt(c, CURLOPT_SSLVERSION, (long) CURL_SSLVERSION_TLSv1_2); /* L5 */
                if (q->s->ca_file) {
                        /* Only this bundle, not the system's CA directory too (as the AWS SDKs'
                         * custom CA bundle replaces the system pool). */
                        (void) curl_easy_setopt(c, CURLOPT_CAINFO, q->s->ca_file);
                        (void) curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
                }
                if (streq(q->method, "PUT")) {
                        (void) curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
                        (void) curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
                        (void) curl_easy_setopt(c, CURLOPT_READDATA, q);
                        (void) curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t) q->body_len);
                } else if (streq(q->method, "POST")) {
                        (void) curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body ? q->body : "");
                        (void) curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) q->body_len);
                } else if (streq(q->method, "HEAD")) {
                        (void) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
                } else if (!streq(q->method, "GET")) {
                        (void) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
                }
                if (q->out_fd >= 0)
                        (void) curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) DOWNLOAD_MAX);
                else if (!streq(q->method, "PUT"))
                        (void) curl_easy_setopt(c, CURLOPT_TIMEOUT, REQUEST_SECS);
                if (q->out_fd >= 0) { /* a retried download starts over */
                        q->written = 0;
                        if (ftruncate(q->out_fd, 0) < 0 || lseek(q->out_fd, 0, SEEK_SET) < 0) {
                                curl_slist_free_all(h);
                                curl_easy_cleanup(c);
                                return set_error(ret_error, -errno, "cannot rewind the download: %m");
                        }
                }
                CURLcode cc = curl_easy_perform(c);
                (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &q->status);
                curl_slist_free_all(h);
                curl_easy_cleanup(c);

                if (q->too_big && q->status / 100 == 2)
                        return set_error(ret_error, -E2BIG, "S3 %s s3://%s/%s: larger than %zu bytes", q->op,
                                         q->s->bucket, strempty(q->key), q->resp.max);
                if (cc == CURLE_FILESIZE_EXCEEDED || (q->out_fd >= 0 && q->written > DOWNLOAD_MAX))
                        return set_error(ret_error, -EFBIG,
                                         "S3 GET s3://%s/%s: larger than %llu GiB; refusing to download it",
                                         q->s->bucket, strempty(q->key), DOWNLOAD_MAX >> 30);
                bool transient = cc != CURLE_OK || q->status >= 500 || q->status == 429;
                if (!transient && q->status / 100 == 2)
                        return 0;
                if (!transient)
                        return s3_error(q, ret_error);
                if (attempt >= ATTEMPTS) {
                        if (cc != CURLE_OK)
                                return set_error(ret_error, -EHOSTUNREACH,
                                                 "S3 %s s3://%s/%s at %s: %s (after %d "
                                                 "attempts; check the endpoint in %s)",
                                                 q->op, q->s->bucket, strempty(q->key), q->s->endpoint,
                                                 *curl_err ? curl_err : curl_easy_strerror(cc), attempt,
                                                 strempty(q->s->dir));
                        return s3_error(q, ret_error);
                }
                usec_t delay = (usec_t) 500 * 1000 << (attempt - 1);
                log_warning(
                        "S3 %s s3://%s/%s: %s; retrying in %.1f s", q->op, q->s->bucket, strempty(q->key),
                        cc != CURLE_OK ? (*curl_err ? curl_err : curl_easy_strerror(cc)) : "server error",
                        (double) delay / USEC_PER_SEC);
                (void) usleep((useconds_t) delay);
        }
}

static Req req_new(const S3Store *s, const char *op, const char *method, const char *key)
{
        return (Req){
                .s = s, .op = op, .method = method, .key = key, .out_fd = -1, .resp = BUF_INIT(XML_MAX)};
}

static void req_done(Req *q)
{
        free(q->url);
        buf_free(&q->resp);
}

/* ---- operations ---- */

int s3_head(const S3Store *s, const char *key, S3Object *ret, char **ret_error)
{
        _cleanup_(req_done) Req q = req_new(s, "HEAD", "HEAD", key);
        int r;
        if (!(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        if ((r = perform(&q, ret_error)) < 0)
                return r;
        *ret = (S3Object){.size = q.length, .etag = strdup(q.etag)};
        if (!(ret->key = strdup(key)) || !ret->etag) {
                free(ret->key);
                free(ret->etag);
                return -ENOMEM;
        }
        return 0;
}

int s3_delete(const S3Store *s, const char *key, char **ret_error)
{
        _cleanup_(req_done) Req q = req_new(s, "DELETE", "DELETE", key);
        if (!(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        return perform(&q, ret_error);
}

int s3_list(const S3Store *s, const char *prefix, S3ObjectList *ret, char **ret_error)
{
        _cleanup_free_ char *token = NULL, *pfx = NULL, *last = NULL;
        int r;

        *ret = (S3ObjectList){};
        pfx = prefix ? strdup(prefix) : (*s->prefix ? strdup_printf("%s/", s->prefix) : strdup(""));
        if (!pfx)
                return -ENOMEM;
        for (unsigned page = 1;; page++) {
                _cleanup_(req_done) Req q = req_new(s, "LIST", "GET", pfx);
                _cleanup_free_ char *enc_pfx = s3_uri_encode(pfx, false),
                                    *enc_tok = token ? s3_uri_encode(token, false) : NULL, *query = NULL;
                if (!enc_pfx || (token && !enc_tok))
                        return -ENOMEM;
                /* Canonical: sorted by name, every value encoded. */
                query = token ? strdup_printf("continuation-token=%s&list-type=2&prefix=%s", enc_tok,
                                              enc_pfx)
                              : strdup_printf("list-type=2&prefix=%s", enc_pfx);
                if (!query || !(q.url = s3_url(s, NULL, query)))
                        return -ENOMEM;
                if ((r = perform(&q, ret_error)) < 0)
                        goto fail;
                token = mfree(token);
                r = s3_parse_list_page(q.resp.data ? q.resp.data : "", ret, &token);
                if (r < 0) {
                        (void) set_error(ret_error, r, "S3 LIST s3://%s/%s: %s", s->bucket, pfx,
                                         r == -ENOMEM ? "out of memory"
                                                      : "the listing is not what S3 sends");
                        goto fail;
                }
                if (!token)
                        return 0;
                /* An endpoint that answers "truncated" for ever would keep us (and our memory)
                 * here for ever: a token seen just before, or too many pages, ends it. */
                if (streq_ptr(token, last) || page >= LIST_MAX_PAGES) {
                        r = set_error(ret_error, -ELOOP,
                                      "S3 LIST s3://%s/%s: %s after %u pages; the endpoint is not "
                                      "behaving as S3 does",
                                      s->bucket, pfx,
                                      streq_ptr(token, last) ? "the same continuation token again"
                                                             : "still truncated",
                                      page);
                        goto fail;
                }
                free(last);
                last = strdup(token);
                if (!last) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
fail:
        s3_object_list_done(ret);
        return r;
}

int s3_get_file(const S3Store *s, const char *key, const char *path, char **ret_error)
{
        _cleanup_(req_done) Req q = req_new(s, "GET", "GET", key);
        _cleanup_free_ char *tmp = strdup_printf("%s.tmp.XXXXXX", path);
        struct stat st;
        int r;

        if (!tmp || !(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        q.out_fd = mkostemp(tmp, O_CLOEXEC);
        if (q.out_fd < 0)
                return set_error(ret_error, -errno, "cannot create %s: %m", tmp);
        r = perform(&q, ret_error);
        if (r >= 0 && fstat(q.out_fd, &st) < 0)
                r = set_error(ret_error, -errno, "cannot stat %s: %m", tmp);
        if (r >= 0 && q.have_length && (uint64_t) st.st_size != q.length)
                r = set_error(ret_error, -EIO, "S3 GET s3://%s/%s: got %jd bytes of %" PRIu64, s->bucket,
                              key, (intmax_t) st.st_size, q.length);
        if (r >= 0 && fsync(q.out_fd) < 0)
                r = set_error(ret_error, -errno, "cannot write %s: %m", tmp);
        (void) close(q.out_fd);
        if (r >= 0 && (r = rename_durable(tmp, path)) < 0)
                r = set_error(ret_error, r, "cannot rename %s to %s: %s", tmp, path, strerror(-r));
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

int s3_get_bytes(const S3Store *s, const char *key, size_t max, char **ret, size_t *ret_len,
                 char **ret_error)
{
        _cleanup_(req_done) Req q = req_new(s, "GET", "GET", key);
        int r;

        assert_return(s && key && ret, -EINVAL);
        q.resp = BUF_INIT(max);
        if (!(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        if ((r = perform(&q, ret_error)) < 0)
                return r;
        if (ret_len)
                *ret_len = q.resp.len;
        *ret = q.resp.data ? buf_steal(&q.resp) : strdup("");
        return *ret ? 0 : -ENOMEM;
}

/* Reads up to n bytes at off. */
static int read_at(int fd, char *buf, size_t n, uint64_t off, size_t *ret)
{
        size_t got = 0;
        while (got < n) {
                ssize_t k = pread(fd, buf + got, n - got, (off_t) (off + got));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                got += (size_t) k;
        }
        *ret = got;
        return 0;
}

/* The object as uploaded is the file: its size, and its ETag where S3
 * computes ETags as MD5s (single PUT: the MD5; multipart: the MD5 of the
 * parts' MD5s, "-N", as S3, MinIO and Ceph do; `alt_etag`, the whole
 * object's MD5, is what some stores such as s3rver give instead). */
static int check_uploaded(const S3Store *s, const char *key, uint64_t size, const char *want_etag,
                          const char *alt_etag, char **ret_error)
{
        S3Object o = {};
        int r = s3_head(s, key, &o, ret_error);
        if (r < 0)
                return r;
        /* With SSE-KMS the ETag is no MD5 of the content (AWS documents it): the size only. */
        bool etag_is_md5 = !streq_ptr(s->sse, "aws:kms");
        if (o.size != size)
                r = set_error(ret_error, -EIO,
                              "S3 PUT s3://%s/%s: the stored object has %" PRIu64
                              " bytes, the file %" PRIu64,
                              s->bucket, key, o.size, size);
        else if (etag_is_md5 && !streq_ptr(o.etag, want_etag) && !(alt_etag && streq_ptr(o.etag, alt_etag)))
                r = set_error(ret_error, -EIO,
                              "S3 PUT s3://%s/%s: the stored object's ETag is %s, what was sent has %s (the "
                              "content differs, or the bucket encrypts with SSE-KMS by default: then write "
                              "aws:kms into serverSideEncryption in the credentials)",
                              s->bucket, key, strempty(o.etag), want_etag);
        free(o.key);
        free(o.etag);
        return r;
}

static int put_single(const S3Store *s, const char *key, int fd, uint64_t size, char **ret_error)
{
        _cleanup_(req_done) Req q = req_new(s, "PUT", "PUT", key);
        _cleanup_free_ char *data = malloc(MAX(size, (uint64_t) 1));
        unsigned char md5[DIGEST_MD5];
        char etag[2 * DIGEST_MD5 + 1];
        size_t got = 0;
        int r;

        if (!data || !(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        if ((r = read_at(fd, data, size, 0, &got)) < 0 || got != size)
                return set_error(ret_error, r < 0 ? r : -EIO, "cannot read the file to upload: %s",
                                 r < 0 ? strerror(-r) : "it shrank while being read");
        if (digest(EVP_md5(), data, size, md5) < 0)
                return set_error(ret_error, -EIO, "MD5 failed");
        to_hex(md5, sizeof md5, etag);
        q.body = data;
        q.body_len = size;
        q.content_type = "application/octet-stream";
        q.sse = true;
        if ((r = perform(&q, ret_error)) < 0)
                return r;
        return check_uploaded(s, key, size, etag, NULL, ret_error);
}

static void abort_upload(const S3Store *s, const char *key, const char *enc_id)
{
        _cleanup_(req_done) Req q = req_new(s, "abort multipart upload", "DELETE", key);
        _cleanup_free_ char *query = strdup_printf("uploadId=%s", enc_id), *err = NULL;
        if (!query || !(q.url = s3_url(s, key, query)))
                return;
        if (perform(&q, &err) < 0)
                log_warning("%s (the parts stay in the bucket until a lifecycle rule removes them)", err);
}

/* The multipart upload itself, the whole file's MD5 into `whole`; `etag`
 * gets the ETag S3 computes for it. */
static int put_parts(const S3Store *s, const char *key, int fd, uint64_t size, EVP_MD_CTX *whole,
                     char etag[static ETAG_MAX], char **ret_error)
{
        _cleanup_free_ char *id = NULL, *enc_id = NULL, *data = NULL, *done_xml = NULL;
        _cleanup_free_ unsigned char *md5s = NULL;
        size_t part = s->part_size, n_parts, xml_len = 0;
        unsigned char md5[DIGEST_MD5];
        int r;

        /* S3 takes at most 10000 parts: larger files get larger parts (whole MiB). */
        if ((size + part - 1) / part > S3_MAX_PARTS)
                part = (size_t) (((size + S3_MAX_PARTS - 1) / S3_MAX_PARTS + (1u << 20) - 1) &
                                 ~(uint64_t) ((1u << 20) - 1));
        if (part > S3_MAX_PART_SIZE)
                return set_error(ret_error, -EFBIG, "%" PRIu64 " bytes need parts above %u MiB", size,
                                 S3_MAX_PART_SIZE >> 20);
        n_parts = (size_t) ((size + part - 1) / part);
        {
                _cleanup_(req_done) Req q = req_new(s, "start multipart upload", "POST", key);
                if (!(q.url = s3_url(s, key, "uploads=")))
                        return -ENOMEM;
                q.content_type = "application/octet-stream";
                q.sse = true; /* on the creation only: S3 refuses them on the parts */
                if ((r = perform(&q, ret_error)) < 0)
                        return r;
                id = q.resp.data ? xml_get(q.resp.data, "UploadId") : NULL;
                if (!id)
                        return set_error(ret_error, -EBADMSG,
                                         "S3 start multipart upload s3://%s/%s: no UploadId "
                                         "in the answer",
                                         s->bucket, key);
        }
        if (!(enc_id = s3_uri_encode(id, false)) || !(data = malloc(part)) ||
            !(md5s = malloc(n_parts * DIGEST_MD5)) || !(done_xml = malloc(64 + n_parts * 96)))
                return -ENOMEM;
        xml_len = (size_t) sprintf(done_xml, "<CompleteMultipartUpload>");
        log_info("uploading s3://%s/%s: %" PRIu64 " bytes in %zu parts of %zu MiB", s->bucket, key, size,
                 n_parts, part >> 20);
        for (size_t i = 0; i < n_parts; i++) {
                _cleanup_(req_done) Req q = req_new(s, "upload part", "PUT", key);
                _cleanup_free_ char *query = strdup_printf("partNumber=%zu&uploadId=%s", i + 1, enc_id);
                size_t got = 0, want = (size_t) MIN((uint64_t) part, size - (uint64_t) i * part);
                if (!query || !(q.url = s3_url(s, key, query))) {
                        r = -ENOMEM;
                        goto fail;
                }
                if ((r = read_at(fd, data, want, (uint64_t) i * part, &got)) < 0 || got != want) {
                        r = set_error(ret_error, r < 0 ? r : -EIO, "cannot read the file to upload: %s",
                                      r < 0 ? strerror(-r) : "it shrank while being read");
                        goto fail;
                }
                if (digest(EVP_md5(), data, want, md5s + i * DIGEST_MD5) < 0 ||
                    EVP_DigestUpdate(whole, data, want) != 1) {
                        r = set_error(ret_error, -EIO, "MD5 failed");
                        goto fail;
                }
                to_hex(md5s + i * DIGEST_MD5, DIGEST_MD5, etag);
                q.body = data;
                q.body_len = want;
                if ((r = perform(&q, ret_error)) < 0)
                        goto fail;
                if (!streq(q.etag, etag)) {
                        r = set_error(ret_error, -EIO,
                                      "S3 upload part %zu of s3://%s/%s: ETag %s, the part "
                                      "sent has MD5 %s",
                                      i + 1, s->bucket, key, q.etag, etag);
                        goto fail;
                }
                xml_len += (size_t) sprintf(done_xml + xml_len,
                                            "<Part><PartNumber>%zu</PartNumber><ETag>\"%s\"</ETag></Part>",
                                            i + 1, etag);
                if ((i + 1) % 16 == 0 || i + 1 == n_parts)
                        log_info("uploaded part %zu of %zu of s3://%s/%s", i + 1, n_parts, s->bucket, key);
        }
        xml_len += (size_t) sprintf(done_xml + xml_len, "</CompleteMultipartUpload>");
        {
                _cleanup_(req_done) Req q = req_new(s, "complete multipart upload", "POST", key);
                _cleanup_free_ char *query = strdup_printf("uploadId=%s", enc_id), *error_code = NULL;
                if (!query || !(q.url = s3_url(s, key, query))) {
                        r = -ENOMEM;
                        goto fail;
                }
                q.body = done_xml;
                q.body_len = xml_len;
                q.content_type = "application/xml";
                if ((r = perform(&q, ret_error)) < 0)
                        goto fail;
                /* S3 may answer 200 and put an error in the body. */
                error_code = q.resp.data ? xml_get(q.resp.data, "Code") : NULL;
                if (error_code) {
                        q.status = 500;
                        r = s3_error(&q, ret_error);
                        goto fail;
                }
        }
        if (digest(EVP_md5(), md5s, n_parts * DIGEST_MD5, md5) < 0)
                return set_error(ret_error, -EIO, "MD5 failed");
        to_hex(md5, sizeof md5, etag);
        (void) snprintf(etag + 2 * DIGEST_MD5, ETAG_MAX - 2 * DIGEST_MD5, "-%zu", n_parts);
        return 0;
fail:
        if (enc_id)
                abort_upload(s, key, enc_id);
        return r;
}

static int put_multipart(const S3Store *s, const char *key, int fd, uint64_t size, char **ret_error)
{
        unsigned char md5[DIGEST_MD5];
        char etag[ETAG_MAX], whole_hex[2 * DIGEST_MD5 + 1];
        unsigned int len = 0;
        EVP_MD_CTX *whole = EVP_MD_CTX_new();
        int r;

        if (!whole || EVP_DigestInit_ex(whole, EVP_md5(), NULL) != 1) {
                EVP_MD_CTX_free(whole);
                return -ENOMEM;
        }
        r = put_parts(s, key, fd, size, whole, etag, ret_error);
        if (r >= 0 && EVP_DigestFinal_ex(whole, md5, &len) != 1)
                r = set_error(ret_error, -EIO, "MD5 failed");
        EVP_MD_CTX_free(whole);
        if (r < 0)
                return r;
        to_hex(md5, sizeof md5, whole_hex);
        return check_uploaded(s, key, size, etag, whole_hex, ret_error);
}

int s3_put_file(const S3Store *s, const char *key, const char *path, char **ret_error)
{
        _cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return set_error(ret_error, -errno, "cannot open %s: %m", path);
        if (!S_ISREG(st.st_mode))
                return set_error(ret_error, -EINVAL, "%s is not a regular file", path);
        if ((uint64_t) st.st_size <= s->part_size)
                return put_single(s, key, fd, (uint64_t) st.st_size, ret_error);
        return put_multipart(s, key, fd, (uint64_t) st.st_size, ret_error);
}
