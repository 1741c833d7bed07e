#!/usr/bin/env bash
### Created by cluster-etcd-operator. DO NOT edit.
# cluster-backup.sh [--force] DIR [--s3-FLAG VALUE...]
# An etcd snapshot of this master's member and the static pods' current
# revision directories, into DIR: snapshot_<ts>.db and
# static_kuberesources_<ts>.tar.gz (with --force both end in
# __POSSIBLY_DIRTY__). Refused while kube-apiserver, kube-controller-manager,
# kube-scheduler or etcd is Progressing, unless --force. The snapshot is
# verified before this reports success; a failed or killed backup leaves no
# file under a backup's name. The --s3-... flags of `cluster-etcd-operator
# cluster-backup` (--s3-credentials-dir, --s3-bucket, --s3-prefix, ...)
# also upload the finished backup to an S3-compatible store.
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
if [ $# -lt 1 ] || [ -z "$1" ] || [ -f "$1" ] || [ "${1#-}" != "$1" ]; then
        echo "usage: $(basename "$0") [--force] DIR [--s3-FLAG VALUE...]   (DIR: a directory, created if missing)" >&2
        exit 1
fi
dir=$1
shift
for arg in "$@"; do
        case "$arg" in
        --s3-*=* | --s3-*) ;;
        -*)
                echo "$(basename "$0"): $arg: only --s3-... flags may follow DIR (see cluster-etcd-operator cluster-backup --help)" >&2
                exit 1
                ;;
        esac
done
etcdctl_env
exec "$CEO_BIN" cluster-backup $force --config-dir "$CONFIG_FILE_DIR" --kubeconfig "$KUBECONFIG" "$@" "$dir"
