/* The operations of s3.h on objects: HEAD, DELETE, LIST (all pages), GET into
 * memory or into a file written atomically, and PUT, single or multipart.
 * Uploads stream from the file: each part (or the whole object) is read once
 * for its MD5 and SHA-256, which the signature and the later check need
 * before anything is sent, and once more as it is sent; a buffer of
 * HASH_CHUNK bytes instead of a part in memory. Where MD5 is refused (FIPS,
 * s3_md5_available()), the SHA-256 alone: a single PUT also carries it as
 * x-amz-checksum-sha256, the parts' ETags are taken as the store gives them,
 * and the object is checked by its size. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/fileio.h"
#include "base/log.h"
#include "s3-internal.h"

/* Review L2: a listing of more pages (1000 keys each) than this is refused. */
#define LIST_MAX_PAGES 1000
#define HASH_CHUNK     (256 * 1024)

int s3_head(const S3Store *s, const char *key, S3Object *ret, char **ret_error)
{
        _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "HEAD", "HEAD", key);
        int r;
        if (!(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        if ((r = s3_request_perform(&q, ret_error)) < 0)
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
        _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "DELETE", "DELETE", key);
        if (!(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        return s3_request_perform(&q, ret_error);
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
                _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "LIST", "GET", pfx);
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
                if ((r = s3_request_perform(&q, ret_error)) < 0)
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
        _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "GET", "GET", key);
        _cleanup_free_ char *tmp = strdup_printf("%s.tmp.XXXXXX", path);
        struct stat st;
        int r;

        if (!tmp || !(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        q.out_fd = mkostemp(tmp, O_CLOEXEC);
        if (q.out_fd < 0)
                return set_error(ret_error, -errno, "cannot create %s: %m", tmp);
        r = s3_request_perform(&q, ret_error);
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
        _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "GET", "GET", key);
        int r;

        assert_return(s && key && ret, -EINVAL);
        q.resp = BUF_INIT(max);
        if (!(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        if ((r = s3_request_perform(&q, ret_error)) < 0)
                return r;
        if (ret_len)
                *ret_len = q.resp.len;
        *ret = q.resp.data ? buf_steal(&q.resp) : strdup("");
        return *ret ? 0 : -ENOMEM;
}

/* ---- uploads ---- */

static inline void md_ctx_freep(EVP_MD_CTX **c)
{
        EVP_MD_CTX_free(*c);
}

/* `len` bytes of fd at `off`: their MD5 (and into `whole`, when given; neither when md5 is NULL,
 * where MD5 is refused) and their SHA-256, as hex and (when sha_b64 is given) as base64. */
static int hash_region(int fd, uint64_t off, uint64_t len, EVP_MD_CTX *whole, unsigned char *md5,
                       char sha_hex[2 * DIGEST_SHA256 + 1], char *sha_b64, size_t b64_size, char **ret_error)
{
        _cleanup_(md_ctx_freep) EVP_MD_CTX *m = md5 ? EVP_MD_CTX_new() : NULL, *sha = EVP_MD_CTX_new();
        _cleanup_free_ char *buf = malloc(HASH_CHUNK);
        unsigned char digest[DIGEST_SHA256];
        unsigned len_md5 = 0, len_sha = 0;
        uint64_t done = 0;

        if ((md5 && !m) || !sha || !buf)
                return -ENOMEM;
        if ((m && EVP_DigestInit_ex(m, EVP_md5(), NULL) != 1) ||
            EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1)
                return set_error(ret_error, -EIO, "MD5 or SHA-256 failed");
        while (done < len) {
                size_t want = (size_t) MIN((uint64_t) HASH_CHUNK, len - done);
                ssize_t k = pread(fd, buf, want, (off_t) (off + done));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return set_error(ret_error, k < 0 ? -errno : -EIO,
                                         "cannot read the file to upload: %s",
                                         k < 0 ? strerror(errno) : "it shrank while being read");
                if ((m && EVP_DigestUpdate(m, buf, (size_t) k) != 1) ||
                    EVP_DigestUpdate(sha, buf, (size_t) k) != 1 ||
                    (whole && EVP_DigestUpdate(whole, buf, (size_t) k) != 1))
                        return set_error(ret_error, -EIO, "MD5 or SHA-256 failed");
                done += (uint64_t) k;
        }
        if ((m && EVP_DigestFinal_ex(m, md5, &len_md5) != 1) ||
            EVP_DigestFinal_ex(sha, digest, &len_sha) != 1)
                return set_error(ret_error, -EIO, "MD5 or SHA-256 failed");
        s3_to_hex(digest, DIGEST_SHA256, sha_hex);
        if (sha_b64) {
                _cleanup_free_ char *b64 = base64_encode(digest, DIGEST_SHA256);
                if (!b64 || strlen(b64) >= b64_size)
                        return -ENOMEM;
                strcpy(sha_b64, b64);
        }
        return 0;
}

/* The object as uploaded is the file: its size, and its ETag where S3
 * computes ETags as MD5s (single PUT: the MD5; multipart: the MD5 of the
 * parts' MD5s, "-N", as S3, MinIO and Ceph do; `alt_etag`, the whole
 * object's MD5, is what some stores such as s3rver give instead). Without
 * want_etag (no MD5 here) the size only: the store has checked the content
 * against the signed SHA-256 of every request. */
static int check_uploaded(const S3Store *s, const char *key, uint64_t size, const char *want_etag,
                          const char *alt_etag, char **ret_error)
{
        S3Object o = {};
        int r = s3_head(s, key, &o, ret_error);
        if (r < 0)
                return r;
        /* With SSE-KMS the ETag is no MD5 of the content (AWS documents it): the size only. */
        bool etag_is_md5 = want_etag && !streq_ptr(s->sse, "aws:kms");
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
        _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "PUT", "PUT", key);
        unsigned char md5[DIGEST_MD5];
        char etag[2 * DIGEST_MD5 + 1];
        bool have_md5 = s3_md5_available();
        int r;

        if (!(q.url = s3_url(s, key, NULL)))
                return -ENOMEM;
        /* Without MD5 the store checks (and keeps) the SHA-256 it is told. */
        if ((r = hash_region(fd, 0, size, NULL, have_md5 ? md5 : NULL, q.body_sha256,
                             have_md5 ? NULL : q.checksum_sha256, sizeof q.checksum_sha256, ret_error)) < 0)
                return r;
        if (have_md5)
                s3_to_hex(md5, sizeof md5, etag);
        q.body_fd = fd;
        q.body_len = size;
        q.content_type = "application/octet-stream";
        q.sse = true;
        if ((r = s3_request_perform(&q, ret_error)) < 0)
                return r;
        return check_uploaded(s, key, size, have_md5 ? etag : NULL, NULL, ret_error);
}

static void abort_upload(const S3Store *s, const char *key, const char *enc_id)
{
        _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "abort multipart upload", "DELETE", key);
        _cleanup_free_ char *query = strdup_printf("uploadId=%s", enc_id), *err = NULL;
        if (!query || !(q.url = s3_url(s, key, query)))
                return;
        if (s3_request_perform(&q, &err) < 0)
                log_warning("%s (the parts stay in the bucket until a lifecycle rule removes them)", err);
}

/* Starts a multipart upload: its ID into *ret_id. */
static int start_upload(const S3Store *s, const char *key, char **ret_id, char **ret_error)
{
        _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "start multipart upload", "POST", key);
        int r;

        if (!(q.url = s3_url(s, key, "uploads=")))
                return -ENOMEM;
        q.content_type = "application/octet-stream";
        q.sse = true; /* on the creation only: S3 refuses them on the parts */
        if ((r = s3_request_perform(&q, ret_error)) < 0)
                return r;
        *ret_id = q.resp.data ? s3_xml_get(q.resp.data, "UploadId") : NULL;
        if (!*ret_id)
                return set_error(ret_error, -EBADMSG,
                                 "S3 start multipart upload s3://%s/%s: no UploadId in the answer",
                                 s->bucket, key);
        return 0;
}

