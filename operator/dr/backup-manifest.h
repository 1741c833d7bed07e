/* A backup's checksum file (review M1 and H2): written by cluster-backup
 * beside snapshot_<ts>.db and static_kuberesources_<ts>.tar.gz as
 * checksums_<ts>.json, and uploaded beside the objects in a store as
 * <prefix>/checksums/<snapshot object name>.json. It holds the SHA-256 and
 * size of both files, the revision, etcd's cluster ID and the time, and, for
 * a backup that went to a store, an HMAC-SHA256 over all of that keyed by
 * the store's backupKey (s3.h): the mark that this cluster wrote it.
 *
 * What it protects against: a truncated, corrupt or replaced snapshot or
 * tarball is refused before a restore changes anything; in a shared bucket,
 * objects another writer put there (a name with a higher revision, a copy of
 * ours under another name, a manifest without our key's MAC) are neither
 * "latest" nor counted or deleted by garbage collection. What it does not:
 * anyone holding backupKey (the Secret, or any of the cluster's snapshots,
 * which hold every Secret) can sign; anyone who can write the bucket can
 * still delete objects outright. The file is JSON read with our bounded
 * parser; text from the store is untrusted (fuzz-backup-manifest). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3.h"

#define BACKUP_MANIFEST_MAX   (16 * 1024)       /* bytes of a checksum file */
#define BACKUP_KEY_MIN        S3_BACKUP_KEY_MIN /* characters of backupKey */
#define BACKUP_MANIFEST_KIND  "cluster-etcd-operator-backup-checksums"
#define BACKUP_SHA256_HEX_LEN 64

typedef struct BackupFileSum {
        char name[256]; /* the file's name when it was written (informational) */
        char sha256[BACKUP_SHA256_HEX_LEN + 1];
        uint64_t size;
} BackupFileSum;

typedef struct BackupManifest {
        BackupFileSum snapshot, tarball;
        uint64_t revision;                   /* etcd's, right before the snapshot; 0 when not asked */
        uint64_t cluster_id;                 /* etcd's; 0 when not asked */
        int64_t created;                     /* unix seconds: the instant that names the files and objects */
        char mac[BACKUP_SHA256_HEX_LEN + 1]; /* hex HMAC-SHA256, "" when unsigned */
} BackupManifest;

/* The SHA-256 (hex) and size of a file. */
int backup_file_sum(const char *path, BackupFileSum *ret);

/* checksums_<ts>.json of snapshot_<ts>.db (any directory part kept); NULL on
 * ENOMEM or another name. */
char *backup_manifest_name_of(const char *snapshot_path);

/* The file's text (JSON, one trailing newline); -ENOMEM. */
int backup_manifest_format(const BackupManifest *m, char **ret);
/* Parses and checks a checksum file's text: -EINVAL with `why` naming the
 * first field that is missing or wrong; -E2BIG above BACKUP_MANIFEST_MAX. */
int backup_manifest_parse(const char *text, size_t len, BackupManifest *ret, char *why, size_t n);

/* Sets m->mac with `key` (at least BACKUP_KEY_MIN bytes: -EINVAL). */
int backup_manifest_sign(BackupManifest *m, const char *key);
/* 0 when m carries a MAC by `key`; -ENOKEY when it carries none, -EBADMSG
 * when it carries another (another key, or a field changed). */
int backup_manifest_verify(const BackupManifest *m, const char *key);

/* The files against the sums: 0, or -EBADMSG with `why` naming the file and
 * what differs (or the errno of reading it). */
int backup_manifest_check_files(const BackupManifest *m, const char *snapshot_path, const char *tarball_path,
                                char *why, size_t n);
