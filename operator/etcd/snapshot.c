/* Snapshot decoder and the streaming save. */
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "client.h"
#include "snapshot.h"

#define MAX_LINE  (8u << 20) /* a 32 KiB chunk is ~44 KiB of JSON; allow for bigger servers */
#define HASH_SIZE 32

struct EtcdSnapshotDecoder {
        EtcdSnapshotWriteFunc write;
        void *userdata;
        Buf line;
        EVP_MD_CTX *sha;
        uint64_t db_size, total, chunks;
        bool last_data_seen; /* a data chunk with remaining_bytes 0 arrived */
        bool hash_ok;
        int error;
        char *message;
};

EtcdSnapshotDecoder *etcd_snapshot_decoder_new(EtcdSnapshotWriteFunc write, void *userdata)
{
        EtcdSnapshotDecoder *d = calloc(1, sizeof *d);
        if (!d)
                return NULL;
        d->write = write;
        d->userdata = userdata;
        d->line = BUF_INIT(MAX_LINE);
        d->sha = EVP_MD_CTX_new();
        if (!d->sha || EVP_DigestInit_ex(d->sha, EVP_sha256(), NULL) != 1)
                return etcd_snapshot_decoder_free(d);
        return d;
}

EtcdSnapshotDecoder *etcd_snapshot_decoder_free(EtcdSnapshotDecoder *d)
{
        if (!d)
                return NULL;
        buf_free(&d->line);
        EVP_MD_CTX_free(d->sha);
        free(d->message);
        return mfree(d);
}

int etcd_snapshot_decoder_chunk(EtcdSnapshotDecoder *d, const void *bytes, size_t n, uint64_t remaining)
{
        int r;

        if (d->error < 0)
                return d->error;
        if (d->hash_ok)
                return d->error = -EBADMSG; /* nothing may follow the hash */
        d->chunks++;
        if (d->last_data_seen) {
                unsigned char want[EVP_MAX_MD_SIZE];
                unsigned len = 0;
                if (n != HASH_SIZE || EVP_DigestFinal_ex(d->sha, want, &len) != 1 || len != HASH_SIZE ||
                    memcmp(want, bytes, HASH_SIZE) != 0)
                        return d->error = -EBADMSG;
                d->hash_ok = true;
                r = d->write(bytes, n, d->userdata);
                return r < 0 ? (d->error = r) : 0;
        }
        if (EVP_DigestUpdate(d->sha, bytes, n) != 1)
                return d->error = -ENOMEM;
        d->db_size += n;
        if (d->total == 0)
                d->total = d->db_size + remaining;
        if (remaining == 0)
                d->last_data_seen = true;
        r = d->write(bytes, n, d->userdata);
        return r < 0 ? (d->error = r) : 0;
}

static int handle_line(EtcdSnapshotDecoder *d, const cJSON *line)
{
        cJSON *result = json_get_object(line, "result");
        const char *blob;
        _cleanup_free_ char *bytes = NULL;
        uint64_t remaining = 0;
        size_t n = 0;
        int r;

        if (json_get(line, "error") || !result) {
                /* An error after streaming started arrives as a line of its own. */
                free(d->message);
                cJSON *m = json_get(line, "error.message");
                d->message = cJSON_IsString(m) ? strdup(m->valuestring) : NULL;
                return etcd_parse_error(500, line, NULL);
        }
        blob = json_get_string(result, "blob");
        r = json_get_uint64(result, "remaining_bytes", &remaining);
        if (r < 0 && r != -ENOENT)
                return -EBADMSG;
        if (!blob || base64_decode(blob, &bytes, &n) < 0)
                return -EBADMSG;
        return etcd_snapshot_decoder_chunk(d, bytes, n, remaining);
}

int etcd_snapshot_decoder_set_error(EtcdSnapshotDecoder *d, int error, const char *message)
{
        if (d->error >= 0)
                d->error = error;
        if (message && !d->message)
                d->message = strdup(message);
        return d->error;
}

