#!/usr/bin/env bash
# Defragmentation benchmark: builds a Release tree and runs bench/defrag-bench
# on a 3-member TLS etcd cluster beside Kubernetes' own control plane
# (test/integration/with-kube.sh: the operator's status goes to kube-apiserver): the operator's
# DefragController against `etcdctl defrag` member by member, on the same
# fragmented database, with a writer on each member.
# Usage: defrag-bench.sh [LIVE_MB] (default 200: 200 MiB in use, as much freed)
set -euo pipefail
cd "$(dirname "$0")/.."
live_mb=${1:-200}
bash hack/install-deps.sh >/dev/null
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DSANITIZE=OFF >/dev/null
make -s -C build-release -j2 defrag-bench cluster-etcd-operator
exec bash test/integration/with-kube.sh build-release/bench/defrag-bench "$live_mb"
