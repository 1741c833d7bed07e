/* The snapshot stream decoder: chunking, the trailing SHA-256, truncation,
 * corruption and error lines, fed in arbitrary pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "base/base64.h"
#include "base/buf.h"
#include "etcd/snapshot.h"

#define DB_SIZE 70000

static unsigned char db[DB_SIZE];

static int collect(const void *data, size_t n, void *userdata)
{
        return buf_append(userdata, data, n);
}

/* Builds the gateway's stream for `db`: 32 KiB chunks, then the hash chunk. */
static char *make_stream(bool with_hash, bool corrupt)
{
        Buf out = BUF_INIT(0);
        unsigned char hash[32];
        char line[65536];

        SHA256(db, DB_SIZE, hash);
        for (size_t off = 0; off < DB_SIZE; off += 32768) {
                size_t n = MIN((size_t) 32768, DB_SIZE - off);
                _cleanup_free_ char *b64 = base64_encode(db + off, n);
                if (corrupt && off == 32768)
                        b64[10] = b64[10] == 'A' ? 'B' : 'A';
                size_t remaining = DB_SIZE - off - n;
                if (remaining)
                        (void) snprintf(line, sizeof line,
                                        "{\"result\":{\"remaining_bytes\":\"%zu\",\"blob\":\"%s\"}}\n",
                                        remaining, b64);
                else
                        (void) snprintf(line, sizeof line, "{\"result\":{\"blob\":\"%s\"}}\n", b64);
                assert_int_equal(buf_append(&out, line, strlen(line)), 0);
        }
        if (with_hash) {
                _cleanup_free_ char *b64 = base64_encode(hash, 32);
                (void) snprintf(line, sizeof line, "{\"result\":{\"blob\":\"%s\"}}\n", b64);
                assert_int_equal(buf_append(&out, line, strlen(line)), 0);
        }
        return buf_steal(&out);
}

static int feed_in_pieces(EtcdSnapshotDecoder *d, const char *s, size_t piece)
{
        size_t n = strlen(s);
        for (size_t off = 0; off < n; off += piece) {
                int r = etcd_snapshot_decoder_feed(d, s + off, MIN(piece, n - off));
                if (r < 0)
                        return r;
        }
        return 0;
}

static void test_good(void **state)
{
        static const size_t pieces[] = {1, 7, 4096, 1 << 20};
        for (size_t i = 0; i < ELEMENTSOF(pieces); i++) {
                _cleanup_free_ char *s = make_stream(true, false);
                Buf out = BUF_INIT(0);
                _cleanup_(etcd_snapshot_decoder_freep) EtcdSnapshotDecoder *d =
                        etcd_snapshot_decoder_new(collect, &out);
                uint64_t size = 0, chunks = 0;
                unsigned char hash[32];

                assert_int_equal(feed_in_pieces(d, s, pieces[i]), 0);
                assert_int_equal(etcd_snapshot_decoder_total(d), DB_SIZE);
                assert_int_equal(etcd_snapshot_decoder_finish(d, &size, &chunks), 0);
                assert_int_equal(size, DB_SIZE);
                assert_int_equal(chunks, 4);
                /* The file is the database followed by its hash, as etcdctl writes it. */
                assert_int_equal(out.len, DB_SIZE + 32);
                assert_memory_equal(out.data, db, DB_SIZE);
                SHA256(db, DB_SIZE, hash);
                assert_memory_equal(out.data + DB_SIZE, hash, 32);
                buf_free(&out);
        }
}

static void test_truncated(void **state)
{
        _cleanup_free_ char *s = make_stream(false, false);
        Buf out = BUF_INIT(0);
        _cleanup_(etcd_snapshot_decoder_freep) EtcdSnapshotDecoder *d =
                etcd_snapshot_decoder_new(collect, &out);

        assert_int_equal(feed_in_pieces(d, s, 1000), 0);
        assert_int_equal(etcd_snapshot_decoder_finish(d, NULL, NULL), -EPIPE);
        buf_free(&out);

        /* Cut in the middle of a line. */
        _cleanup_free_ char *full = make_stream(true, false);
        full[strlen(full) / 2] = 0;
        Buf out2 = BUF_INIT(0);
        _cleanup_(etcd_snapshot_decoder_freep) EtcdSnapshotDecoder *d2 =
                etcd_snapshot_decoder_new(collect, &out2);
        assert_int_equal(feed_in_pieces(d2, full, 333), 0);
        assert_true(etcd_snapshot_decoder_finish(d2, NULL, NULL) < 0);
        buf_free(&out2);
}

static void test_corrupt(void **state)
{
        _cleanup_free_ char *s = make_stream(true, true);
        Buf out = BUF_INIT(0);
        _cleanup_(etcd_snapshot_decoder_freep) EtcdSnapshotDecoder *d =
                etcd_snapshot_decoder_new(collect, &out);

        assert_int_equal(feed_in_pieces(d, s, 4096), -EBADMSG);
        assert_int_equal(etcd_snapshot_decoder_finish(d, NULL, NULL), -EBADMSG);
        buf_free(&out);
}

