#!/usr/bin/env bash
# The demo: installs what is needed, builds, and runs a whole OpenShift-style
# etcd bootstrap on loopback: `render` on a simulated bootstrap host,
# Kubernetes' own kube-apiserver (with kube-controller-manager and
# kube-scheduler: test/kube/control-plane) storing everything in the etcd being
# managed (it starts on the rendered bootstrap member and is rolled onto the
# etcd-endpoints the operator publishes), the bootstrap etcd run by a
# kubelet simulator, three simulated masters, the operator, and the
# installer's part (hack/cluster-actors.py: bootstrap complete, then the
# bootstrap host destroyed once its member is removed). It shows progress as
# it happens and returns once the cluster has settled (its members voting,
# bootstrap member removed and its host gone, clusteroperator/etcd
# Available), leaving it running.
#
#   hack/local-up.sh [--topology T] [--etcd V]   start (state under .local-up/)
#   hack/local-up.sh --down           stop everything it started (by PID)
#
# --topology (infrastructures/cluster status.controlPlaneTopology):
#   ha       three masters from a bootstrap host (HighlyAvailable; the default)
#   sno      one master, installed in place (SingleReplica, install-config
#            bootstrapInPlace): the bootstrap runs on master-0 itself, which then
#            "reboots" into its master role with the same etcd data and member
#   arbiter  two masters and arbiter-0, a node labelled and tainted
#            node-role.kubernetes.io/arbiter that runs only etcd (HighlyAvailableArbiter)
#   delayed-ha  three masters as the assisted installer brings them: render finds its
#            marker (delayed HA), the bootstrap completes on master-0 and master-1, and
#            master-2 joins once the bootstrap host is gone
# --etcd 3.5|3.6: the etcd release the etcd image carries (3.5, Debian's, by default; 3.6 is
#            the one hack/build-etcd.sh builds, images/etcd-3.6), as a release declares it:
#            render --etcd-image-version and the operator's ETCD_IMAGE_VERSION
# LOCAL_UP_DIR (state), LOCAL_UP_NET (first three octets of its loopback
# addresses, default 127.0.100) and LOCAL_UP_BUILD (a build tree to use as it
# is, skipping install and build) change the defaults.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${LOCAL_UP_DIR:-$root/.local-up}
net=${LOCAL_UP_NET:-127.0.100}
topology=ha etcd_version=3.5

# running PID: the process exists and is not a zombie (an exited child of ours that PID 1
# has not reaped yet answers kill -0 too).
running() {
        local st
        st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
        [[ $st != Z* ]]
}

