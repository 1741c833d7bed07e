/* Snapshot streaming through the gateway: POST /v3/maintenance/snapshot
 * answers newline-delimited JSON chunks of base64 data; the last chunk is the
 * SHA-256 of everything before it. We write the database and that trailing
 * hash (the file is byte-identical to `etcdctl snapshot save`), verify the
 * hash as we go, and only rename the file into place once it checks out: a
 * truncated or corrupted stream never leaves a file at `path`. */
#pragma once

#include "client.h"

typedef struct EtcdSnapshotResult {
        int error;
        uint64_t db_size; /* bytes of database (without the 32-byte hash) */
        uint64_t chunks;
        const char *endpoint;
        const char *message;
} EtcdSnapshotResult;

typedef void (*EtcdSnapshotProgress)(uint64_t written, uint64_t total, void *userdata);
typedef void (*EtcdSnapshotDone)(const EtcdSnapshotResult *res, void *userdata);

typedef enum EtcdSnapshotTransport {
        ETCD_SNAPSHOT_GRPC,    /* gRPC over HTTP/2 on the client port: ~4x the gateway's throughput */
        ETCD_SNAPSHOT_GATEWAY, /* the JSON gateway, as every other call */
        _ETCD_SNAPSHOT_TRANSPORT_MAX,
        _ETCD_SNAPSHOT_TRANSPORT_INVALID = -EINVAL,
} EtcdSnapshotTransport;

/* Refuses to overwrite an existing `path` (-EEXIST). */
int etcd_snapshot_save(EtcdClient *c, const char *endpoint, const char *path,
                       EtcdSnapshotTransport transport, usec_t timeout, EtcdSnapshotProgress progress,
                       EtcdSnapshotDone done, void *userdata);

/* Verifies a snapshot file on disk: size > 32 and the trailing SHA-256 matches. */
int etcd_snapshot_verify_file(const char *path, uint64_t *ret_db_size);

/* The stream decoder, exposed for unit tests and the fuzzer: feed it bytes as
 * they arrive; it calls `write` with decoded database bytes and the hash. */
typedef struct EtcdSnapshotDecoder EtcdSnapshotDecoder;
typedef int (*EtcdSnapshotWriteFunc)(const void *data, size_t n, void *userdata);
EtcdSnapshotDecoder *etcd_snapshot_decoder_new(EtcdSnapshotWriteFunc write, void *userdata);
EtcdSnapshotDecoder *etcd_snapshot_decoder_free(EtcdSnapshotDecoder *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdSnapshotDecoder *, etcd_snapshot_decoder_free);
int etcd_snapshot_decoder_feed(EtcdSnapshotDecoder *d, const char *data, size_t n);
/* gRPC framing of the same stream (5-byte prefixes, SnapshotResponse protobufs). */
int etcd_snapshot_decoder_feed_grpc(EtcdSnapshotDecoder *d, const char *data, size_t n);
int etcd_snapshot_parse_grpc_message(const void *msg, size_t n, uint64_t *ret_remaining,
                                     const void **ret_blob, size_t *ret_blob_len);
/* One decoded chunk (the gRPC path hands them over directly). */
int etcd_snapshot_decoder_chunk(EtcdSnapshotDecoder *d, const void *bytes, size_t n, uint64_t remaining);
/* Records a transport-level error (gRPC status) unless one is already set. */
int etcd_snapshot_decoder_set_error(EtcdSnapshotDecoder *d, int error, const char *message);
/* At the end of the stream: 0 only if the hash chunk arrived and matched. */
int etcd_snapshot_decoder_finish(EtcdSnapshotDecoder *d, uint64_t *ret_db_size, uint64_t *ret_chunks);
/* etcd's message when the stream carried an error line (borrowed), else NULL. */
const char *etcd_snapshot_decoder_message(EtcdSnapshotDecoder *d);
uint64_t etcd_snapshot_decoder_total(EtcdSnapshotDecoder *d);
