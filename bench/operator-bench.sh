#!/usr/bin/env bash
# The operator's own figures on local-up's bootstrap on kube-apiserver (bench/README.md,
# "Operator (operator-bench.sh)"): RSS and CPU during the bootstrap and at
# rest, API requests per second at rest, the reaction latency (another writer's
# edit of host-etcd-2 -> the operator's rewrite; --reaction address: a master's
# InternalIP change -> host-etcd-2, for clusters whose masters can move), and the
# 1 -> 4 -> 3 breakdown from the logs.
#
#   bench/operator-bench.sh [--no-build] [--keep] [--perf] [--n N] [--rest-wait S]
#                           [--rest-window S] [--pause S] [--quiet-cap S]
#                           [--reaction repair|address]
#
# It builds the operator in Release (build-release: -DCMAKE_BUILD_TYPE=Release
# -DSANITIZE=OFF) and runs hack/local-up.sh unchanged from a scratch tree
# whose top-level entries are symlinks to this one, except CMakeLists.txt: a
# stand-in project whose `cluster-etcd-operator` target copies the Release
# binary, so local-up's own `cmake`/`make` steps hand it (and the kubelet
# simulators' installers) that binary. State and logs go under a fresh
# /tmp/operator-bench.XXXXXX (LOCAL_UP_DIR), on LOCAL_UP_NET (default
# 127.0.150). Everything started is stopped on exit (local-up --down), unless
# --keep. The measuring is bench/operator_bench.py's; its JSON and the logs
# stay in the scratch directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
net=${LOCAL_UP_NET:-127.0.150}
build=1 keep=0 perf=0 pyargs=()
while [ $# -gt 0 ]; do
        case $1 in
        --no-build) build=0 ;;
        --keep) keep=1 ;;
        --perf) perf=1 ;;
        --n | --rest-wait | --rest-window | --pause | --quiet-cap | --reaction)
                [ $# -ge 2 ] || { echo "operator-bench: $1 needs a value" >&2; exit 2; }
                pyargs+=("$1" "$2"); shift ;;
        -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "operator-bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
        esac
        shift
done
case $net in 127.*) ;; *) echo "operator-bench: LOCAL_UP_NET must be in 127.0.0.0/8" >&2; exit 2 ;; esac

rel=$root/build-release
if [ $build = 1 ]; then
        echo "operator-bench: building the operator in Release ($rel)"
        cmake -S "$root" -B "$rel" -DCMAKE_BUILD_TYPE=Release -DSANITIZE=OFF >/dev/null
        make -s -C "$rel" -j2 cluster-etcd-operator rss-floor
fi
[ -x "$rel/cluster-etcd-operator" ] || { echo "operator-bench: no $rel/cluster-etcd-operator" >&2; exit 1; }

work=$(mktemp -d /tmp/operator-bench.XXXXXX)
tree=$work/tree state=$work/state
mkdir "$tree"
for e in "$root"/*; do
        n=$(basename "$e")
        case $n in CMakeLists.txt | build | build-*) continue ;; esac
        ln -s "$e" "$tree/$n"
done
cat >"$tree/CMakeLists.txt" <<EOF
# operator-bench's stand-in: local-up builds this, which hands over the Release binary.
cmake_minimum_required(VERSION 3.13)
project(operator-bench-tree NONE)
add_custom_target(cluster-etcd-operator ALL
        COMMAND \${CMAKE_COMMAND} -E copy_if_different "$rel/cluster-etcd-operator"
                \${CMAKE_BINARY_DIR}/cluster-etcd-operator)
# The strict images local-up's kubelets run, as the real project builds them, around that binary.
add_custom_target(images ALL
        COMMAND python3 "$root/hack/image-rootfs.py" "$root/images/etcd/Containerfile"
                \${CMAKE_BINARY_DIR} \${CMAKE_BINARY_DIR}/images/etcd
        COMMAND python3 "$root/hack/image-rootfs.py" "$root/images/operator/Containerfile"
                \${CMAKE_BINARY_DIR} \${CMAKE_BINARY_DIR}/images/operator
        COMMAND python3 "$root/hack/image-rootfs.py" "$root/images/base/Containerfile"
                \${CMAKE_BINARY_DIR} \${CMAKE_BINARY_DIR}/images/base)
add_dependencies(images cluster-etcd-operator)
EOF

cleanup() {
        local rc=$?
        trap - EXIT INT TERM
        if [ $keep = 1 ]; then
                echo "operator-bench: left running; stop it with: LOCAL_UP_DIR=$state LOCAL_UP_NET=$net $tree/hack/local-up.sh --down"
        else
                if [ -d "$state/pids" ]; then
                        LOCAL_UP_DIR=$state LOCAL_UP_NET=$net bash "$tree/hack/local-up.sh" --down >/dev/null 2>&1 || true
                fi
                if [ -d "$state/logs" ]; then
                        cp -r "$state/logs" "$work/logs"
                        cp "$state/kube/"*.log "$work/logs/" 2>/dev/null || true
                fi
                rm -rf "$state" "$tree"
        fi
        echo "operator-bench: results and logs in $work"
        exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ $perf = 1 ]; then
        command -v perf >/dev/null || { echo "operator-bench: --perf needs perf" >&2; exit 1; }
        pyargs+=(--perf "$work")
fi
python3 "$root/bench/operator_bench.py" run --local-up "$tree/hack/local-up.sh" --state "$state" --net "$net" \
        --local-up-log "$work/local-up.log" --json "$work/results.json" --rss-floor "$rel/bench/rss-floor" \
        "${pyargs[@]}"
