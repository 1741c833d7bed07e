#!/usr/bin/env bash
### Created by cluster-etcd-operator. DO NOT edit.
# etcd-member-remove.sh [--force] NAME|ID
# Removes one etcd member (by its name, which is its master's name, or its
# ID in hex), asked of the members this master can reach with its own etcd
# client certificate. Refused, with nothing changed, when the voters that
# remain would not keep quorum with healthy members; a healthy voter only
# with --force. No data dir is touched anywhere. For
# docs/runbooks/restore-single-member.md. Upstream's script of this name
# takes the same NAME and removes whatever it names, quorum or not.
set -o errexit -o pipefail -o errtrace

scripts=/etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts
if [ ! -f "$scripts/etcd.env" ] || [ ! -f "$scripts/etcd-common-tools" ]; then
        echo "required dependencies not found in $scripts (etcd.env, etcd-common-tools): is the etcd pod installed on this master?" >&2
        exit 1
fi
. "$scripts/etcd.env"
. "$scripts/etcd-common-tools"
require_root

if [ $# -lt 1 ]; then
        echo "usage: $(basename "$0") [--force] NAME|ID   (the member list is printed either way)" >&2
        exit 1
fi
etcdctl_env
exec "$CEO_BIN" member-remove "$@"
