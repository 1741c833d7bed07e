#!/usr/bin/env bash
# etcd client benchmark: builds a Release tree and runs bench/etcd-bench on a
# 3-member TLS etcd cluster (snapshot throughput against etcdctl, member
# list/status latency, certificates per second). Usage: etcd-bench.sh [DB_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
db_mb=${1:-200}
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DSANITIZE=OFF >/dev/null
make -s -C build-release -j2 etcd-bench
exec build-release/bench/etcd-bench "$db_mb"
