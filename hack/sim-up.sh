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
# SIM_HTTP2=N: the API is served over HTTP/2, as kube-apiserver serves it:
# nghttpx (Debian's nghttp2-proxy) in front on the same address, ALPN h2 and
# http/1.1, with the simulator's serving certificate, ending every client
# connection with a GOAWAY after N streams (kube-apiserver's --goaway-chance
# ends a fraction of them too). DIR/kubeconfig then names the front;
# DIR/kubeconfig-direct the simulator itself. Clients authenticate by token
# there: the front ends TLS, so a client certificate does not reach the
# simulator. Its access log (protocol of every request) is DIR/h2-access.log.
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
        rm -f "$dir/ready" "$dir/sim.pid" "$dir/kubeconfig" "$dir/server-url" "$dir/kubeconfig-direct"
        local listen=${SIM_LISTEN:-127.0.0.1:0} front=()
        if [ -n "${SIM_HTTP2:-}" ]; then
                [[ ${SIM_HTTP2} =~ ^[1-9][0-9]*$ ]] || die "SIM_HTTP2 must be the number of streams per connection"
                command -v nghttpx >/dev/null || die "nghttpx not found (hack/install-deps.sh installs nghttp2-proxy)"
                local fport
                fport=$(python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1],0)); print(s.getsockname()[1])' "${listen%:*}")
                echo "https://${listen%:*}:$fport" >"$dir/front-url"
                front=(--kubeconfig-server "$(cat "$dir/front-url")")
        fi
        # own session: a ^C meant for the caller's terminal does not reach the simulator
        setsid "$sim" --dir "$dir" --listen "$listen" --crd-dir "$crds" "${front[@]}" "$@" \
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
        if [ -n "${SIM_HTTP2:-}" ]; then start_h2_front "$dir"; fi
        echo "export KUBECONFIG=$dir/kubeconfig"
}

start_h2_front() { # start_h2_front DIR: nghttpx in front of the simulator (SIM_HTTP2 above)
        local dir=$1 url front host port i
        url=$(cat "$dir/server-url") front=$(cat "$dir/front-url")
        host=${url#https://}; port=${host##*:}; host=${host%:*}
        # Watches stay open for minutes: no read or write timeout on a stream.
        setsid nghttpx --conf=/dev/null --frontend="$host,${front##*:}" --backend="$host,$port;;tls" --insecure \
                --frontend-max-requests="$SIM_HTTP2" --workers=1 --no-via --no-server-rewrite --no-ocsp \
                --frontend-read-timeout=10m --backend-read-timeout=10m --backend-write-timeout=10m \
                --stream-read-timeout=0 --stream-write-timeout=0 --backend-keep-alive-timeout=10m \
                --accesslog-file="$dir/h2-access.log" --accesslog-format='$alpn "$request" $status' \
                --errorlog-file="$dir/h2.log" --pid-file="$dir/h2.pid" \
                "$dir/server.key" "$dir/server.crt" </dev/null >>"$dir/h2.log" 2>&1 &
        # The front answers (502 while the simulator waits for its etcd) once it listens.
        for ((i = 0; i < 50; i++)); do
                [ "$(curl -sk --http2 -o /dev/null -w '%{http_version}' "$front/healthz")" = 2 ] && break
                sleep 0.1
        done
        [ "$i" -lt 50 ] || die "the HTTP/2 front on $front does not answer over HTTP/2; see $dir/h2.log"
        echo "# HTTP/2 front (nghttpx pid $(cat "$dir/h2.pid")) on $front" >&2
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
        if [ -f "$dir/h2.pid" ] && is_ours "$(cat "$dir/h2.pid")" nghttpx; then
                kill -TERM "$(cat "$dir/h2.pid")"
                wait_gone "$(cat "$dir/h2.pid")" 10 || kill -KILL "$(cat "$dir/h2.pid")" 2>/dev/null || true
        fi
        rm -f "$dir/ready"
        echo "sim-up: stopped" >&2
}

case ${1:-} in
start) [ $# -ge 2 ] || die "usage: $0 start DIR [flags...]"; shift; cmd_start "$@" ;;
stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; cmd_stop "$2" ;;
*) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