int etcd_snapshot_decoder_feed(EtcdSnapshotDecoder *d, const char *data, size_t n)
{
        int r;

        if (d->error < 0)
                return d->error;
        while (n > 0) {
                const char *nl = memchr(data, '\n', n);
                size_t take = nl ? (size_t) (nl - data) : n;
                r = buf_append(&d->line, data, take);
                if (r < 0)
                        return d->error = r;
                if (!nl)
                        break;
                if (d->line.len > 0) {
                        _cleanup_(cJSON_Deletep) cJSON *j = NULL;
                        r = json_parse(d->line.data, d->line.len, &j);
                        if (r >= 0)
                                r = handle_line(d, j);
                        buf_reset(&d->line);
                        if (r < 0)
                                return d->error = r;
                }
                data = nl + 1;
                n -= take + 1;
        }
        return 0;
}

int etcd_snapshot_decoder_finish(EtcdSnapshotDecoder *d, uint64_t *ret_db_size, uint64_t *ret_chunks)
{
        if (d->error >= 0 && d->line.len > 0) {
                _cleanup_(cJSON_Deletep) cJSON *j = NULL;
                int r = json_parse(d->line.data, d->line.len, &j);
                if (r >= 0)
                        r = handle_line(d, j);
                buf_reset(&d->line);
                if (r < 0)
                        d->error = r;
        }
        if (d->error < 0)
                return d->error;
        if (!d->hash_ok)
                return -EPIPE; /* the stream ended early */
        if (ret_db_size)
                *ret_db_size = d->db_size;
        if (ret_chunks)
                *ret_chunks = d->chunks;
        return 0;
}

const char *etcd_snapshot_decoder_message(EtcdSnapshotDecoder *d)
{
        return d->message;
}

uint64_t etcd_snapshot_decoder_total(EtcdSnapshotDecoder *d)
{
        return d->total;
}

/* ---- gRPC framing ----
 * The gateway's JSON and base64 cost about 60% of the throughput, so the
 * snapshot may travel as gRPC over HTTP/2 on the same client port: each
 * message is a 5-byte prefix (compressed flag, big-endian length) and a
 * SnapshotResponse protobuf of which we read two fields (2: remaining_bytes,
 * 3: blob); grpc-status arrives in the trailers. */

#define GRPC_MAX_MESSAGE (8u << 20)

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
        uint64_t v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
                if (*p >= end)
                        return -EBADMSG;
                uint8_t b = *(*p)++;
                v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -EBADMSG;
}

int etcd_snapshot_parse_grpc_message(const void *msg, size_t n, uint64_t *ret_remaining,
                                     const void **ret_blob, size_t *ret_blob_len)
{
        const uint8_t *p = msg, *end = p + n, *blob = NULL;
        uint64_t remaining = 0, key, v;
        size_t blob_len = 0;

        while (p < end) {
                if (read_varint(&p, end, &key) < 0)
                        return -EBADMSG;
                switch (key & 7) {
                case 0:
                        if (read_varint(&p, end, &v) < 0)
                                return -EBADMSG;
                        if ((key >> 3) == 2)
                                remaining = v;
                        break;
                case 1:
                        if (end - p < 8)
                                return -EBADMSG;
                        p += 8;
                        break;
                case 2:
                        if (read_varint(&p, end, &v) < 0 || v > (uint64_t) (end - p))
                                return -EBADMSG;
                        if ((key >> 3) == 3) {
                                blob = p;
                                blob_len = (size_t) v;
                        }
                        p += v;
                        break;
                case 5:
                        if (end - p < 4)
                                return -EBADMSG;
                        p += 4;
                        break;
                default:
                        return -EBADMSG;
                }
        }
        *ret_remaining = remaining;
        *ret_blob = blob ? (const void *) blob : (const void *) "";
        *ret_blob_len = blob_len;
        return 0;
}

int etcd_snapshot_decoder_feed_grpc(EtcdSnapshotDecoder *d, const char *data, size_t n)
{
        size_t off = 0;
        int r;

        if (d->error < 0)
                return d->error;
        r = buf_append(&d->line, data, n);
        if (r < 0)
                return d->error = r;
        /* Whole messages are handled in place; the rest waits for more bytes. */
        while (d->line.len - off >= 5) {
                const uint8_t *h = (const uint8_t *) d->line.data + off;
                uint32_t len = (uint32_t) h[1] << 24 | (uint32_t) h[2] << 16 | (uint32_t) h[3] << 8 | h[4];
                if (h[0] != 0 || len > GRPC_MAX_MESSAGE)
                        return d->error = -EBADMSG; /* compressed or oversized: we never ask for either */
                if (d->line.len - off - 5 < len)
                        break;
                uint64_t remaining = 0;
                const void *blob = NULL;
                size_t blob_len = 0;
                r = etcd_snapshot_parse_grpc_message(h + 5, len, &remaining, &blob, &blob_len);
                if (r < 0)
                        return d->error = r;
                r = etcd_snapshot_decoder_chunk(d, blob, blob_len, remaining);
                if (r < 0)
                        return r;
                off += 5 + len;
        }
        buf_consume(&d->line, off);
        return 0;
}