stop_pids() {
        local f pid
        for f in "$state"/pids/*.pid; do
                [ -f "$f" ] || continue
                pid=$(cat "$f")
                if kill -0 "$pid" 2>/dev/null; then
                        kill -TERM "$pid" 2>/dev/null || true
                fi
        done
        for f in "$state"/pids/*.pid; do
                [ -f "$f" ] || continue
                pid=$(cat "$f")
                for _ in $(seq 1 100); do running "$pid" || break; sleep 0.1; done
                kill -KILL "$pid" 2>/dev/null || true
                rm -f "$f"
        done
}

down() {
        stop_pids
        echo "local-up: stopped"
}

usage() { echo "usage: hack/local-up.sh [--topology ha|sno|arbiter|delayed-ha] [--etcd 3.5|3.6] | --down" >&2; exit 2; }
if [ "${1:-}" = "--down" ]; then
        [ $# -eq 1 ] || usage
        down
        exit 0
fi
while [ $# -gt 0 ]; do
        case $1 in
        --topology) [ $# -ge 2 ] || usage; topology=$2; shift ;;
        --topology=*) topology=${1#--topology=} ;;
        --etcd) [ $# -ge 2 ] || usage; etcd_version=$2; shift ;;
        --etcd=*) etcd_version=${1#--etcd=} ;;
        *) usage ;;
        esac
        shift
done
case $etcd_version in
3.5) etcd_image=quay.io/openshift/etcd:local ;;
3.6) etcd_image=quay.io/openshift/etcd-3.6:local ;;
*) echo "local-up: --etcd: \"$etcd_version\" is not 3.5 or 3.6" >&2; exit 2 ;;
esac
# The nodes that run etcd: masters first, then arbiters, at $net.10, .11, ...
arbiters=() late=()
case $topology in
ha) masters=(master-0 master-1 master-2) cp_topology=HighlyAvailable infra_topology=HighlyAvailable ;;
delayed-ha) masters=(master-0 master-1 master-2) late=(master-2) cp_topology=HighlyAvailable
        infra_topology=HighlyAvailable ;;
sno) masters=(master-0) cp_topology=SingleReplica infra_topology=SingleReplica ;;
arbiter) masters=(master-0 master-1) arbiters=(arbiter-0) cp_topology=HighlyAvailableArbiter
        infra_topology=HighlyAvailable ;;
*) echo "local-up: --topology: \"$topology\" is not ha, sno, arbiter or delayed-ha" >&2; exit 2 ;;
esac
etcd_nodes=("${masters[@]}" "${arbiters[@]}")
# The masters there at install time (kube-apiserver runs on them from the start).
early=()
for m in "${masters[@]}"; do [[ " ${late[*]} " == *" $m "* ]] || early+=("$m"); done
node_ip() { # NAME: its address
        local i
        for i in "${!etcd_nodes[@]}"; do
                [ "${etcd_nodes[$i]}" = "$1" ] && { echo "$net.$((10 + i))"; return; }
        done
        return 1
}
# Installed in place, the bootstrap runs on master-0 (same address, same disk).
if [ "$topology" = sno ]; then
        bootstrap_ip=$net.10 bootstrap_host=master-0 bootstrap_root=master-0
else
        bootstrap_ip=$net.5 bootstrap_host=bootstrap bootstrap_root=bootstrap
fi

if [ -n "${LOCAL_UP_BUILD:-}" ]; then
        # A build tree made already (its test, e2e/local-up, runs from one): no install, no build.
        bin=$(cd "$LOCAL_UP_BUILD" && pwd)/cluster-etcd-operator
else
        bash "$root/hack/install-deps.sh"
        cmake -S "$root" -B "$root/build" >/dev/null
        make -s -C "$root/build" -j2 cluster-etcd-operator images  # the kubelets run strict images
        bin=$root/build/cluster-etcd-operator
fi
# Kubernetes' own kube-apiserver, kube-controller-manager, kube-scheduler and kubectl
# (hack/build-kube.sh, run by install-deps.sh); kubectl of that release for every call here.
kube_bin=$(bash "$root/hack/build-kube.sh" --bin-dir)
export PATH=$kube_bin:$PATH

if [ -d "$state/pids" ] && ls "$state"/pids/*.pid >/dev/null 2>&1; then
        echo "local-up: already running; 'hack/local-up.sh --down' first" >&2
        exit 1
fi
rm -rf "$state"
mkdir -p "$state/pids" "$state/logs"

# Anything that fails from here on stops what was started.
trap 'echo "local-up: failed; logs in $state/logs" >&2; down >/dev/null' ERR

start_bg() { # name command...
        local name=$1; shift
        setsid "$@" >"$state/logs/$name.log" 2>&1 </dev/null &
        echo $! >"$state/pids/$name.pid"
}

# The assisted installer's marker on the bootstrap host: bootstrap may complete on two masters.
[ "$topology" = delayed-ha ] && touch "$state/assisted-install-bootstrap"
# The install-config of the topology: the test data's (three masters, two workers), changed as
# the installer's would be for one node installed in place or two masters and an arbiter.
python3 - "$root/test/data/render/cluster-config.yaml" "$topology" >"$state/cluster-config.yaml" <<'PY'
import sys
text, topology = open(sys.argv[1]).read(), sys.argv[2]
cp = "    controlPlane:\n      architecture: amd64\n      hyperthreading: Enabled\n      name: master\n      platform: {}\n      replicas: 3\n"
assert cp in text
if topology == "sno":
    text = text.replace(cp, cp.replace("replicas: 3", "replicas: 1") +
                        "    bootstrapInPlace:\n      installationDisk: /dev/vda\n")
    text = text.replace("      name: worker\n      platform: {}\n      replicas: 2\n",
                        "      name: worker\n      platform: {}\n      replicas: 0\n")
elif topology == "arbiter":
    text = text.replace(cp, cp.replace("replicas: 3", "replicas: 2") +
                        "    arbiter:\n      architecture: amd64\n      hyperthreading: Enabled\n"
                        "      name: arbiter\n      platform: {}\n      replicas: 1\n")
sys.stdout.write(text)
PY
echo "local-up: topology $topology ($cp_topology): etcd on ${etcd_nodes[*]}"
echo "local-up: render on the bootstrap host ($bootstrap_ip, the disk of node $bootstrap_root)"
"$bin" render --asset-output-dir "$state/assets" --etcd-image "$etcd_image" --etcd-image-version "$etcd_version" \
        --operator-image quay.io/openshift/cluster-etcd-operator:local \
        --network-config-file "$root/test/data/render/network.yaml" \
        --cluster-configmap-file "$state/cluster-config.yaml" \
        --infra-config-file "$root/test/data/render/infrastructure.yaml" \
        --bootstrap-ip "$bootstrap_ip" --hostname "$bootstrap_host" --listen-on-node-ip \
        --delayed-ha-bootstrap-scaling-marker-file "$state/assisted-install-bootstrap" \
        --control-plane-hardware-speed Slower --key-type ecdsa 2>>"$state/logs/render.log"
tls=$state/assets/tls

# As on a bootstrap host, the API server is configured against the bootstrap
# etcd before that etcd runs; the kubelets retry the API until it serves.
echo "local-up: kube-apiserver on https://$net.1:6443 (behind haproxy), stored in the bootstrap etcd (https://$bootstrap_ip:2379)"
# test/kube/control-plane: kube-apiserver, kube-controller-manager and kube-scheduler, and the
# kube-apiserver operator's part: it follows the etcd-endpoints the operator publishes.
start_bg control-plane python3 "$root/test/kube/control-plane" run --dir "$state/kube" --ip "$net.1" --port 6443 \
        --etcd-servers "https://$bootstrap_ip:2379" --etcd-cacert "$tls/etcd-ca-bundle.crt" \
        --etcd-cert "$tls/etcd-client.crt" --etcd-key "$tls/etcd-client.key" \
        --kas-node-names "$(IFS=,; echo "${early[*]}")" --goaway-chance 0.001 \
        --etcd-local-file "$state/masters-local-etcd"
for _ in $(seq 1 600); do
        [ -f "$state/kube/kubeconfig" ] && break
        kill -0 "$(cat "$state/pids/control-plane.pid")" 2>/dev/null || { echo "local-up: the control plane exited" >&2; false; }
        sleep 0.1
done
export KUBECONFIG=$state/kube/kubeconfig
kc() { kubectl --cache-dir "$state/kubectl-cache" "$@"; }

# Strict images, as test/e2e/e2e.py has them: a container runs only its image's commands.
images=$(dirname "$bin")/images
image_flags=(--image "quay.io/openshift/etcd[@:]*=$images/etcd" --image "quay.io/openshift/etcd-3.6[@:]*=$images/etcd-3.6"
        --image "quay.io/openshift/*cluster-etcd-operator[@:]*=$images/operator"
        --image "quay.io/openshift/*:sim=$images/base")
echo "local-up: kubelets: bootstrap ($bootstrap_ip) and ${etcd_nodes[*]}, each as its node (system:node:NAME)"
# Each master's kube-apiserver reaches its own etcd at localhost (control-plane --etcd-local-file).
for m in "${early[@]}"; do node_ip "$m"; done >"$state/masters-local-etcd"
node_kubeconfig() { python3 "$root/test/kube/control-plane" node-kubeconfig "$state/kube" "$1"; }
mkdir -p "$state/nodes/$bootstrap_root/etc"
cp -r "$state/assets/etc-kubernetes" "$state/nodes/$bootstrap_root/etc/kubernetes"
start_bg kubelet-bootstrap "$root/test/sim/kubelet-sim" --node-name bootstrap --node-ip "$bootstrap_ip" \
        --root "$state/nodes/$bootstrap_root" --kubeconfig "$(node_kubeconfig bootstrap)" --operator-binary "$bin" \
        "${image_flags[@]}"
start_node_kubelet() { # NAME
        local role=()
        # NodeRestriction forbids a kubelet node-role labels: set below, as the installer does.
        case " ${masters[*]} " in *" $1 "*) role=(--master --no-role-labels) ;; esac
        mkdir -p "$state/nodes/$1"
        start_bg "kubelet-$1" "$root/test/sim/kubelet-sim" --node-name "$1" --node-ip "$(node_ip "$1")" \
                --root "$state/nodes/$1" --kubeconfig "$(node_kubeconfig "$1")" --operator-binary "$bin" \
                "${role[@]}" --backoff-base 0.5 --backoff-max 5 --startup-probe-step 0.5 "${image_flags[@]}"
}
# Installed in place, master-0 is the bootstrap host until its reboot (below).
for n in "${etcd_nodes[@]}"; do
        [ "$topology" = sno ] || [[ " ${late[*]} " == *" $n "* ]] || start_node_kubelet "$n"
done
for _ in $(seq 1 1800); do
        [ -f "$state/kube/ready" ] && break
        kill -0 "$(cat "$state/pids/control-plane.pid")" 2>/dev/null || { echo "local-up: the control plane exited" >&2; false; }
        sleep 0.1
done
[ -f "$state/kube/ready" ] || { echo "local-up: kube-apiserver did not serve within 180 s" >&2; false; }
echo "local-up: the bootstrap etcd runs; kube-apiserver serves from it"
kc version | sed 's/^/  /'

label_nodes() {
        local m
        for m in "${masters[@]}"; do
                [ -f "$state/pids/kubelet-$m.pid" ] || continue # a later master: labelled when it joins
                for _ in $(seq 1 300); do
                        kc label --overwrite node "$m" node-role.kubernetes.io/master= \
                                node-role.kubernetes.io/control-plane= >/dev/null 2>&1 && break
                        sleep 0.2
                done
        done
        # An arbiter node: its role label, and the taint its kubelet registers with on a real
        # cluster (--register-with-taints), so that nothing but what tolerates it lands there.
        for m in "${arbiters[@]}"; do
                for _ in $(seq 1 300); do
                        kc label --overwrite node "$m" node-role.kubernetes.io/arbiter= >/dev/null 2>&1 &&
                                kc taint --overwrite node "$m" node-role.kubernetes.io/arbiter=:NoSchedule \
                                        >/dev/null 2>&1 && break
                        sleep 0.2
                done
        done
}
[ "$topology" = sno ] || label_nodes
echo "local-up: the cluster-version operator's objects"
kc apply -f "$root/manifests/local-up/" >/dev/null
kc patch etcd cluster --type=merge -p '{"spec":{"unsupportedConfigOverrides":{"listenOnNodeIP":true}}}' >/dev/null
kc patch infrastructure cluster --subresource=status --type=merge -p '{"status":{"infrastructureName":"local-up","platformStatus":{"type":"None"},"controlPlaneTopology":"'$cp_topology'","infrastructureTopology":"'$infra_topology'"}}' >/dev/null
kc create namespace openshift-kube-apiserver >/dev/null 2>&1 || true
kc apply -f "$state/cluster-config.yaml" >/dev/null
# The control plane may have created kubeapiservers/cluster already (it publishes its revisions there).
kc create -f - >/dev/null 2>&1 <<'KAS' || kc patch kubeapiserver cluster --type=merge -p '{"spec":{"managementState":"Managed"}}' >/dev/null
apiVersion: operator.openshift.io/v1
kind: KubeAPIServer
metadata:
  name: cluster
spec:
  managementState: Managed
KAS
for f in "$state"/assets/manifests/*-ns.yaml "$state"/assets/manifests/*.yaml; do
        if [[ $f == *_deployment.yaml ]]; then
                # The operator runs below as a process of this script (its log is the demo's
                # progress); its Deployment asks for no replica, or kube-controller-manager and
                # the scheduler would place one on a master and a kubelet would run it too.
                kc create -f "$f" --dry-run=client -o json |
                        python3 -c 'import json,sys; o=json.load(sys.stdin); o["spec"]["replicas"]=0; print(json.dumps(o))' |
                        kc create -f - >/dev/null 2>&1 || true
                continue
        fi
        kc create -f "$f" >/dev/null 2>&1 || true
done
# What the cluster-version operator applies beside them for monitoring (PrometheusRule, the
# operator's ServiceMonitor, Prometheus's Role), against the CRDs the control plane serves.
for f in "$root"/manifests/operator/0000_90_*.yaml; do
        kc apply -f "$f" >/dev/null
done
if [ "$topology" = sno ]; then
        # The end of the live system: bootkube is done, the node writes its master's disk and
        # reboots (the installer's bootstrap-in-place: the bootstrap etcd's data stays in
        # /var/lib/etcd and its pod becomes the node's etc/kubernetes/manifests/etcd-pod.yaml),
        # then comes up as master-0 and its kubelet runs that pod: the same member, on the
        # same address, now the master's, which the operator takes over with its revisions.
        echo "local-up: bootstrap in place: master-0 reboots from its live system into its master role"
        pid=$(cat "$state/pids/kubelet-bootstrap.pid")
        kill -TERM "$pid"
        for _ in $(seq 1 300); do running "$pid" || break; sleep 0.1; done
        ! running "$pid" || { echo "local-up: the live system's kubelet did not stop" >&2; false; }
        rm -f "$state/pids/kubelet-bootstrap.pid"
        manifests=$state/nodes/master-0/etc/kubernetes/manifests
        mv "$manifests/etcd-member-pod.yaml" "$manifests/etcd-pod.yaml"
        start_node_kubelet master-0
        # kube-apiserver serves again once master-0's etcd runs; the live system's Node and
        # mirror pod go, as the node lifecycle controller and the pod GC would see to.
        for _ in $(seq 1 300); do
                kc delete node bootstrap --ignore-not-found --wait=false >/dev/null 2>&1 &&
                        kc delete pods -n openshift-etcd --field-selector spec.nodeName=bootstrap \
                                --grace-period=0 --force --ignore-not-found --wait=false >/dev/null 2>&1 && break
                sleep 0.5
        done
        label_nodes
fi
start_bg cluster-actors python3 "$root/hack/cluster-actors.py" "$KUBECONFIG" "$state/pids/kubelet-bootstrap.pid"

# service-ca and the monitoring stack's parts (neither runs here): the serving certificate of
# Service metrics, written where the operator's pod would mount it, and Prometheus's token.
serving=$(PATH=$kube_bin:$PATH python3 "$root/test/e2e/service_ca.py" --kubeconfig "$KUBECONFIG" --dir "$state/service-ca" \
        --ip "$net.2" --prometheus)
echo "local-up: the operator (metrics on https://$net.2:8443/metrics, to Prometheus's token)"
# As its Deployment runs it: restarted whenever it exits (it exits on purpose
# when it loses its lease, e.g. while etcd has no quorum during a restore).
# SIGTERM to the loop stops the operator it runs.
supervise() {
        local child=
        trap 'kill -TERM $child 2>/dev/null; wait $child; exit 0' TERM INT
        while :; do
                "$@" &
                child=$!
                wait $child || true
                echo "local-up: the operator exited; restarting it, as its Deployment would" >&2
                sleep 1
        done
}
# Its credentials, as its pod has them: a token of ServiceAccount
# openshift-etcd-operator/etcd-operator, so the RBAC render wrote applies to it.
sa=$state/operator-sa
mkdir -p "$sa"
kc -n openshift-etcd-operator create token etcd-operator --duration=720h >"$sa/token"
kc config view --raw --minify -o jsonpath='{.clusters[0].cluster.server} {.clusters[0].cluster.certificate-authority-data}' |
        { read -r server ca || true  # jsonpath prints no newline
          printf 'apiVersion: v1\nkind: Config\ncurrent-context: operator\nclusters:\n- name: sim\n  cluster:\n    server: %s\n    certificate-authority-data: %s\nusers:\n- name: etcd-operator\n  user:\n    tokenFile: token\ncontexts:\n- name: operator\n  context:\n    cluster: sim\n    user: etcd-operator\n    namespace: openshift-etcd-operator\n' "$server" "$ca"; } >"$sa/kubeconfig"
# The Deployment's release versions (the cluster-version operator fills them in).
export OPERATOR_IMAGE_VERSION=4.99.0-local OPERAND_IMAGE_VERSION=4.99.0-local
# The Deployment's malloc settings, read from its manifest (only the operator gets them).
tunables=$(sed -n '/- name: GLIBC_TUNABLES/{n;s/^ *value: *//p;}' "$root/manifests/operator/0000_20_etcd-operator_06_deployment.yaml")
[ -n "$tunables" ] || { echo "local-up: the operator Deployment manifest sets no GLIBC_TUNABLES" >&2; exit 1; }
start_bg operator env GLIBC_TUNABLES="$tunables" bash -c "$(declare -f supervise)"'; supervise "$@"' supervise "$bin" operator --kubeconfig "$sa/kubeconfig" --listen "$net.2:8443" \
        --leader-elect-lease-duration 15s --leader-elect-renew-deadline 10s --leader-elect-retry-period 2s \
        --etcd-poll-interval 1s --listen-on-node-ip --cert-key-type ecdsa \
        --etcd-image "$etcd_image" --etcd-image-version "$etcd_version" \
        --operator-image quay.io/openshift/cluster-etcd-operator:local \
        --etcd-ca "$tls/etcd-ca-bundle.crt" --etcd-cert "$tls/etcd-client.crt" --etcd-key "$tls/etcd-client.key" \
        --tls-cert-file "$serving/tls.crt" --tls-private-key-file "$serving/tls.key"

