#!/usr/bin/env bash
# kubectl-conformance.sh - drive the real kubectl against kube-apiserver-sim.
#
# Starts a simulator through hack/sim-up.sh (random 127.x.y.z address, port 0,
# the OpenShift CRDs loaded) and checks the outputs of get (-o yaml/json/wide/name,
# short names, categories), apply (client-side and --server-side), create, patch
# (strategic/merge/json, --subresource=status), label, replace, delete (with a
# finalizer wait), get --watch and wait --for=condition (with and without
# KUBE_FEATURE_WatchListClient=true).  Every kubectl call gets a fresh --cache-dir.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

if ! command -v kubectl >/dev/null; then
        echo "kubectl not found: it comes with the machine image" >&2
        exit 1
fi

tmp=$(mktemp -d /tmp/kubectl-conformance.XXXXXX)
dir=$tmp/sim
bg_pids=()
cleanup() {
        local rc=$?
        for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
        if [ -f "$dir/sim.pid" ]; then "$root/hack/sim-up.sh" stop "$dir" >/dev/null 2>&1 || true; fi
        if [ $rc -ne 0 ] && [ -f "$dir/sim.log" ]; then
                echo "--- simulator log (tail) ---" >&2
                tail -n 30 "$dir/sim.log" >&2
        fi
        rm -rf "$tmp"
        exit $rc
}
trap cleanup EXIT

ip="127.$((RANDOM % 254 + 1)).$((RANDOM % 254 + 1)).$((RANDOM % 252 + 2))"
eval "$(SIM_LISTEN=$ip:0 "$root/hack/sim-up.sh" start "$dir")"
export KUBECONFIG

n=0
k() { # kubectl with a fresh discovery cache, so each command discovers anew
        local cache
        cache=$(mktemp -d "$tmp/cache.XXXXXX")
        kubectl --cache-dir "$cache" --request-timeout=20s "$@"
}
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { n=$((n + 1)); echo "ok $n - $*"; }
# expect DESCRIPTION PATTERN COMMAND...: run, require success and output matching PATTERN
expect() {
        local what=$1 pat=$2 out; shift 2
        if ! out=$("$@" 2>&1); then fail "$what: command failed: $*
$out"; fi
        grep -Eq -- "$pat" <<<"$out" || fail "$what: output does not match /$pat/:
$out"
        ok "$what"
}
# expect_fail DESCRIPTION PATTERN COMMAND...: require failure and output matching PATTERN
expect_fail() {
        local what=$1 pat=$2 out; shift 2
        if out=$("$@" 2>&1); then fail "$what: command unexpectedly succeeded: $*
$out"; fi
        grep -Eq -- "$pat" <<<"$out" || fail "$what: output does not match /$pat/:
$out"
        ok "$what"
}

# -- discovery and reads --------------------------------------------------------------
expect "server version minor 32" '"minor": "32"' k version -o json
expect "api-resources lists etcds" 'etcds +operator.openshift.io/v1 +false +Etcd' k api-resources
cat >"$tmp/node.yaml" <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: master-0
  labels:
    node-role.kubernetes.io/master: ""
    node-role.kubernetes.io/control-plane: ""
status:
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
    message: ready
  addresses:
  - type: InternalIP
    address: 192.0.2.10
  nodeInfo:
    kubeletVersion: v1.32.0
    osImage: Sim OS
    kernelVersion: 6.1.0
    containerRuntimeVersion: cri-o://1.32
EOF
expect "create node from file" 'node/master-0 created' k create -f "$tmp/node.yaml"
expect "get nodes table" '^NAME +STATUS +ROLES +AGE +VERSION' k get nodes
expect "get nodes row" '^master-0 +Ready +control-plane,master +[0-9]+s +v1.32.0' k get nodes
expect "get nodes -o wide" '192.0.2.10 +<none> +Sim OS' k get nodes -o wide
expect "get node short name -o name" '^node/master-0$' k get no -o name
expect "get nodes with a label selector" 'master-0' k get nodes -l 'node-role.kubernetes.io/master'
expect "get nodes --chunk-size=1" 'master-0' k get nodes --chunk-size=1

cat >"$tmp/etcd.yaml" <<'EOF'
apiVersion: operator.openshift.io/v1
kind: Etcd
metadata:
  name: cluster
spec:
  managementState: Managed
EOF
expect "apply etcd (client-side)" 'etcd.operator.openshift.io/cluster created' k apply -f "$tmp/etcd.yaml"
expect "get etcd cluster -o yaml" 'backendQuotaGiB: 8' k get etcd cluster -o yaml
expect "get etcds.operator.openshift.io" '^cluster +[0-9]+s' k get etcds.operator.openshift.io
expect "get etcd -o json" '"kind": "Etcd"' k get etcd cluster -o json
expect "apply unchanged" 'etcd.operator.openshift.io/cluster unchanged' k apply -f "$tmp/etcd.yaml"
sed -i 's/managementState: Managed/managementState: Managed\n  logLevel: Debug/' "$tmp/etcd.yaml"
expect "apply changed (merge patch for CRs)" 'etcd.operator.openshift.io/cluster configured' k apply -f "$tmp/etcd.yaml"
expect "apply changed took effect" '^Debug$' k get etcd cluster -o 'jsonpath={.spec.logLevel}'
echo '  foo: bar' >>"$tmp/etcd.yaml"
expect_fail "strict validation rejects unknown CR fields" 'unknown field "spec.foo"' k apply -f "$tmp/etcd.yaml"
expect "apply --validate=false prunes unknown fields" 'configured|unchanged' k apply --validate=false -f "$tmp/etcd.yaml"

