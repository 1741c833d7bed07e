/* Directories and trees on the local host, for the commands that run as root
 * on a master (the installer, backups, restores, prune): what `mkdir -p`,
 * `mv` without replacing anything and `rm -r` without following a link do,
 * each durable where the commands need it to survive a power loss. No
 * logging: callers say what failed. */
#pragma once

#include <sys/types.h>

/* mkdir -p with `mode` for every missing component (existing ones are left
 * as they are, each new one fsynced into its parent); -ENOTDIR when a
 * component is not a directory. */
int host_mkdir_p(const char *path, mode_t mode);

/* Moves `src` to `base`, or to base-1, base-2, ... base-99 when that is taken, never
 * replacing anything (renameat2 RENAME_NOREPLACE; a check first where the filesystem
 * lacks it), then fsyncs both directories. *ret_path (may be NULL): where it went.
 * -EEXIST when all hundred are taken. */
int host_move_aside(const char *src, const char *base, char **ret_path);

/* Removes DIR/NAME and everything under it, never following a symlink (a
 * link is removed, not what it points to); NAME is one path component.
 * 0 also when it is gone already. */
int host_remove_tree(const char *dir, const char *name);
