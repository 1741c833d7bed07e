/* What every subcommand shares: its table entry, its exit codes, and the
 * parsing of the common flags (-v, --kubeconfig, --help). The commands
 * themselves live above this layer: the operator's process in
 * operator/process (process.h), the node tools in operator/node (node.h). */
#pragma once

#include "base/macro.h"

enum {
        EXIT_OK = 0,
        EXIT_RUNTIME = 1,
        EXIT_USAGE = 2,
};

typedef struct Command {
        const char *name;
        const char *summary;
        int (*run)(int argc, char *argv[]);
} Command;

/* Logs "<cmd>: <message>" as an error and returns EXIT_USAGE. */
int cmd_usage_error(const char *cmd, const char *fmt, ...) _printf_(2, 3);

/* Parses "-v=N"/"--v=N"/"-vN" style verbosity; returns true if `arg` was one. */
bool cmd_parse_verbosity(const char *arg);
/* Applies and removes every verbosity flag from argv; returns the new argc. */
int cmd_take_verbosity(int argc, char *argv[]);
