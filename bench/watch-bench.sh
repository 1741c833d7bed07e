#!/usr/bin/env bash
# Watch decode-and-cache benchmark: our pod informer (bench/watch-bench.c, cache
# kept) against kubectl (client-go) on the same bytes from bench/watch-replay.py,
# one client at a time, in the same run. Prints a table and the target verdict
# (at least 10x kubectl's events/s at no more than half of its peak RSS: issue 11 restated the quarter).
#
#   bench/watch-bench.sh [--events N] [--no-build]
#
# How each figure is taken:
#   seconds   wall time of the whole client process, start to exit (date +%s%N
#             around it), the same way for both clients;
#   peak RSS  /usr/bin/time -v's "Maximum resident set size" for both clients;
#             when /usr/bin/time is missing, the last VmHWM read from
#             /proc/PID/status while the client runs (polled every 20 ms; our
#             client's own getrusage figure is printed beside it as a check).
# kubectl exits by itself (status 0) when the server ends the stream after N
# events; a watchdog stops it by PID if it is still running 10 s after it has
# printed N lines, or after the overall timeout.
set -euo pipefail

EVENTS=100000
BUILD=1
TIMEOUT=900
while [ $# -gt 0 ]; do
        case "$1" in
        --events) EVENTS="$2"; shift 2 ;;
        --events=*) EVENTS="${1#*=}"; shift ;;
        --no-build) BUILD=0; shift ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
        esac
done
case "$EVENTS" in ''|*[!0-9]*|0) echo "--events wants a positive integer" >&2; exit 2 ;; esac

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/build-release/bench/watch-bench"
for tool in python3 kubectl curl; do
        command -v "$tool" >/dev/null || { echo "missing $tool: install it first (apt-get install python3 curl; kubectl)" >&2; exit 1; }
done
HAVE_TIME=0
# WATCH_BENCH_NO_TIME=1 forces the VmHWM fallback (to test it where time exists).
[ -x /usr/bin/time ] && [ -z "${WATCH_BENCH_NO_TIME:-}" ] && HAVE_TIME=1

if [ "$BUILD" = 1 ]; then
        cmake -S "$ROOT" -B "$ROOT/build-release" -DCMAKE_BUILD_TYPE=Release -DSANITIZE=OFF >/dev/null
        make -C "$ROOT/build-release" -j"$(nproc)" watch-bench >/dev/null
fi
[ -x "$BIN" ] || { echo "no $BIN: run without --no-build" >&2; exit 1; }

WORK="$(mktemp -d /tmp/watch-bench.XXXXXX)"
SERVER_PID=""
CLIENT_PID=""
cleanup() {
        if [ -n "$CLIENT_PID" ]; then kill "$CLIENT_PID" 2>/dev/null || true; fi
        if [ -n "$SERVER_PID" ]; then
                kill "$SERVER_PID" 2>/dev/null || true
                wait "$SERVER_PID" 2>/dev/null || true
        fi
        rm -rf "$WORK"
}
trap cleanup EXIT

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT"

python3 "$ROOT/bench/watch-replay.py" "$PORT" "$EVENTS" 2>"$WORK/server.log" &
SERVER_PID=$!
# The server pre-encodes the whole stream (about 1 GB for 100,000 events) before it listens.
for _ in $(seq 1 3000); do
        curl -sf -o /dev/null "$URL/version" && break
        kill -0 "$SERVER_PID" 2>/dev/null || { echo "replay server died:" >&2; cat "$WORK/server.log" >&2; exit 1; }
        sleep 0.1
done
curl -sf -o /dev/null "$URL/version" || { echo "replay server did not start listening" >&2; exit 1; }
echo "server: $(cat "$WORK/server.log") on $URL"

now_ns() { date +%s%N; }

# Without /usr/bin/time: polls VmHWM (the kernel's peak RSS) of PID until it
# exits and prints the last value read, in kB.
poll_hwm() {
        local pid="$1" hwm=0 v
        while kill -0 "$pid" 2>/dev/null; do
                v="$(awk '/^VmHWM:/ {print $2}' /proc/"$pid"/status 2>/dev/null || true)"
                [ -n "$v" ] && hwm="$v"
                sleep 0.02
        done
        echo "$hwm"
}

# Stops a client that outlives its work: kubectl 10 s after it has printed N
# lines, any client after $TIMEOUT s. Stops the client itself (the child of
# /usr/bin/time when there is one), by PID.
watchdog() {
        local name="$1" pid="$2" out="$3" t0="$4" done_at=0 victim
        while kill -0 "$pid" 2>/dev/null; do
                if [ "$name" = kubectl ] && [ "$done_at" = 0 ] && [ "$(wc -l <"$out")" -ge "$EVENTS" ]; then
                        done_at="$(now_ns)"
                fi
                if { [ "$done_at" != 0 ] && [ $(( $(now_ns) - done_at )) -gt 10000000000 ]; } ||
                   [ $(( $(now_ns) - t0 )) -gt $(( TIMEOUT * 1000000000 )) ]; then
                        victim="$pid"
                        if [ "$HAVE_TIME" = 1 ]; then
                                victim="$(cat /proc/"$pid"/task/*/children 2>/dev/null | awk '{print $1; exit}')"
                        fi
                        echo "$name: still running; stopping PID ${victim:-$pid}" >&2
                        kill "${victim:-$pid}" 2>/dev/null || true
                        return
                fi
                sleep 0.2
        done
}