/* Part `i` (of `part` bytes, the last maybe shorter) from the file: its MD5 into md5s[i], checked
 * against the ETag the store gives; without MD5 (md5 NULL), that ETag into `etag`. */
static int put_part(const S3Store *s, const char *key, const char *enc_id, int fd, uint64_t size,
                    size_t part, size_t i, EVP_MD_CTX *whole, unsigned char *md5, char etag[static ETAG_MAX],
                    char **ret_error)
{
        _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "upload part", "PUT", key);
        _cleanup_free_ char *query = strdup_printf("partNumber=%zu&uploadId=%s", i + 1, enc_id);
        uint64_t off = (uint64_t) i * part, want = MIN((uint64_t) part, size - off);
        char hex[2 * DIGEST_MD5 + 1];
        int r;

        if (!query || !(q.url = s3_url(s, key, query)))
                return -ENOMEM;
        if ((r = hash_region(fd, off, want, whole, md5, q.body_sha256, NULL, 0, ret_error)) < 0)
                return r;
        q.body_fd = fd;
        q.body_offset = off;
        q.body_len = want;
        if ((r = s3_request_perform(&q, ret_error)) < 0)
                return r;
        if (!md5) {
                if (!q.etag[0] || strlen(q.etag) >= ETAG_MAX || strpbrk(q.etag, "<>&\"'"))
                        return set_error(ret_error, -EBADMSG,
                                         "S3 upload part %zu of s3://%s/%s: no usable ETag in "
                                         "the answer",
                                         i + 1, s->bucket, key);
                strcpy(etag, q.etag);
                return 0;
        }
        s3_to_hex(md5, DIGEST_MD5, hex);
        if (!streq(q.etag, hex))
                return set_error(ret_error, -EIO,
                                 "S3 upload part %zu of s3://%s/%s: ETag %s, the part sent has MD5 %s",
                                 i + 1, s->bucket, key, q.etag, hex);
        return 0;
}

