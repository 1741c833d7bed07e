#!/usr/bin/env bash
# with-kube.sh [--fault-proxy] CMD [ARGS...]: runs CMD against Kubernetes' own control plane
# (kube-apiserver, kube-controller-manager, kube-scheduler on a TLS etcd of their own, on a
# random 127.a.b.0/24), with KUBECONFIG and KUBE_DIR exported, and stops all of it (by PID)
# however CMD ends. With --fault-proxy, KUBECONFIG names test/kube/api-fault-proxy in front of
# kube-apiserver, whose /sim/* controls the test reaches through its own client, as on the
# simulator (with-sim.sh). test/kube/with-kube.py does the work.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/../kube/with-kube.py" "$@"
