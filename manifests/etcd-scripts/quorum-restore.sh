#!/usr/bin/env bash
### Created by cluster-etcd-operator. DO NOT edit.
# quorum-restore.sh
# Brings a cluster that lost quorum back from THIS member's data (run it on
# the voting member with the highest raft index: `etcdctl endpoint status
# -w table`): etcd restarts as a one-member cluster on its own data dir
# (--force-new-cluster), which is first copied to /var/lib/etcd-backup.
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

if [ $# -ne 0 ]; then
        echo "usage: $(basename "$0")   (no arguments: it restores from this master's own data)" >&2
        exit 1
fi
etcdctl_env
exec "$CEO_BIN" cluster-restore --quorum-restore --config-dir "$CONFIG_FILE_DIR" --stop-timeout "$ETCD_STOP_TIMEOUT"
