#!/usr/bin/env bash
# sim-up.sh - start/stop the Kubernetes API simulator (test/sim/kube-apiserver-sim)
#
# Usage:
#   hack/sim-up.sh start DIR [extra simulator flags...]
#       start the simulator in the background with the OpenShift CRDs from
#       manifests/crds loaded, wait for DIR/ready (30 s) and print
#       `export KUBECONFIG=DIR/kubeconfig`. Logs go to DIR/sim.log.
#   hack/sim-up.sh stop DIR
#       stop it by the PID in DIR/sim.pid and wait until it and its private
#       etcd (DIR/etcd.pid) have exited.
#
# Environment: SIM_LISTEN (default 127.0.0.1:0), SIM_CRD_DIR (default
# <repo>/manifests/crds), SIM_WAIT_S (default 30), SIM_WAIT_FOR (ready, the
# default, or kubeconfig: with --etcd-endpoints of an etcd that is not up
# yet, return as soon as DIR/kubeconfig is written; DIR/ready follows once
# that etcd answers).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sim=$root/test/sim/kube-apiserver-sim

die() { echo "sim-up: $*" >&2; exit 1; }

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
        if [ -f "$dir/sim.pid" ] && is_ours "$(cat "$dir/sim.pid")" kube-apiserver-sim; then
                die "already running (pid $(cat "$dir/sim.pid")); stop it first"
        fi
        local crds=${SIM_CRD_DIR:-$root/manifests/crds}
        [ -d "$crds" ] || die "CRD directory $crds not found"
        command -v etcd >/dev/null || die "etcd not found (hack/install-deps.sh installs etcd-server)"
        command -v openssl >/dev/null || die "openssl not found (hack/install-deps.sh)"
        local want=ready
        case ${SIM_WAIT_FOR:-ready} in
        ready) ;;
        kubeconfig) want=kubeconfig ;;
        *) die "SIM_WAIT_FOR must be ready or kubeconfig" ;;
        esac
        rm -f "$dir/ready" "$dir/sim.pid" "$dir/kubeconfig" "$dir/server-url"
        # own session: a ^C meant for the caller's terminal does not reach the simulator
        setsid "$sim" --dir "$dir" --listen "${SIM_LISTEN:-127.0.0.1:0}" --crd-dir "$crds" "$@" \
                >>"$dir/sim.log" 2>&1 </dev/null &
        local pid=$! i
        for ((i = 0; i < ${SIM_WAIT_S:-30} * 10; i++)); do
                [ -f "$dir/$want" ] && break
                # setsid may fork: once the simulator wrote its PID, watch that one
                [ -s "$dir/sim.pid" ] && pid=$(cat "$dir/sim.pid")
                if ! kill -0 "$pid" 2>/dev/null; then
                        echo "sim-up: simulator exited; last log lines:" >&2
                        tail -n 30 "$dir/sim.log" >&2
                        exit 1
                fi
                sleep 0.1
        done
        if [ ! -f "$dir/$want" ]; then
                echo "sim-up: simulator wrote no $want after ${SIM_WAIT_S:-30} s; last log lines:" >&2
                tail -n 30 "$dir/sim.log" >&2
                kill "$pid" 2>/dev/null || true
                exit 1
        fi
        echo "# simulator pid $(cat "$dir/sim.pid") serving $(cat "$dir/server-url")" >&2
        echo "export KUBECONFIG=$dir/kubeconfig"
}

cmd_stop() {
        local dir=$1 pid epid=""
        [ -f "$dir/sim.pid" ] || die "no $dir/sim.pid"
        pid=$(cat "$dir/sim.pid")
        [ -f "$dir/etcd.pid" ] && epid=$(cat "$dir/etcd.pid")
        if is_ours "$pid" kube-apiserver-sim; then
                kill -TERM "$pid"
                if ! wait_gone "$pid" 20; then
                        echo "sim-up: pid $pid did not stop in 20 s; killing" >&2
                        kill -KILL "$pid" 2>/dev/null || true
                        wait_gone "$pid" 5 || true
                fi
        fi
        # the simulator stops its etcd itself; PR_SET_PDEATHSIG covers a killed simulator
        if [ -n "$epid" ] && is_ours "$epid" "$dir/etcd"; then
                if ! wait_gone "$epid" 10; then
                        kill -KILL "$epid" 2>/dev/null || true
                        wait_gone "$epid" 5 || true
                fi
        fi
        rm -f "$dir/ready"
        echo "sim-up: stopped" >&2
}

case ${1:-} in
start) [ $# -ge 2 ] || die "usage: $0 start DIR [flags...]"; shift; cmd_start "$@" ;;
stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; cmd_stop "$2" ;;
*) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
