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
# it happens and returns once the cluster has settled (three members,
# bootstrap member removed and its host gone, clusteroperator/etcd
# Available), leaving it running.
#
#   hack/local-up.sh          start (state under .local-up/)
#   hack/local-up.sh --down   stop everything it started (by PID)
# LOCAL_UP_DIR (state), LOCAL_UP_NET (first three octets of its loopback
# addresses, default 127.0.100) and LOCAL_UP_BUILD (a build tree to use as it
# is, skipping install and build) change the defaults.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${LOCAL_UP_DIR:-$root/.local-up}
net=${LOCAL_UP_NET:-127.0.100}
masters=(master-0 master-1 master-2)

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

if [ "${1:-}" = "--down" ]; then
        down
        exit 0
fi
if [ $# -gt 0 ]; then
        echo "usage: hack/local-up.sh [--down]" >&2
        exit 2
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

echo "local-up: render on the bootstrap host ($net.5)"
"$bin" render --asset-output-dir "$state/assets" --etcd-image quay.io/openshift/etcd:local \
        --operator-image quay.io/openshift/cluster-etcd-operator:local \
        --network-config-file "$root/test/data/render/network.yaml" \
        --cluster-configmap-file "$root/test/data/render/cluster-config.yaml" \
        --infra-config-file "$root/test/data/render/infrastructure.yaml" \
        --bootstrap-ip "$net.5" --hostname bootstrap --listen-on-node-ip \
        --control-plane-hardware-speed Slower --key-type ecdsa 2>>"$state/logs/render.log"
tls=$state/assets/tls

# As on a bootstrap host, the API server is configured against the bootstrap
# etcd before that etcd runs; the kubelets retry the API until it serves.
echo "local-up: kube-apiserver on https://$net.1:6443 (behind haproxy), stored in the bootstrap etcd (https://$net.5:2379)"
# test/kube/control-plane: kube-apiserver, kube-controller-manager and kube-scheduler, and the
# kube-apiserver operator's part: it follows the etcd-endpoints the operator publishes.
start_bg control-plane python3 "$root/test/kube/control-plane" run --dir "$state/kube" --ip "$net.1" --port 6443 \
        --etcd-servers "https://$net.5:2379" --etcd-cacert "$tls/etcd-ca-bundle.crt" \
        --etcd-cert "$tls/etcd-client.crt" --etcd-key "$tls/etcd-client.key" \
        --kas-node-names "$(IFS=,; echo "${masters[*]}")" --goaway-chance 0.001 \
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
image_flags=(--image "quay.io/openshift/etcd[@:]*=$images/etcd"
        --image "quay.io/openshift/*cluster-etcd-operator[@:]*=$images/operator"
        --image "quay.io/openshift/*:sim=$images/base")
echo "local-up: kubelets: bootstrap ($net.5) and ${masters[*]} ($net.10-12), each as its node (system:node:NAME)"
# Each master's kube-apiserver reaches its own etcd at localhost (control-plane --etcd-local-file).
printf '%s\n' "$net.10" "$net.11" "$net.12" >"$state/masters-local-etcd"
node_kubeconfig() { python3 "$root/test/kube/control-plane" node-kubeconfig "$state/kube" "$1"; }
mkdir -p "$state/nodes/bootstrap/etc"
cp -r "$state/assets/etc-kubernetes" "$state/nodes/bootstrap/etc/kubernetes"
start_bg kubelet-bootstrap "$root/test/sim/kubelet-sim" --node-name bootstrap --node-ip "$net.5" \
        --root "$state/nodes/bootstrap" --kubeconfig "$(node_kubeconfig bootstrap)" --operator-binary "$bin" \
        "${image_flags[@]}"
for i in 0 1 2; do
        mkdir -p "$state/nodes/master-$i"
        # NodeRestriction forbids a kubelet node-role labels: set below, as the installer does.
        start_bg "kubelet-master-$i" "$root/test/sim/kubelet-sim" --node-name "master-$i" \
                --node-ip "$net.$((10 + i))" --root "$state/nodes/master-$i" \
                --kubeconfig "$(node_kubeconfig "master-$i")" --operator-binary "$bin" --master --no-role-labels \
                --backoff-base 0.5 --backoff-max 5 --startup-probe-step 0.5 "${image_flags[@]}"
done
for _ in $(seq 1 1800); do
        [ -f "$state/kube/ready" ] && break
        kill -0 "$(cat "$state/pids/control-plane.pid")" 2>/dev/null || { echo "local-up: the control plane exited" >&2; false; }
        sleep 0.1
done
[ -f "$state/kube/ready" ] || { echo "local-up: kube-apiserver did not serve within 180 s" >&2; false; }
echo "local-up: the bootstrap etcd runs; kube-apiserver serves from it"
kc version | sed 's/^/  /'

for m in "${masters[@]}"; do
        for _ in $(seq 1 300); do
                kc label --overwrite node "$m" node-role.kubernetes.io/master= \
                        node-role.kubernetes.io/control-plane= >/dev/null 2>&1 && break
                sleep 0.2
        done
done
echo "local-up: the cluster-version operator's objects"
kc apply -f "$root/manifests/local-up/" >/dev/null
kc patch etcd cluster --type=merge -p '{"spec":{"unsupportedConfigOverrides":{"listenOnNodeIP":true}}}' >/dev/null
kc patch infrastructure cluster --subresource=status --type=merge -p '{"status":{"infrastructureName":"local-up","platformStatus":{"type":"None"},"controlPlaneTopology":"HighlyAvailable","infrastructureTopology":"HighlyAvailable"}}' >/dev/null
kc create namespace openshift-kube-apiserver >/dev/null 2>&1 || true
kc apply -f "$root/test/data/render/cluster-config.yaml" >/dev/null
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
start_bg cluster-actors python3 "$root/hack/cluster-actors.py" "$KUBECONFIG" "$state/pids/kubelet-bootstrap.pid"

# service-ca and the monitoring stack's parts (neither runs here): the serving certificate of
# Service metrics, written where the operator's pod would mount it, and Prometheus's token.
serving=$(PATH=$kube_bin:$PATH python3 "$root/test/e2e/service_ca.py" --kubeconfig "$KUBECONFIG" --dir "$state/service-ca" \
        --ip "$net.2" --prometheus-token "$state/service-ca/prometheus-token")
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
        --etcd-image quay.io/openshift/etcd:local --operator-image quay.io/openshift/cluster-etcd-operator:local \
        --etcd-ca "$tls/etcd-ca-bundle.crt" --etcd-cert "$tls/etcd-client.crt" --etcd-key "$tls/etcd-client.key" \
        --tls-cert-file "$serving/tls.crt" --tls-private-key-file "$serving/tls.key"

# Progress: the operator's decisions as they happen, until the cluster settles.
settled() {
        local co
        co=$(kc get co etcd -o jsonpath='{range .status.conditions[*]}{.type}={.status} {end}' 2>/dev/null) || return 1
        [[ $co == *"Available=True"* && $co == *"Progressing=False"* && $co == *"Degraded=False"* ]] || return 1
        [ "$(kc get etcd cluster -o jsonpath='{.status.conditions[?(@.type=="EtcdBootstrapMemberRemoved")].status}')" = True ] || return 1
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
        sleep 1
done
trap - ERR

# What the other control-plane operators would leave on the masters, so the
# disaster-recovery runbooks (docs/runbooks/) work here too.
python3 "$root/hack/control-plane-fixture.py" "$KUBECONFIG" "$state"/nodes/master-{0,1,2}

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
and kube-scheduler on https://$net.1:6443, stored in the etcd the operator runs on ${masters[*]}
($net.10-12, kubelets simulated); the bootstrap member is gone.

export KUBECONFIG=$KUBECONFIG
export PATH=$kube_bin:\$PATH    # kubectl $(kubectl version --client -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])')

Try:
  kubectl get etcd cluster -o yaml
  kubectl get co etcd -o yaml
  kubectl get pods -n openshift-etcd -o wide
  kubectl get configmap -n openshift-etcd etcd-endpoints -o yaml
  curl --cacert $state/service-ca/ca.crt -H "Authorization: Bearer \$(cat $state/service-ca/prometheus-token)" https://$net.2:8443/metrics
  ETCDCTL_API=3 etcdctl --endpoints=https://$net.10:2379 --cacert=$tls/etcd-ca-bundle.crt --cert=$tls/etcd-client.crt --key=$tls/etcd-client.key member list -w table

Stand on a master (the demo's "ssh core@master-0"; the disaster-recovery runbooks in
docs/runbooks/ use it): hack/node-shell.sh master-0

Logs: $state/logs. Stop everything with: hack/local-up.sh --down
MSG
