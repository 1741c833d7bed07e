#!/usr/bin/env bash
### Created by cluster-etcd-operator. DO NOT edit.
# quorum-restore.sh [--force]
# Brings a cluster that lost quorum back from THIS member's data: etcd
# restarts as a one-member cluster on its own data dir (--force-new-cluster),
# which is first copied to /var/lib/etcd-backup. It asks every member it can
# reach and refuses unless this is the voting member with the highest raft
# index (--force: anyway).
# The other masters rejoin as new members once the operator rolls out.
set -o errexit -o pipefail -o errtrace

scripts=/etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts
if [ ! -f "$scripts/etcd.env" ] || [ ! -f "$scripts/etcd-common-tools" ]; then
        echo "required dependencies not found in $scripts (etcd.env, etcd-common-tools): is the etcd pod installed on this master?" >&2
        exit 1
fi
. "$scripts/etcd.env"
. "$scripts/etcd-common-tools"
require_root

force=
if [ "${1:-}" = "--force" ]; then
        force=--force
        shift
fi
if [ $# -ne 0 ]; then
        echo "usage: $(basename "$0") [--force]   (it restores from this master's own data; it refuses" >&2
        echo "       unless this is the voting member with the highest raft index, or --force)" >&2
        exit 1
fi
etcdctl_env
exec "$CEO_BIN" cluster-restore --quorum-restore $force --config-dir "$CONFIG_FILE_DIR" --stop-timeout "$ETCD_STOP_TIMEOUT"
