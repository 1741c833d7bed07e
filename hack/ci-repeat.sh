#!/usr/bin/env bash
# ci-repeat.sh [-n N] [--fresh] [REV]: runs .ci/run on a clean clone of this repository at REV
# (default HEAD) N times in a row (default 3), one after the other, and prints each run's
# wall time, its result and the tests that failed, then a summary line. It is how issue 38's
# "three consecutive green runs on one machine" are taken.
#
#   --fresh   every run starts from empty Kubernetes, etcd 3.6, Go module and Go build caches, as a new
#             machine would (the Kubernetes build, about 7 minutes, is then in every run);
#             without it the caches of the first run serve the others (a second run builds
#             nothing), as CI's cache does.
#
# Work goes under ${CI_REPEAT_DIR:-/tmp/ci-repeat}: run-K/ (the clone), run-K.log (its whole
# output) and cache/. A run's clone is removed when it passed. Exit status: 0 if every run
# passed, 1 otherwise. Runs nothing in parallel: the suite schedules its own load.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=3 fresh=0 rev=HEAD
while [ $# -gt 0 ]; do
        case $1 in
        -n) [ $# -ge 2 ] || { echo "ci-repeat: -n needs a count" >&2; exit 2; }
                n=$2; shift ;;
        --fresh) fresh=1 ;;
        -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "ci-repeat: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) rev=$1 ;;
        esac
        shift
done
case $n in '' | *[!0-9]* | 0) echo "ci-repeat: -n wants a positive count, not '$n'" >&2; exit 2 ;; esac
commit=$(git -C "$root" rev-parse --verify "$rev^{commit}") || { echo "ci-repeat: no commit $rev" >&2; exit 2; }
work=${CI_REPEAT_DIR:-/tmp/ci-repeat}
mkdir -p "$work"
failed_runs=0
summary=()
for k in $(seq 1 "$n"); do
        clone=$work/run-$k log=$work/run-$k.log cache=$work/cache
        rm -rf "$clone"
        [ $fresh = 1 ] && rm -rf "$cache"
        git clone -q "$root" "$clone"
        git -C "$clone" checkout -q "$commit"
        echo "ci-repeat: run $k of $n: $(git -C "$clone" log -1 --format='%h %s') (log $log)"
        t0=$(date +%s)
        rc=0
        (cd "$clone" && CEO_KUBE_CACHE=$cache/kube CEO_ETCD_CACHE=$cache/etcd GOMODCACHE=$cache/gomod \
                GOCACHE=$cache/gobuild \
                bash .ci/run) >"$log" 2>&1 || rc=$?
        secs=$(($(date +%s) - t0))
        took=$(printf '%d min %02d s' $((secs / 60)) $((secs % 60)))
        if [ $rc = 0 ]; then
                line="run $k: passed in $took"
                rm -rf "$clone"
        else
                failed_runs=$((failed_runs + 1))
                fails=$(grep -E '^[[:space:]]*[0-9]+ - .* \((Failed|Timeout|Not Run|SEGFAULT|Exception)' "$log" |
                        sed -E 's/^[[:space:]]*[0-9]+ - //' | tr '\n' ';' || true)
                line="run $k: FAILED (exit $rc) after $took: ${fails:-see the end of its log}"
        fi
        echo "ci-repeat: $line"
        summary+=("$line")
done
echo "ci-repeat: $((n - failed_runs)) of $n runs of $(git -C "$root" log -1 --format=%h "$commit") passed"
printf '  %s\n' "${summary[@]}"
[ $failed_runs = 0 ]