cat >"$tmp/co.yaml" <<'EOF'
apiVersion: config.openshift.io/v1
kind: ClusterOperator
metadata:
  name: etcd
spec: {}
EOF
expect "create clusteroperator" 'clusteroperator.config.openshift.io/etcd created' k create -f "$tmp/co.yaml"
expect "patch co status (merge, --subresource=status)" 'patched' \
        k patch co etcd --subresource=status --type=merge \
        -p '{"status":{"conditions":[{"type":"Available","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z","reason":"AsExpected","message":"ok"}],"versions":[{"name":"operator","version":"4.18.0"}]}}'
expect "get co printer columns" '^NAME +VERSION +AVAILABLE +PROGRESSING +DEGRADED +SINCE' k get co
expect "get co row" '^etcd +4.18.0 +True' k get co
expect_fail "create duplicate" 'AlreadyExists' k create -f "$tmp/co.yaml"

# -- built-ins: create (protobuf bodies), apply, patch, label, replace -------------------
expect "create namespace" 'namespace/demo created' k create namespace demo
expect "create configmap" 'configmap/cfg created' k -n demo create configmap cfg --from-literal=a=1
expect "create secret" 'secret/s1 created' k -n demo create secret generic s1 --from-literal=pw=x
expect "secret data is base64" '^eA==$' k -n demo get secret s1 -o 'jsonpath={.data.pw}'
expect "create serviceaccount" 'serviceaccount/robot created' k -n demo create serviceaccount robot
expect "label" 'configmap/cfg labeled' k -n demo label cm cfg tier=web
expect "label --overwrite" 'configmap/cfg labeled' k -n demo label cm cfg tier=db --overwrite
expect "get -L" '^cfg +1 +[0-9]+s +db' k -n demo get cm cfg -L tier
expect "label removal" 'configmap/cfg unlabeled' k -n demo label cm cfg tier-
expect "patch strategic (default)" 'configmap/cfg patched' k -n demo patch cm cfg -p '{"data":{"b":"2"}}'
expect "patch merge" 'configmap/cfg patched' k -n demo patch cm cfg --type=merge -p '{"data":{"a":null}}'
expect "patch json" 'configmap/cfg patched' k -n demo patch cm cfg --type=json -p '[{"op":"add","path":"/data/c","value":"3"}]'
expect "patch results" '^\{"b":"2","c":"3"\}$' k -n demo get cm cfg -o 'jsonpath={.data}'
k -n demo get cm cfg -o yaml | sed 's/c: "3"/c: "33"/' >"$tmp/cfg.yaml"
expect "replace" 'configmap/cfg replaced' k replace -f "$tmp/cfg.yaml"
expect "replace took effect" '^33$' k -n demo get cm cfg -o 'jsonpath={.data.c}'
k -n demo get cm cfg -o yaml >"$tmp/cfg.yaml"
k -n demo label cm cfg bump=1 >/dev/null
expect_fail "replace with a stale resourceVersion" 'Conflict' k replace -f "$tmp/cfg.yaml"

cat >"$tmp/dep.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1
        env:
        - {name: A, value: "1"}
EOF
expect "apply deployment (client-side)" 'deployment.apps/web created' k apply -f "$tmp/dep.yaml"
sed -i 's/web:1/web:2/' "$tmp/dep.yaml"
expect "apply deployment change (strategic merge)" 'deployment.apps/web configured' k apply -f "$tmp/dep.yaml"
expect "deployment image updated" 'web:2' k -n demo get deploy web -o 'jsonpath={.spec.template.spec.containers[0].image}'
expect "deployment generation bumped" '^2$' k -n demo get deploy web -o 'jsonpath={.metadata.generation}'
expect "get all (category)" 'deployment.apps/web' k -n demo get all
expect "scale" 'deployment.apps/web scaled' k -n demo scale deploy web --replicas=3
expect "scaled" '^3$' k -n demo get deploy web -o 'jsonpath={.spec.replicas}'

cat >"$tmp/ssa.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
  namespace: demo
data:
  one: "1"
  two: "2"
EOF
expect "apply --server-side (create)" 'configmap/ssa serverside-applied' k apply --server-side -f "$tmp/ssa.yaml"
sed -i '/two:/d' "$tmp/ssa.yaml"
expect "apply --server-side (field removed)" 'configmap/ssa serverside-applied' k apply --server-side -f "$tmp/ssa.yaml"
expect "server-side apply dropped the field" '^\{"one":"1"\}$' k -n demo get cm ssa -o 'jsonpath={.data}'
expect "managedFields record the manager" 'manager: kubectl' k -n demo get cm ssa -o yaml --show-managed-fields
expect "apply --server-side --force-conflicts" 'serverside-applied' k apply --server-side --force-conflicts -f "$tmp/ssa.yaml"
expect "apply --server-side on a CR" 'etcd.operator.openshift.io/cluster serverside-applied' \
        k apply --server-side --force-conflicts -f <(sed '/foo: bar/d' "$tmp/etcd.yaml")

