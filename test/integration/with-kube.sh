#!/usr/bin/env bash
# with-kube.sh [--fault-proxy | --http2-front N] CMD [ARGS...]: runs CMD against Kubernetes'
# own control plane (kube-apiserver, kube-controller-manager, kube-scheduler on a TLS etcd of
# their own, on a random 127.a.b.0/24), with KUBECONFIG and KUBE_DIR exported, and stops all
# of it (by PID) however CMD ends. With --fault-proxy, KUBECONFIG names test/kube/api-fault-proxy
# in front of kube-apiserver, whose /sim/* controls the test reaches through its own client.
# With --http2-front N, nghttpx serves the API over HTTP/2 in front of that proxy, with a GOAWAY
# after every N streams of a connection, and CMD passes only if every request it made went over
# HTTP/2. test/kube/with-kube.py does the work.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/../kube/with-kube.py" "$@"
