/* The subcommand table entry, and helpers every subcommand uses for its
 * common flags (-v, --kubeconfig, --help). */
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

extern const Command cmd_operator;
extern const Command cmd_render;
/* The commands that run on a master node, in the etcd pod or its installer. */
extern const Command cmd_installer;
extern const Command cmd_discover_etcd_initial_cluster;
extern const Command cmd_readyz;
extern const Command cmd_rev;
extern const Command cmd_ensure_env;
extern const Command cmd_prune;
/* Disaster recovery. */
extern const Command cmd_cluster_backup;
extern const Command cmd_cluster_restore;
extern const Command cmd_bump_revision;
extern const Command cmd_wait_for_stable_etcd;
extern const Command cmd_member_remove;
extern const Command cmd_wait_for_ceo;
/* Scheduled backups. */
extern const Command cmd_prune_backups;
extern const Command cmd_verify;
extern const Command cmd_request_backup;
/* S3-compatible object storage. */
extern const Command cmd_s3;

/* Logs "<cmd>: <message>" as an error and returns EXIT_USAGE. */
int cmd_usage_error(const char *cmd, const char *fmt, ...) _printf_(2, 3);

/* Parses "-v=N"/"--v=N"/"-vN" style verbosity; returns true if `arg` was one. */
bool cmd_parse_verbosity(const char *arg);
/* Applies and removes every verbosity flag from argv; returns the new argc. */
int cmd_take_verbosity(int argc, char *argv[]);