# -- watch ------------------------------------------------------------------------------------
k -n demo get cm -w >"$tmp/watch.out" 2>&1 & bg_pids+=($!)
k -n demo get cm -w -o name >"$tmp/watch-name.out" 2>&1 & bg_pids+=($!)
sleep 2
k -n demo create configmap watched --from-literal=x=1 >/dev/null
k -n demo delete configmap watched >/dev/null
sleep 2
kill "${bg_pids[@]}" 2>/dev/null || true
wait "${bg_pids[@]}" 2>/dev/null || true
bg_pids=()
grep -Eq '^NAME +DATA +AGE' "$tmp/watch.out" || fail "get -w header: $(cat "$tmp/watch.out")"
[ "$(grep -c '^watched ' "$tmp/watch.out")" -ge 2 ] || fail "get -w rows: $(cat "$tmp/watch.out")"
ok "get --watch (Table)"
[ "$(grep -c '^configmap/watched$' "$tmp/watch-name.out")" -ge 2 ] || fail "get -w -o name: $(cat "$tmp/watch-name.out")"
ok "get --watch -o name"

# -- wait --------------------------------------------------------------------------------------
cond() { # cond TYPE
        k patch etcd cluster --subresource=status --type=merge \
                -p "{\"status\":{\"conditions\":[{\"type\":\"$1\",\"status\":\"True\",\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"reason\":\"R\",\"message\":\"m\"}]}}" >/dev/null
}
(sleep 2; cond Available) & bg_pids+=($!)
expect "wait --for=condition (list+watch)" 'condition met' k wait --for=condition=Available etcd/cluster --timeout=30s
(sleep 2; cond Upgradeable) & bg_pids+=($!)
expect "wait --for=condition (WatchListClient)" 'condition met' \
        env KUBE_FEATURE_WatchListClient=true kubectl --cache-dir "$(mktemp -d "$tmp/cache.XXXXXX")" \
        wait --for=condition=Upgradeable etcd/cluster --timeout=30s
expect "wait for an already met condition" 'condition met' k wait --for=condition=Upgradeable etcd/cluster --timeout=10s
wait "${bg_pids[@]}" 2>/dev/null || true
bg_pids=()

# -- delete ------------------------------------------------------------------------------------
expect "create with finalizer" 'configmap/held patched' \
        sh -c "kubectl --cache-dir $tmp/c1 -n demo create configmap held >/dev/null && kubectl --cache-dir $tmp/c2 -n demo patch cm held --type=merge -p '{\"metadata\":{\"finalizers\":[\"example.com/hold\"]}}'"
(sleep 3; k -n demo patch cm held --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null) & bg_pids+=($!)
start=$SECONDS
expect "delete waits for the finalizer" 'configmap "held" deleted' k -n demo delete cm held --timeout=30s
[ $((SECONDS - start)) -ge 2 ] || fail "delete returned before the finalizer was removed"
ok "delete returned only after the finalizer went away"
expect_fail "deleted object is gone" 'NotFound' k -n demo get cm held
expect "delete --wait=false" 'deleted' k -n demo delete cm cfg --wait=false
expect "delete namespace" 'namespace "demo" deleted' k delete namespace demo --timeout=30s
expect_fail "namespace gone" 'NotFound' k get namespace demo
k wait --for=delete node/master-0 --timeout=15s >"$tmp/wait-delete.out" 2>&1 &
pid=$!
sleep 1
k delete node master-0 >/dev/null
wait $pid || fail "wait --for=delete: $(cat "$tmp/wait-delete.out")"
ok "wait --for=delete"

# -- ServiceAccount tokens and RBAC ------------------------------------------------------------
k create namespace rbac-demo >/dev/null
k -n rbac-demo create serviceaccount app >/dev/null
tok=$(k -n rbac-demo create token app --duration=15m) || fail "create token"
[ "$(printf '%s' "$tok" | tr -cd . | wc -c)" = 2 ] || fail "create token: not a JWT: $tok"
ok "create token"
expect_fail "a ServiceAccount without a role is denied" \
        'Error from server \(Forbidden\): pods is forbidden: User "system:serviceaccount:rbac-demo:app" cannot list resource "pods" in API group "" in the namespace "rbac-demo"' \
        k -n rbac-demo --token "$tok" get pods
k -n rbac-demo create role pod-reader --verb=get,list --resource=pods >/dev/null
k -n rbac-demo create rolebinding pod-reader --role=pod-reader --serviceaccount=rbac-demo:app >/dev/null
expect "the role's binding lets it list" 'No resources found in rbac-demo namespace' \
        k -n rbac-demo --token "$tok" get pods
expect_fail "not beyond the role" 'cannot list resource "secrets"' k -n rbac-demo --token "$tok" get secrets

echo "kubectl conformance: all $n checks passed"
