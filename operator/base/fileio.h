/* Whole-file reads with a size bound, and atomic writes (temp file in the
 * same directory, fsync, rename, fsync of the directory). Temp files are
 * named .<name>.tmp.XXXXXX: hidden from the kubelet's static pod source. */
#pragma once

#include <dirent.h>
#include <sys/types.h>

#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

/* Reads at most `max` bytes (-E2BIG beyond); the result is NUL-terminated. */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* Creates or replaces `path` atomically with `mode`. */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* Durability for what must survive a power loss (backups, snapshots,
 * moved-aside data, manifests): a rename or link is on disk only once the
 * directory that holds the new name is fsynced (and the old one's, when it
 * differs). */
/* fsync of a file or directory by path. */
int fsync_path(const char *path);
/* fsync of the directory that holds `path`. */
int fsync_parent(const char *path);
/* fsync of b's directory, and of a's when that is another one. */
int fsync_parents(const char *a, const char *b);
/* syncfs() of the filesystem that holds `path`: a whole tree another process wrote. */
int syncfs_path(const char *path);
/* rename(), then fsync_parents(); -errno of whichever failed (rename's EXDEV included). */
int rename_durable(const char *src, const char *dst);