# run_client NAME OUTFILE CMD...: runs CMD with stdout to OUTFILE, records
# seconds and peak RSS (kB) in $WORK/NAME.secs and $WORK/NAME.rss.
run_client() {
        local name="$1" out="$2"; shift 2
        local t0 t1 pid wd_pid hwm_pid="" rc=0
        : >"$out"
        t0="$(now_ns)"
        if [ "$HAVE_TIME" = 1 ]; then
                /usr/bin/time -v -o "$WORK/$name.time" "$@" >"$out" 2>"$WORK/$name.err" &
        else
                "$@" >"$out" 2>"$WORK/$name.err" &
        fi
        pid=$!
        CLIENT_PID="$pid"
        watchdog "$name" "$pid" "$out" "$t0" &
        wd_pid=$!
        if [ "$HAVE_TIME" = 0 ]; then
                poll_hwm "$pid" >"$WORK/$name.rss" &
                hwm_pid=$!
        fi
        wait "$pid" || rc=$?
        t1="$(now_ns)"
        CLIENT_PID=""
        kill "$wd_pid" 2>/dev/null || true
        wait "$wd_pid" 2>/dev/null || true
        [ -n "$hwm_pid" ] && wait "$hwm_pid"
        [ "$rc" = 0 ] || { echo "$name exited with status $rc:" >&2; tail -5 "$WORK/$name.err" >&2; }
        awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }' >"$WORK/$name.secs"
        if [ "$HAVE_TIME" = 1 ]; then
                awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/$name.time" >"$WORK/$name.rss"
        fi
}

# For comparison only (not in the verdict; run first, so the measured clients
# both find the server past its start): the same informer keeping whole objects.
run_client ours-all "$WORK/ours-all.out" env WATCH_BENCH_KEEP_ALL=1 "$BIN" "$URL" "$EVENTS" "$TIMEOUT"
echo "ours, whole objects: $(grep '^watch-bench ' "$WORK/ours-all.out" || echo 'no result') peak RSS $(cat "$WORK/ours-all.rss") kB"
sleep 1
# Ours: the informer with its cache, objects trimmed as the operator trims
# them (operator_cache_transform); it prints one key=value line.
run_client ours "$WORK/ours.out" "$BIN" "$URL" "$EVENTS" "$TIMEOUT"
OURS_LINE="$(grep '^watch-bench ' "$WORK/ours.out" || true)"
[ -n "$OURS_LINE" ] || { echo "our client printed no result" >&2; exit 1; }
OURS_EVENTS="$(sed -n 's/.* events=\([0-9]*\).*/\1/p' <<<"$OURS_LINE")"
echo "ours:    $OURS_LINE"
sleep 1

# kubectl, exactly as bench/README.md's reference line (stdout counted with wc -l).
KCACHE="$WORK/kube-cache"
mkdir -p "$KCACHE"
run_client kubectl "$WORK/kubectl.out" kubectl --server="$URL" --cache-dir "$KCACHE" get pods -w -o name
KUBECTL_EVENTS="$(wc -l <"$WORK/kubectl.out")"
echo "kubectl: printed $KUBECTL_EVENTS lines"

OS="$(cat "$WORK/ours.secs")" ORSS="$(cat "$WORK/ours.rss")"
KS="$(cat "$WORK/kubectl.secs")" KRSS="$(cat "$WORK/kubectl.rss")"
awk -v n="$EVENTS" -v oe="$OURS_EVENTS" -v os="$OS" -v orss="$ORSS" -v ke="$KUBECTL_EVENTS" -v ks="$KS" \
    -v krss="$KRSS" -v how="$([ "$HAVE_TIME" = 1 ] && echo '/usr/bin/time -v' || echo 'VmHWM polling')" 'BEGIN {
        ote = oe / os; kte = ke / ks; omb = orss / 1024; kmb = krss / 1024
        printf "\n%-8s %10s %10s %10s %14s\n", "client", "events", "seconds", "events/s", "peak RSS MB"
        printf "%-8s %10d %10.3f %10.0f %14.1f\n", "ours", oe, os, ote, omb
        printf "%-8s %10d %10.3f %10.0f %14.1f\n", "kubectl", ke, ks, kte, kmb
        tr = ote / kte; rr = omb / kmb
        printf "\nthroughput ours/kubectl: %.2fx (target >= 10x)\n", tr
        printf "peak RSS   ours/kubectl: %.2f (target <= 0.5)\n", rr
        printf "(seconds: process wall time, start to exit; peak RSS: %s)\n", how
        ok = (oe >= n && ke >= n && tr >= 10 && rr <= 0.5)
        printf "verdict: %s\n", ok ? "TARGET MET" : "TARGET NOT MET"
}'
