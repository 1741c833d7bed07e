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
