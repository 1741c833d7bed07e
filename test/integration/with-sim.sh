#!/usr/bin/env bash
# with-sim.sh CMD [ARGS...]: runs CMD against a fresh Kubernetes API simulator
# on its own loopback address, with KUBECONFIG and SIM_DIR exported, and stops
# the simulator (by PID) however CMD ends.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/ceo-sim-XXXXXX")
cleanup() {
        bash "$root/hack/sim-up.sh" stop "$dir" >/dev/null 2>&1 || true
        if [ -z "${KEEP_TEST_DIRS:-}" ]; then rm -rf "$dir"; fi
}
trap cleanup EXIT
# A signal (ctest's timeout, ^C) stops CMD and then runs cleanup: bash runs a trap only
# once the foreground command returns, so CMD runs in the background and is waited for.
child=
on_signal() {
        if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; fi
        exit "$1"
}
trap 'on_signal 129' HUP
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
# A random 127.a.b.c so parallel tests never collide.
addr="127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))"
if ! SIM_LISTEN="$addr:0" bash "$root/hack/sim-up.sh" start "$dir" >"$dir/start.out" 2>&1; then
        cat "$dir/start.out" >&2
        tail -n 30 "$dir/sim.log" >&2 || true
        exit 1
fi
export KUBECONFIG=$dir/kubeconfig SIM_DIR=$dir
"$@" <&0 &
child=$!
wait "$child"
