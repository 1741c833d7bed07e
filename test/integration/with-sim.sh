#!/usr/bin/env bash
# with-sim.sh CMD [ARGS...]: runs CMD against a fresh Kubernetes API simulator
# on its own loopback address, with KUBECONFIG and SIM_DIR exported, and stops
# the simulator (by PID) however CMD ends. With SIM_HTTP2=N (hack/sim-up.sh) the
# API is served over HTTP/2 with a GOAWAY every N streams, and CMD passes only
# if every request it made went over HTTP/2.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/ceo-sim-XXXXXX")
cleanup() {
        bash "$root/hack/sim-up.sh" stop "$dir" >/dev/null 2>&1 || true
        case "${KEEP_TEST_DIRS:-0}" in "" | 0) rm -rf "$dir" ;; esac
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
if [ -n "${SIM_HTTP2:-}" ]; then
        log=$dir/h2-access.log
        total=$(wc -l <"$log")
        other=$(grep -vc '^h2 ' "$log" || true)
        echo "with-sim: $total requests through the HTTP/2 front, $other of them not over HTTP/2;" \
                "GOAWAY after every $SIM_HTTP2 streams of a connection: at least $((total / SIM_HTTP2)) sent"
        if [ "$other" -ne 0 ] || [ "$total" -le "$SIM_HTTP2" ]; then
                grep -v '^h2 ' "$log" | head -5 >&2
                echo "with-sim: expected every request over HTTP/2 and more than one connection's worth" >&2
                exit 1
        fi
fi
