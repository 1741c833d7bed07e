#!/usr/bin/env bash
# monitoring-crds.sh - the CustomResourceDefinitions of OpenShift's monitoring stack
# (prometheus-operator's ServiceMonitor and PrometheusRule) for the tests' control plane.
#
#   hack/monitoring-crds.sh        fetch them (once) and print the directory that holds them
#   hack/monitoring-crds.sh --dir  print that directory if they are there, else exit 1
#
# They come from the Go module github.com/prometheus-operator/prometheus-operator at the
# release pinned below (its example/prometheus-operator-crd/), through the Go module proxy,
# checked against the module's hash recorded here, into a cache outside the tree:
#   ${CEO_MONITORING_CRDS:-${XDG_CACHE_HOME:-$HOME/.cache}/cluster-etcd-operator/monitoring-crds}/v0.85.0
# With them installed, kube-apiserver validates our ServiceMonitors against their real
# schema and StaticResourcesController applies them, as on a cluster with monitoring.
set -euo pipefail

module=github.com/prometheus-operator/prometheus-operator
version=v0.85.0
sum=h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s=
files=(monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheusrules.yaml)
cache=${CEO_MONITORING_CRDS:-${XDG_CACHE_HOME:-$HOME/.cache}/cluster-etcd-operator/monitoring-crds}
dir=$cache/$version
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

die() { echo "monitoring-crds: $*" >&2; exit 1; }

complete() {
        local f
        for f in "${files[@]}"; do [ -s "$dir/$f" ] || return 1; done
}

if [ "${1:-}" = --dir ]; then
        complete || die "prometheus-operator's CRDs $version are not fetched ($dir): run hack/install-deps.sh"
        echo "$dir"
        exit 0
fi
[ $# -eq 0 ] || die "usage: hack/monitoring-crds.sh [--dir]"
if complete; then
        echo "$dir"
        exit 0
fi
command -v go >/dev/null || die "go not found: the CRDs come through the Go module proxy"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
json=$(cd "$tmp" && go mod download -json "$module@$version") ||
        die "go mod download $module@$version failed (is the Go module proxy reachable?)"
got=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["Sum"])' <<<"$json")
[ "$got" = "$sum" ] || die "$module@$version has hash $got, not the $sum recorded here"
src=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])' <<<"$json")/example/prometheus-operator-crd
mkdir -p "$dir.partial"
for f in "${files[@]}"; do
        [ -s "$src/$f" ] || die "$module@$version has no $f"
        cp "$src/$f" "$dir.partial/$f"
done
rm -rf "$dir"
mv "$dir.partial" "$dir"
echo "monitoring-crds: $module@$version's ServiceMonitor and PrometheusRule CRDs in $dir" >&2
echo "$dir"
