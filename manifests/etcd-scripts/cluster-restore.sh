#!/usr/bin/env bash
### Created by cluster-etcd-operator. DO NOT edit.
# cluster-restore.sh DIR
# Restores this master's etcd from the newest snapshot_*.db in DIR (and the
# static_kuberesources_*.tar.gz of the same backup) as a new one-member
# cluster. Run it on ONE master, after disable-etcd.sh on the others.
# The snapshot is verified before anything is touched; the current data dir
# is moved to /var/lib/etcd-backup, never deleted. With ETCD_ETCDCTL_RESTORE
# set, the snapshot is restored in place and the normal etcd pod comes back
# (the single-member path, for a member removed from a healthy cluster).
set -o errexit -o pipefail -o errtrace

scripts=/etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts
if [ ! -f "$scripts/etcd.env" ] || [ ! -f "$scripts/etcd-common-tools" ]; then
        echo "required dependencies not found in $scripts (etcd.env, etcd-common-tools): is the etcd pod installed on this master?" >&2
        exit 1
fi
. "$scripts/etcd.env"
. "$scripts/etcd-common-tools"
require_root

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
        echo "usage: $(basename "$0") BACKUP_DIR   (the directory cluster-backup.sh wrote)" >&2
        exit 1
fi
etcdctl_env
mode=--restore-pod
[ -z "${ETCD_ETCDCTL_RESTORE:-}" ] || mode=--in-place
exec "$CEO_BIN" cluster-restore $mode --config-dir "$CONFIG_FILE_DIR" --stop-timeout "$ETCD_STOP_TIMEOUT" "$1"
