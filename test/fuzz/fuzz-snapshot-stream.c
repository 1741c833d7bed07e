/* The snapshot stream framing: arbitrary bytes in arbitrary pieces must end
 * in a clean error or a verified result, never a crash or a leak. */
#include <stdint.h>

#include "etcd/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int discard(const void *p, size_t n, void *userdata)
{
        uint64_t *total = userdata;
        (void) p;
        *total += n;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint64_t total = 0, db = 0, chunks = 0;
        EtcdSnapshotDecoder *d = etcd_snapshot_decoder_new(discard, &total);
        size_t piece = size > 0 ? (size_t) data[0] % 64 + 1 : 1;
        bool grpc = size > 0 && (data[0] & 0x80); /* the high bit picks the gRPC framing */

        for (size_t off = 1; off < size; off += piece) {
                const char *p = (const char *) data + off;
                size_t n = MIN(piece, size - off);
                if ((grpc ? etcd_snapshot_decoder_feed_grpc(d, p, n) : etcd_snapshot_decoder_feed(d, p, n)) <
                    0)
                        break;
        }
        if (etcd_snapshot_decoder_finish(d, &db, &chunks) >= 0 && total != db + 32)
                __builtin_trap();
        etcd_snapshot_decoder_free(d);
        return 0;
}