# Progress: the operator's decisions as they happen, until the cluster settles.
settled() {
        local co
        co=$(kc get co etcd -o jsonpath='{range .status.conditions[*]}{.type}={.status} {end}' 2>/dev/null) || return 1
        [[ $co == *"Available=True"* && $co == *"Progressing=False"* && $co == *"Degraded=False"* ]] || return 1
        [ "$(kc get etcd cluster -o jsonpath='{.status.conditions[?(@.type=="EtcdBootstrapMemberRemoved")].status}')" = True ] || return 1
        # Every etcd node at the latest revision (the ClusterOperator may still show what it was
        # before a single node's API outage).
        local latest cur c n=0
        read -r latest cur <<<"$(kc get etcd cluster -o jsonpath='{.status.latestAvailableRevision} {range .status.nodeStatuses[*]}{.currentRevision} {end}')" || return 1
        [ -n "$latest" ] && [ "$latest" -gt 0 ] || return 1
        for c in $cur; do
                [ "$c" = "$latest" ] || return 1
                n=$((n + 1))
        done
        [ "$n" = "${#etcd_nodes[@]}" ] || return 1
        # The installer's last step: the bootstrap host is destroyed.
        ! kill -0 "$(cat "$state/pids/kubelet-bootstrap.pid" 2>/dev/null)" 2>/dev/null
}
declare -A seen=()
deadline=$((SECONDS + 600))
until settled; do
        if [ $SECONDS -gt $deadline ]; then
                echo "local-up: the cluster did not settle in 10 minutes; logs in $state/logs" >&2
                exit 1
        fi
        # The new lines of the three logs, merged in time order (every line starts with HH:MM:SS;
        # within a second the actors' lines come first: the operator reacts to them).
        batch=
        for log in cluster-actors control-plane operator; do
                f=$state/logs/$log.log
                n=${seen[$log]:-0}
                total=$(wc -l <"$f" 2>/dev/null || echo 0)
                [ "$total" -gt "$n" ] || continue
                batch+=$(tail -n +$((n + 1)) "$f" | head -n $((total - n)) |
                        grep -E "issuing a new certificate|creating revision|installing revision|etcd add learner|etcd promote|etcd remove|bootstrap complete|bootstrap host|kube-apiserver revision" |
                        grep -v "starting$" | sed -E 's/^[IWE][0-9]{4} ([0-9:]+)\.[0-9]+ +[0-9]+ [^]]+\] /\1 /' || true)$'\n'
                seen[$log]=$total
        done
        [ -z "${batch//$'\n'/}" ] || grep -v '^$' <<<"$batch" | sort -s -k1,1 | sed 's/^/  /'
        # Delayed HA: the later masters join once the bootstrap host is gone (the assisted
        # installer reboots it into one of them).
        if [ ${#late[@]} -gt 0 ] && [ ! -f "$state/pids/kubelet-${late[0]}.pid" ] &&
                [ "$(kc get etcd cluster -o jsonpath='{.status.conditions[?(@.type=="EtcdBootstrapMemberRemoved")].status}' 2>/dev/null)" = True ] &&
                ! kill -0 "$(cat "$state/pids/kubelet-bootstrap.pid" 2>/dev/null)" 2>/dev/null; then
                echo "  $(date +%H:%M:%S) local-up: bootstrap done on ${early[*]}; ${late[*]} join now (delayed HA)"
                for m in "${late[@]}"; do start_node_kubelet "$m"; done
                label_nodes
        fi
        sleep 1
done
trap - ERR

# What the other control-plane operators would leave on the masters, so the
# disaster-recovery runbooks (docs/runbooks/) work here too.
python3 "$root/hack/control-plane-fixture.py" "$KUBECONFIG" "${masters[@]/#/$state/nodes/}"

echo
kc get etcd cluster -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}: {.reason} {.message}{"\n"}{end}' | grep -v "Degraded:" || true
echo
kc get co etcd
denied=$(python3 "$root/test/kube/control-plane" denials "$state/kube" | wc -l)
if [ "${denied:-0}" -gt 0 ]; then
        echo "local-up: WARNING: the API refused $denied request(s) of ours: python3 test/kube/control-plane denials $state/kube" >&2
else
        echo "RBAC: the operator and the pods ran on their ServiceAccounts' tokens; kube-apiserver refused no request of theirs."
fi
cat <<MSG

The control plane is up: kube-apiserver $(kc version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])') with kube-controller-manager
and kube-scheduler on https://$net.1:6443, stored in the etcd the operator runs on ${etcd_nodes[*]}
($net.10-$((9 + ${#etcd_nodes[@]})), kubelets simulated; topology $topology, $cp_topology); the bootstrap member is gone.

export KUBECONFIG=$KUBECONFIG
export PATH=$kube_bin:\$PATH    # kubectl $(kubectl version --client -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])')

Try:
  kubectl get etcd cluster -o yaml
  kubectl get co etcd -o yaml
  kubectl get pods -n openshift-etcd -o wide
  kubectl get configmap -n openshift-etcd etcd-endpoints -o yaml
  curl --cacert $state/service-ca/ca.crt --cert $state/service-ca/metrics-client-certs/tls.crt --key $state/service-ca/metrics-client-certs/tls.key https://$net.2:8443/metrics
  ETCDCTL_API=3 etcdctl --endpoints=https://$net.10:2379 --cacert=$tls/etcd-ca-bundle.crt --cert=$tls/etcd-client.crt --key=$tls/etcd-client.key member list -w table

Stand on a master (the demo's "ssh core@master-0"; the disaster-recovery runbooks in
docs/runbooks/ use it): hack/node-shell.sh master-0

Logs: $state/logs. Stop everything with: hack/local-up.sh --down
MSG
