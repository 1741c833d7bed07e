/* Processes on the local host: running a tool (tar, cp, etcdctl, crictl) to
 * its end, and this process's own clean stop on SIGTERM and SIGINT. */
#pragma once

#include "loop/loop.h"

#define HOST_COMMAND_OUTPUT_MAX (1u << 20)

/* Runs argv (argv[0] from PATH) to its end, stdin and stderr inherited;
 * *ret_out gets its stdout when asked for. Returns the exit status (128+N
 * for signal N), or < 0 when it could not run (-ENOENT, nothing spawned, when
 * argv[0] is no executable on PATH), and -E2BIG (after the child
 * ended) when its stdout was over HOST_COMMAND_OUTPUT_MAX: never a cut answer.
 * No timeout: tar and cp take as long as the data is large. */
int host_command_run(const char *const argv[], char **ret_out);

/* SIGTERM and SIGINT end loop_run() with 0 (the sidecars' clean stop). */
int host_exit_on_signals(Loop *l);
