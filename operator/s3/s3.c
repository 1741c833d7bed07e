/* The S3 client's settings, names and answers (s3.h): the credentials
 * directory, the checks of bucket, prefix, endpoint and encryption, keys and
 * URLs, and the XML S3 answers in. The requests are request.c's, the
 * operations objects.c's. */
#include "s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>

#include "base/fileio.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "s3-internal.h"

#define SETTING_MAX (64 * 1024)

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
        loop_unref(s->loop);
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
                const char *curl_text = NULL;
                if (http_curl_version(&curl_text) < 0x080a00)
                        return set_error(
                                ret_error, -EOPNOTSUPP,
                                "%s/sseKMSKeyId needs libcurl 8.10.0 or newer to be signed as S3 "
                                "checks it (this is libcurl %s); remove sseKMSKeyId to encrypt with "
                                "the account's default KMS key (or make the key the bucket's default "
                                "encryption key)",
                                strempty(s->dir), curl_text);
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

char *s3_xml_get(const char *xml, const char *tag)
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

char *s3_etag_unquote(char *etag)
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
                _cleanup_free_ char *b = block, *size = s3_xml_get(b, "Size"),
                                    *mod = s3_xml_get(b, "LastModified");
                S3Object o = {.key = s3_xml_get(b, "Key"), .etag = s3_etag_unquote(s3_xml_get(b, "ETag"))};
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
        _cleanup_free_ char *truncated = s3_xml_get(xml, "IsTruncated");
        if (streq_ptr(truncated, "true")) {
                *ret_next = s3_xml_get(xml, "NextContinuationToken");
                if (!*ret_next)
                        return -EBADMSG; /* truncated without a way on: the listing would be partial */
        }
        return 0;
}

/* ---- digests ---- */

bool s3_md5_available(void)
{
        static int available = -1;

        if (available < 0) {
                EVP_MD *md = EVP_MD_fetch(NULL, "MD5", NULL);
                available = md != NULL;
                EVP_MD_free(md);
                if (!available) {
                        ERR_clear_error();
                        log_info("MD5 is not available here (a FIPS host): uploads are checked by their "
                                 "SHA-256 (signed payload, x-amz-checksum-sha256) and size, not by ETag");
                }
        }
        return available;
}

int s3_digest(const EVP_MD *md, const void *p, size_t n, unsigned char *out)
{
        unsigned int len = 0;
        return EVP_Digest(p, n, out, &len, md, NULL) == 1 ? 0 : -EIO;
}

void s3_to_hex(const unsigned char *d, size_t n, char *out)
{
        static const char hex[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = hex[d[i] >> 4];
                out[2 * i + 1] = hex[d[i] & 15];
        }
        out[2 * n] = 0;
}
