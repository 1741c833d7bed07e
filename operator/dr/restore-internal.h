/* What the files of a restore share beyond dr/restore.h. */
#pragma once

/* A small regular file (a manifest) to another filesystem, as mv does: the
 * copy is written whole (temporary name, fsync, rename) before the source
 * goes. Logs its errors. */
int restore_move_file_across(const char *src, const char *dst);

/* Runs `TOOL snapshot ARGS...` with etcd's snapshot tool: etcdutl (etcd 3.5 and later; etcd
 * 3.6's etcdctl has no snapshot commands left), etcdctl when the host has no etcdutl (etcd
 * 3.4). *ret_tool names the one that ran. As host_command_run(): -ENOENT when neither is on
 * PATH. `args` ends with NULL and holds at most 16 entries. */
int restore_snapshot_tool_run(const char *const args[], char **ret_out, const char **ret_tool);
