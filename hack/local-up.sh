#!/usr/bin/env bash
# The demo: installs what is needed, builds, and starts a simulated control
# plane on loopback: the Kubernetes API simulator (backed by its own real
# etcd) with the OpenShift CRDs, the objects the cluster-version operator
# would create (etcds/cluster, infrastructures/cluster, networks/cluster,
# clusteroperators/etcd), and three master Nodes. Prints the line
# `export KUBECONFIG=...` and kubectl commands to try.
#
#   hack/local-up.sh          start (state under .local-up/)
#   hack/local-up.sh --down   stop everything it started (by PID)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${LOCAL_UP_DIR:-$root/.local-up}
addr=${LOCAL_UP_ADDR:-127.0.100.1}

down() {
        if [ -d "$state/sim" ]; then
                bash "$root/hack/sim-up.sh" stop "$state/sim" || true
        fi
        echo "local-up: stopped"
}

if [ "${1:-}" = "--down" ]; then
        down
        exit 0
fi
if [ $# -gt 0 ]; then
        echo "usage: hack/local-up.sh [--down]" >&2
        exit 2
fi

bash "$root/hack/install-deps.sh"
cmake -S "$root" -B "$root/build" >/dev/null
make -s -C "$root/build" -j2 cluster-etcd-operator

if [ -f "$state/sim/sim.pid" ] && kill -0 "$(cat "$state/sim/sim.pid")" 2>/dev/null; then
        echo "local-up: already running; 'hack/local-up.sh --down' first" >&2
        exit 1
fi
mkdir -p "$state"
SIM_LISTEN="$addr:6443" bash "$root/hack/sim-up.sh" start "$state/sim" >/dev/null
export KUBECONFIG=$state/sim/kubeconfig
kc() { kubectl --cache-dir "$state/kubectl-cache" "$@"; }

echo "local-up: loading the OpenShift config objects and three master nodes"
kc apply -f "$root/manifests/local-up/" >/dev/null
kc patch infrastructure cluster --subresource=status --type=merge -p '{"status":{"infrastructureName":"local-up","platformStatus":{"type":"None"},"controlPlaneTopology":"HighlyAvailable","infrastructureTopology":"HighlyAvailable","apiServerURL":"https://'"$addr"':6443","apiServerInternalURI":"https://'"$addr"':6443","etcdDiscoveryDomain":""}}' >/dev/null
for i in 0 1 2; do
        kc apply -f - >/dev/null <<NODE
apiVersion: v1
kind: Node
metadata:
  name: master-$i
  labels:
    node-role.kubernetes.io/master: ""
    node-role.kubernetes.io/control-plane: ""
    kubernetes.io/hostname: master-$i
NODE
        kc patch node "master-$i" --subresource=status --type=merge -p "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.100.$((i + 10))\"},{\"type\":\"Hostname\",\"address\":\"master-$i\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"kubelet is posting ready status\"}]}}" >/dev/null
done

cat <<MSG

The simulated control plane is up (API simulator on https://$addr:6443, backed by a real etcd).

export KUBECONFIG=$KUBECONFIG

Try:
  kubectl get nodes -o wide
  kubectl get etcd cluster -o yaml
  kubectl get infrastructures.config.openshift.io cluster -o yaml
  kubectl get co etcd
  kubectl get crd

The operator itself runs with: build/cluster-etcd-operator operator --kubeconfig \$KUBECONFIG --listen 127.0.0.1:8443 --leader-elect-lease-duration 15s --leader-elect-renew-deadline 10s --leader-elect-retry-period 2s
(no controllers yet: it takes the lease and serves /healthz, /readyz, /metrics)

Stop everything with: hack/local-up.sh --down
MSG