static int complete_upload(const S3Store *s, const char *key, const char *enc_id, const char *xml,
                           size_t len, char **ret_error)
{
        _cleanup_(s3_request_done) S3Request q = s3_request_new(s, "complete multipart upload", "POST", key);
        _cleanup_free_ char *query = strdup_printf("uploadId=%s", enc_id), *error_code = NULL;
        int r;

        if (!query || !(q.url = s3_url(s, key, query)))
                return -ENOMEM;
        q.body = xml;
        q.body_len = len;
        q.content_type = "application/xml";
        if ((r = s3_request_perform(&q, ret_error)) < 0)
                return r;
        /* S3 may answer 200 and put an error in the body. */
        error_code = q.resp.data ? s3_xml_get(q.resp.data, "Code") : NULL;
        if (error_code) {
                q.status = 500;
                return s3_request_error(&q, ret_error);
        }
        return 0;
}

/* The multipart upload itself, the whole file's MD5 into `whole`; `etag`
 * gets the ETag S3 computes for it. Without MD5 (whole NULL) the parts' ETags
 * are the store's and `etag` stays empty. */
static int put_parts(const S3Store *s, const char *key, int fd, uint64_t size, EVP_MD_CTX *whole,
                     char etag[static ETAG_MAX], char **ret_error)
{
        _cleanup_free_ char *id = NULL, *enc_id = NULL, *done_xml = NULL;
        _cleanup_free_ unsigned char *md5s = NULL;
        size_t part = s->part_size, n_parts, xml_len = 0;
        unsigned char md5[DIGEST_MD5];
        bool have_md5 = whole != NULL;
        int r;

        etag[0] = 0;

        /* S3 takes at most 10000 parts: larger files get larger parts (whole MiB). */
        if ((size + part - 1) / part > S3_MAX_PARTS)
                part = (size_t) (((size + S3_MAX_PARTS - 1) / S3_MAX_PARTS + (1u << 20) - 1) &
                                 ~(uint64_t) ((1u << 20) - 1));
        if (part > S3_MAX_PART_SIZE)
                return set_error(ret_error, -EFBIG, "%" PRIu64 " bytes need parts above %u MiB", size,
                                 S3_MAX_PART_SIZE >> 20);
        n_parts = (size_t) ((size + part - 1) / part);
        if ((r = start_upload(s, key, &id, ret_error)) < 0)
                return r;
        if (!(enc_id = s3_uri_encode(id, false)) || !(md5s = malloc(n_parts * DIGEST_MD5)) ||
            !(done_xml = malloc(64 + n_parts * 96)))
                return -ENOMEM;
        xml_len = (size_t) sprintf(done_xml, "<CompleteMultipartUpload>");
        log_info("uploading s3://%s/%s: %" PRIu64 " bytes in %zu parts of %zu MiB", s->bucket, key, size,
                 n_parts, part >> 20);
        for (size_t i = 0; i < n_parts; i++) {
                char hex[ETAG_MAX];
                r = put_part(s, key, enc_id, fd, size, part, i, whole,
                             have_md5 ? md5s + i * DIGEST_MD5 : NULL, hex, ret_error);
                if (r < 0)
                        goto fail;
                if (have_md5)
                        s3_to_hex(md5s + i * DIGEST_MD5, DIGEST_MD5, hex);
                xml_len += (size_t) sprintf(done_xml + xml_len,
                                            "<Part><PartNumber>%zu</PartNumber><ETag>\"%s\"</ETag></Part>",
                                            i + 1, hex);
                if ((i + 1) % 16 == 0 || i + 1 == n_parts)
                        log_info("uploaded part %zu of %zu of s3://%s/%s", i + 1, n_parts, s->bucket, key);
        }
        xml_len += (size_t) sprintf(done_xml + xml_len, "</CompleteMultipartUpload>");
        if ((r = complete_upload(s, key, enc_id, done_xml, xml_len, ret_error)) < 0)
                goto fail;
        if (!have_md5)
                return 0;
        if (s3_digest(EVP_md5(), md5s, n_parts * DIGEST_MD5, md5) < 0)
                return set_error(ret_error, -EIO, "MD5 failed");
        s3_to_hex(md5, sizeof md5, etag);
        (void) snprintf(etag + 2 * DIGEST_MD5, ETAG_MAX - 2 * DIGEST_MD5, "-%zu", n_parts);
        return 0;
fail:
        abort_upload(s, key, enc_id);
        return r;
}

static int put_multipart(const S3Store *s, const char *key, int fd, uint64_t size, char **ret_error)
{
        bool have_md5 = s3_md5_available();
        _cleanup_(md_ctx_freep) EVP_MD_CTX *whole = have_md5 ? EVP_MD_CTX_new() : NULL;
        unsigned char md5[DIGEST_MD5];
        char etag[ETAG_MAX], whole_hex[2 * DIGEST_MD5 + 1];
        unsigned int len = 0;
        int r;

        if (have_md5 && (!whole || EVP_DigestInit_ex(whole, EVP_md5(), NULL) != 1))
                return -ENOMEM;
        r = put_parts(s, key, fd, size, whole, etag, ret_error);
        if (r >= 0 && !have_md5)
                return check_uploaded(s, key, size, NULL, NULL, ret_error);
        if (r >= 0 && EVP_DigestFinal_ex(whole, md5, &len) != 1)
                r = set_error(ret_error, -EIO, "MD5 failed");
        if (r < 0)
                return r;
        s3_to_hex(md5, sizeof md5, whole_hex);
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
