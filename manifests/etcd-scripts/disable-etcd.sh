#!/usr/bin/env bash
### Created by cluster-etcd-operator. DO NOT edit.
# disable-etcd.sh
# Stops etcd on this master: moves etcd-pod.yaml to
# /home/core/assets/manifests-stopped/ and waits until the etcd containers
# are gone. The data dir is not touched. Undone by a new revision (the
# installer writes etcd-pod.yaml again), or by moving the file back.
set -o errexit -o pipefail -o errtrace

scripts=/etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-scripts
if [ ! -f "$scripts/etcd.env" ] || [ ! -f "$scripts/etcd-common-tools" ]; then
        echo "required dependencies not found in $scripts (etcd.env, etcd-common-tools): is the etcd pod installed on this master?" >&2
        exit 1
fi
. "$scripts/etcd.env"
. "$scripts/etcd-common-tools"
require_root

mv_static_pods etcd-pod.yaml
wait_for_containers_to_stop
echo "etcd is stopped on $ETCD_THIS_NODE"