static void test_error_line(void **state)
{
        const char *s =
                "{\"result\":{\"remaining_bytes\":\"10\",\"blob\":\"AAAA\"}}\n"
                "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: rpc not supported "
                "for learner\",\"http_status\":\"Service Unavailable\"}}\n";
        Buf out = BUF_INIT(0);
        _cleanup_(etcd_snapshot_decoder_freep) EtcdSnapshotDecoder *d =
                etcd_snapshot_decoder_new(collect, &out);

        assert_int_equal(etcd_snapshot_decoder_feed(d, s, strlen(s)), ETCD_ERR_LEARNER);
        assert_string_equal(etcd_snapshot_decoder_message(d), "etcdserver: rpc not supported for learner");
        buf_free(&out);

        /* Anything after the hash chunk is refused. */
        _cleanup_free_ char *good = make_stream(true, false);
        _cleanup_free_ char *extra = strdup_printf("%s{\"result\":{\"blob\":\"AAAA\"}}\n", good);
        Buf out2 = BUF_INIT(0);
        _cleanup_(etcd_snapshot_decoder_freep) EtcdSnapshotDecoder *d2 =
                etcd_snapshot_decoder_new(collect, &out2);
        assert_int_equal(feed_in_pieces(d2, extra, 65536), -EBADMSG);
        buf_free(&out2);
}

/* Protobuf SnapshotResponse: field 1 header (skipped), 2 remaining_bytes, 3 blob, 4 version. */
static size_t put_varint(unsigned char *p, uint64_t v)
{
        size_t n = 0;
        do {
                p[n++] = (unsigned char) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
                v >>= 7;
        } while (v);
        return n;
}

static void grpc_message(Buf *out, const void *blob, size_t n, uint64_t remaining)
{
        unsigned char *m = malloc(n + 64), hdr[5];
        size_t k = 0;
        m[k++] = 0x0a; /* header: a message with a member_id varint */
        m[k++] = 2;
        m[k++] = 0x10;
        m[k++] = 0x07;
        if (remaining) {
                m[k++] = 0x10;
                k += put_varint(m + k, remaining);
        }
        m[k++] = 0x1a;
        k += put_varint(m + k, n);
        memcpy(m + k, blob, n);
        k += n;
        m[k++] = 0x22; /* version "3.6" */
        m[k++] = 3;
        memcpy(m + k, "3.6", 3);
        k += 3;
        hdr[0] = 0;
        hdr[1] = (unsigned char) (k >> 24);
        hdr[2] = (unsigned char) (k >> 16);
        hdr[3] = (unsigned char) (k >> 8);
        hdr[4] = (unsigned char) k;
        assert_int_equal(buf_append(out, hdr, 5), 0);
        assert_int_equal(buf_append(out, m, k), 0);
        free(m);
}

static void test_grpc(void **state)
{
        static const size_t pieces[] = {1, 5, 6, 1000, 1 << 20};
        unsigned char hash[32];
        Buf stream = BUF_INIT(0);

        SHA256(db, DB_SIZE, hash);
        for (size_t off = 0; off < DB_SIZE; off += 32768) {
                size_t n = MIN((size_t) 32768, DB_SIZE - off);
                grpc_message(&stream, db + off, n, DB_SIZE - off - n);
        }
        grpc_message(&stream, hash, 32, 0);
        for (size_t i = 0; i < ELEMENTSOF(pieces); i++) {
                Buf out = BUF_INIT(0);
                _cleanup_(etcd_snapshot_decoder_freep) EtcdSnapshotDecoder *d =
                        etcd_snapshot_decoder_new(collect, &out);
                uint64_t size = 0;
                for (size_t off = 0; off < stream.len; off += pieces[i])
                        assert_int_equal(etcd_snapshot_decoder_feed_grpc(d, stream.data + off,
                                                                         MIN(pieces[i], stream.len - off)),
                                         0);
                assert_int_equal(etcd_snapshot_decoder_finish(d, &size, NULL), 0);
                assert_int_equal(size, DB_SIZE);
                assert_int_equal(out.len, DB_SIZE + 32);
                assert_memory_equal(out.data, db, DB_SIZE);
                buf_free(&out);
        }
        /* A compressed message (flag 1) is refused; so is a truncated stream. */
        Buf out = BUF_INIT(0);
        _cleanup_(etcd_snapshot_decoder_freep) EtcdSnapshotDecoder *d =
                etcd_snapshot_decoder_new(collect, &out);
        char compressed[] = {1, 0, 0, 0, 0};
        assert_int_equal(etcd_snapshot_decoder_feed_grpc(d, compressed, 5), -EBADMSG);
        Buf out2 = BUF_INIT(0);
        _cleanup_(etcd_snapshot_decoder_freep) EtcdSnapshotDecoder *d2 =
                etcd_snapshot_decoder_new(collect, &out2);
        assert_int_equal(etcd_snapshot_decoder_feed_grpc(d2, stream.data, stream.len - 10), 0);
        assert_true(etcd_snapshot_decoder_finish(d2, NULL, NULL) < 0);
        buf_free(&out);
        buf_free(&out2);
        buf_free(&stream);
}

int main(void)
{
        for (size_t i = 0; i < DB_SIZE; i++)
                db[i] = (unsigned char) (i * 2654435761u >> 13);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good),    cmocka_unit_test(test_truncated),
                cmocka_unit_test(test_corrupt), cmocka_unit_test(test_error_line),
                cmocka_unit_test(test_grpc),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
