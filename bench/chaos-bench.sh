#!/usr/bin/env bash
# Issue 15's targets, measured in one run: the whole bootstrap on Kubernetes'
# own control plane (test/kube/control-plane), calm and then under the API
# fault profile of test/e2e/test_chaos.py (watches ended every 2 s,
# 409/429/503 bursts, compaction every 15 s), the operator behind
# test/kube/api-fault-proxy (its requests alone are counted there). Prints
# each run's FIGURES line and the ratios: time to settle, API requests per
# second (all, and without watch requests: a watch the server ends must be
# opened again), and the longest run of identical writes the server had
# already accepted. Not a timed test.
#   bench/chaos-bench.sh [BUILD_DIR]    (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/${1:-build}
[ -x "$build/cluster-etcd-operator" ] || { echo "chaos-bench: build $build first" >&2; exit 1; }
# The kubelet simulator runs each container in its image's root filesystem (CMake's `images` target).
[ -d "$build/images/etcd/usr/bin" ] ||
        { echo "chaos-bench: $build has no image root filesystems: make -C $build images" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/chaos-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

for mode in calm chaos; do
        flag=; [ "$mode" = calm ] && flag=--calm
        echo "chaos-bench: $mode bootstrap..."
        if ! python3 "$root/test/e2e/test_chaos.py" "$build" $flag >"$out/$mode.log" 2>&1; then
                tail -n 30 "$out/$mode.log" >&2
                echo "chaos-bench: the $mode run failed" >&2
                exit 1
        fi
        grep -o 'FIGURES .*' "$out/$mode.log" | sed 's/; by verb.*//'
done
python3 - "$out/calm.log" "$out/chaos.log" <<'PY'
import re, sys
def figures(path):
    line = [l for l in open(path) if "FIGURES" in l][-1]
    m = re.search(r"settled in (\d+) s; (\d+) API requests \(([\d.]+)/s\), (\d+) of them watches "
                  r"\(([\d.]+)/s without\).*after it was accepted: (\d+)", line)
    return dict(zip(("settle", "requests", "rps", "watches", "rps_nowatch", "run"), map(float, m.groups())))
calm, chaos = figures(sys.argv[1]), figures(sys.argv[2])
print("time to settle: %.0f s calm, %.0f s under faults: %.2fx (target <= 1.5x)" % (
    calm["settle"], chaos["settle"], chaos["settle"] / calm["settle"]))
print("API requests/s: %.1f calm, %.1f under faults: %.2fx (target <= 1.5x)" % (
    calm["rps"], chaos["rps"], chaos["rps"] / calm["rps"]))
print("  without watch requests: %.1f calm, %.1f under faults: %.2fx" % (
    calm["rps_nowatch"], chaos["rps_nowatch"], chaos["rps_nowatch"] / calm["rps_nowatch"]))
print("longest run of identical accepted writes: %d calm, %d under faults (target <= 3)" % (
    calm["run"], chaos["run"]))
PY