/* ---- saving to a file ---- */

typedef struct Save {
        EtcdSnapshotTransport transport;
        EtcdSnapshotDecoder *dec;
        int fd;
        char *path, *partial, *endpoint;
        uint64_t written;
        EtcdSnapshotProgress progress;
        EtcdSnapshotDone done;
        void *userdata;
        HttpRequest *req;
} Save;

static void save_free(Save *s)
{
        if (s->fd >= 0)
                (void) close(s->fd);
        etcd_snapshot_decoder_free(s->dec);
        http_request_unref(s->req);
        free(s->path);
        free(s->partial);
        free(s->endpoint);
        free(s);
}

static int write_all(const void *data, size_t n, void *userdata)
{
        Save *s = userdata;
        const char *p = data;
        while (n > 0) {
                ssize_t k = write(s->fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
                s->written += (uint64_t) k;
        }
        return 0;
}

static int on_data(HttpRequest *req, const char *data, size_t n, void *userdata)
{
        Save *s = userdata;
        (void) req;
        int r = s->transport == ETCD_SNAPSHOT_GRPC ? etcd_snapshot_decoder_feed_grpc(s->dec, data, n)
                                                   : etcd_snapshot_decoder_feed(s->dec, data, n);
        if (r >= 0 && s->progress)
                s->progress(s->written, etcd_snapshot_decoder_total(s->dec), s->userdata);
        return r;
}

/* The outcome in the trailers (or in the headers of a trailers-only answer). */
static int grpc_status(Save *s, HttpRequest *req)
{
        const char *st = http_request_get_header(req, "grpc-status");
        const char *msg = http_request_get_header(req, "grpc-message");
        char *end = NULL;

        if (!st)
                return etcd_snapshot_decoder_set_error(s->dec, -EPROTO, "no grpc-status in the response");
        long code = strtol(st, &end, 10);
        if (*end || code < 0)
                return etcd_snapshot_decoder_set_error(s->dec, -EPROTO, "malformed grpc-status");
        if (code == 0)
                return 0;
        _cleanup_(cJSON_Deletep) cJSON *fake = cJSON_CreateObject();
        if (!fake || !cJSON_AddNumberToObject(fake, "code", (double) code) ||
            !cJSON_AddStringToObject(fake, "message", strempty(msg)))
                return -ENOMEM;
        return etcd_snapshot_decoder_set_error(s->dec, etcd_parse_error(200, fake, NULL), msg);
}

static void on_done(HttpRequest *req, int error, void *userdata)
{
        Save *s = userdata;
        EtcdSnapshotResult res = {.endpoint = s->endpoint};
        long status = http_request_get_status(req);
        _cleanup_(cJSON_Deletep) cJSON *body = NULL;
        size_t len = 0;
        const char *data = http_request_get_body(req, &len);

        if (error < 0 && error != -ECANCELED && etcd_snapshot_decoder_message(s->dec))
                error = etcd_snapshot_decoder_finish(s->dec, NULL, NULL);
        if (error >= 0 && (status < 200 || status >= 300)) {
                (void) json_parse(data, len, &body);
                error = etcd_parse_error(status, body, &res.message);
        }
        if (error >= 0 && s->transport == ETCD_SNAPSHOT_GRPC)
                error = grpc_status(s, req);
        if (error >= 0)
                error = etcd_snapshot_decoder_finish(s->dec, &res.db_size, &res.chunks);
        if (!res.message)
                res.message = etcd_snapshot_decoder_message(s->dec);
        if (error >= 0 && fsync(s->fd) < 0)
                error = -errno;
        if (error >= 0 && link(s->partial, s->path) < 0)
                error = -errno; /* link, not rename: never replace a file that appeared meanwhile */
        (void) unlink(s->partial);
        if (error >= 0 && (error = fsync_parent(s->path)) < 0)
                (void) unlink(s->path); /* the name may not survive a power loss: no snapshot */
        res.error = error;
        if (error < 0)
                log_debug("snapshot from %s failed: %s", s->endpoint, etcd_strerror(error));
        s->done(&res, s->userdata);
        save_free(s);
}

int etcd_snapshot_save(EtcdClient *c, const char *endpoint, const char *path,
                       EtcdSnapshotTransport transport, usec_t timeout, EtcdSnapshotProgress progress,
                       EtcdSnapshotDone done, void *userdata)
{
        _cleanup_free_ char *url = NULL;
        Save *s;
        int r;

        assert_return(c && endpoint && path && done, -EINVAL);
        assert_return(transport >= 0 && transport < _ETCD_SNAPSHOT_TRANSPORT_MAX, -EINVAL);
        if (access(path, F_OK) == 0)
                return -EEXIST;
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->fd = -EBADF;
        s->path = strdup(path);
        s->partial = strdup_printf("%s.partial", path);
        s->endpoint = strdup(endpoint);
        s->dec = etcd_snapshot_decoder_new(write_all, s);
        s->transport = transport;
        _cleanup_free_ char *http = transport == ETCD_SNAPSHOT_GRPC ? NULL : etcd_http_url(endpoint);
        url = transport == ETCD_SNAPSHOT_GRPC
                      ? strdup_printf("%s/etcdserverpb.Maintenance/Snapshot", endpoint)
              : http ? strdup_printf("%s/v3/maintenance/snapshot", http)
                     : NULL;
        if (!s->path || !s->partial || !s->endpoint || !s->dec || !url) {
                save_free(s);
                return -ENOMEM;
        }
        s->fd = open(s->partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (s->fd < 0) {
                r = -errno;
                save_free(s);
                return r;
        }
        s->progress = progress;
        s->done = done;
        s->userdata = userdata;
        s->req = http_request_new("POST", url);
        if (!s->req) {
                (void) unlink(s->partial);
                save_free(s);
                return -ENOMEM;
        }
        http_request_set_stream(s->req, on_data);
        http_request_set_timeout(s->req, timeout ? timeout : 10 * 60 * USEC_PER_SEC);
        if (transport == ETCD_SNAPSHOT_GRPC) {
                /* An empty SnapshotRequest: the 5-byte prefix alone. HTTP/2 is curl's default over TLS. */
                r = http_request_set_body(s->req, "application/grpc", "\0\0\0\0\0", 5);
                if (r >= 0)
                        r = http_request_add_header(s->req, "TE: trailers");
        } else
                r = http_request_set_body(s->req, "application/json", "{}", 2);
        if (r >= 0)
                r = http_request_set_tls(s->req, etcd_client_get_tls(c));
        if (r >= 0)
                r = loop_http_start(etcd_client_get_loop(c), s->req, on_done, s);
        if (r < 0) {
                (void) unlink(s->partial);
                save_free(s);
                return r;
        }
        return 0;
}

int etcd_snapshot_verify_file(const char *path, uint64_t *ret_db_size)
{
        _cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);
        unsigned char buf[1 << 16], want[HASH_SIZE], got[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        struct stat st;
        int r = 0;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_size <= HASH_SIZE)
                return -EBADMSG;
        uint64_t db = (uint64_t) st.st_size - HASH_SIZE, left = db;
        EVP_MD_CTX *sha = EVP_MD_CTX_new();
        if (!sha || EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1) {
                EVP_MD_CTX_free(sha);
                return -ENOMEM;
        }
        while (left > 0 && r == 0) {
                ssize_t k = read(fd, buf, MIN((uint64_t) sizeof buf, left));
                if (k <= 0)
                        r = k < 0 ? -errno : -EBADMSG;
                else if (EVP_DigestUpdate(sha, buf, (size_t) k) != 1)
                        r = -ENOMEM;
                else
                        left -= (uint64_t) k;
        }
        if (r == 0 && (read(fd, want, HASH_SIZE) != HASH_SIZE || EVP_DigestFinal_ex(sha, got, &len) != 1 ||
                       len != HASH_SIZE || memcmp(want, got, HASH_SIZE) != 0))
                r = -EBADMSG;
        EVP_MD_CTX_free(sha);
        if (r == 0 && ret_db_size)
                *ret_db_size = db;
        return r;
}
