/* The node tools: the commands that run once, on a master (in the etcd pod,
 * its installer, or a cluster-admin's shell following a runbook) or on the
 * bootstrap host (render). */
#pragma once

#include "cmd/cmd.h"

extern const Command cmd_render;
/* The commands that run on a master node, in the etcd pod or its installer. */
extern const Command cmd_installer;
extern const Command cmd_discover_etcd_initial_cluster;
extern const Command cmd_readyz;
extern const Command cmd_rev;
extern const Command cmd_ensure_env;
extern const Command cmd_prune;
extern const Command cmd_install_host_tools;
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
