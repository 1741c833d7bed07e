/* What the files of a restore share beyond dr/restore.h. */
#pragma once

/* A small regular file (a manifest) to another filesystem, as mv does: the
 * copy is written whole (temporary name, fsync, rename) before the source
 * goes. Logs its errors. */
int restore_move_file_across(const char *src, const char *dst);
