#!/usr/bin/env bash
# kubelet-sim.sh - start/stop kubelet emulators (test/sim/kubelet-sim), one per node
#
# Usage:
#   hack/kubelet-sim.sh start NODE_DIR --node-name NAME --node-ip 127.X.Y.Z [flags...]
#       start kubelet-sim in the background with --root NODE_DIR (log in
#       NODE_DIR/kubelet-sim.log) and wait until the API server holds its Node
#       with Ready=True (NODE_DIR/kubelet-sim.ready). --kubeconfig defaults to
#       the node's own (CN system:node:NAME, as the Node authorizer and
#       NodeRestriction want) from the control plane in $KUBE_DIR/kube
#       (test/integration/with-kube.sh exports KUBE_DIR; test/kube/control-plane
#       node-kubeconfig issues it), else $KUBECONFIG; other flags (--master,
#       --operator-binary, ...) pass through.
#   hack/kubelet-sim.sh stop NODE_DIR...
#       send SIGTERM to the PID in NODE_DIR/kubelet-sim.pid (it stops its
#       containers, marks its Node NotReady and exits) and wait; SIGKILL after
#       KUBELET_SIM_STOP_S (default 60) seconds.
#
# Environment: KUBE_DIR, KUBECONFIG, KUBELET_SIM_WAIT_S (default 30), KUBELET_SIM_STOP_S.
# Needs root (mount namespaces). See test/sim/KUBELET-SIM.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kubelet=$root/test/sim/kubelet-sim

die() { echo "kubelet-sim: $*" >&2; exit 1; }

# is_ours PID WORD: the process exists and its command line mentions WORD
is_ours() {
        [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' < "/proc/$1/cmdline" | grep -q -- "$2"
}

wait_gone() { # wait_gone PID SECONDS
        local i
        for ((i = 0; i < $2 * 10; i++)); do
                kill -0 "$1" 2>/dev/null || return 0
                sleep 0.1
        done
        return 1
}

cmd_start() {
        local dir=$1; shift
        mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
        if [ -f "$dir/kubelet-sim.pid" ] && is_ours "$(cat "$dir/kubelet-sim.pid")" "kubelet-sim"; then
                die "already running for $dir (pid $(cat "$dir/kubelet-sim.pid")); stop it first"
        fi
        local args=("$@") a have_kc="" node="" prev=""
        for a in "${args[@]}"; do
                case $a in --kubeconfig|--kubeconfig=*) have_kc=1 ;; --node-name=*) node=${a#*=} ;; esac
                [ "$prev" = --node-name ] && node=$a
                prev=$a
        done
        if [ -z "$have_kc" ] && [ -n "${KUBE_DIR:-}" ] && [ -f "$KUBE_DIR/kube/ca.key" ]; then
                [ -n "$node" ] || die "--node-name is required"
                args+=(--kubeconfig "$(python3 "$root/test/kube/control-plane" node-kubeconfig "$KUBE_DIR/kube" "$node")")
        elif [ -z "$have_kc" ]; then
                [ -n "${KUBECONFIG:-}" ] || die "no --kubeconfig, no control plane in \$KUBE_DIR/kube and KUBECONFIG is unset"
                args+=(--kubeconfig "$KUBECONFIG")
        fi
        [ "$(id -u)" = 0 ] || die "needs root (mount namespaces)"
        rm -f "$dir/kubelet-sim.ready" "$dir/kubelet-sim.pid"
        # own session: a ^C meant for the caller's terminal does not reach the kubelet
        setsid "$kubelet" --root "$dir" "${args[@]}" >>"$dir/kubelet-sim.log" 2>&1 </dev/null &
        local pid=$! i
        for ((i = 0; i < ${KUBELET_SIM_WAIT_S:-30} * 10; i++)); do
                [ -f "$dir/kubelet-sim.ready" ] && break
                # setsid may fork: once the kubelet wrote its PID, watch that one
                [ -s "$dir/kubelet-sim.pid" ] && pid=$(cat "$dir/kubelet-sim.pid")
                if ! kill -0 "$pid" 2>/dev/null; then
                        echo "kubelet-sim: exited; last log lines:" >&2
                        tail -n 30 "$dir/kubelet-sim.log" >&2
                        exit 1
                fi
                sleep 0.1
        done
        if [ ! -f "$dir/kubelet-sim.ready" ]; then
                echo "kubelet-sim: node not Ready after ${KUBELET_SIM_WAIT_S:-30} s; last log lines:" >&2
                tail -n 30 "$dir/kubelet-sim.log" >&2
                kill -TERM "$pid" 2>/dev/null || true
                exit 1
        fi
        echo "kubelet-sim: pid $(cat "$dir/kubelet-sim.pid"), node $(cat "$dir/kubelet-sim.ready") Ready" >&2
}

cmd_stop() {
        local dir pid rc=0 i
        local -a dirs=() pids=()
        for dir in "$@"; do
                if [ ! -f "$dir/kubelet-sim.pid" ]; then
                        echo "kubelet-sim: no $dir/kubelet-sim.pid (not running?)" >&2
                        continue
                fi
                pid=$(cat "$dir/kubelet-sim.pid")
                if ! is_ours "$pid" kubelet-sim; then
                        rm -f "$dir/kubelet-sim.pid" "$dir/kubelet-sim.ready"
                        continue
                fi
                kill -TERM "$pid"       # all at once: they stop their containers in parallel
                dirs+=("$dir"); pids+=("$pid")
        done
        for i in "${!pids[@]}"; do
                pid=${pids[$i]} dir=${dirs[$i]}
                if ! wait_gone "$pid" "${KUBELET_SIM_STOP_S:-60}"; then
                        echo "kubelet-sim: pid $pid did not stop; killing it (its containers die with it)" >&2
                        kill -KILL "$pid" 2>/dev/null || true
                        wait_gone "$pid" 5 || rc=1
                fi
                rm -f "$dir/kubelet-sim.ready" "$dir/kubelet-sim.pid"
                echo "kubelet-sim: stopped $dir (pid $pid)" >&2
        done
        return $rc
}

case ${1:-} in
start) [ $# -ge 2 ] || die "usage: $0 start NODE_DIR --node-name N --node-ip IP [flags...]"; shift; cmd_start "$@" ;;
stop) [ $# -ge 2 ] || die "usage: $0 stop NODE_DIR..."; shift; cmd_stop "$@" ;;
*) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
