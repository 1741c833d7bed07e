#!/usr/bin/env bash
# build-kube.sh - Kubernetes' own control plane for the tests and the demo.
#
#   hack/build-kube.sh            build kube-apiserver, kube-controller-manager,
#                                 kube-scheduler and kubectl (once) and print
#                                 the directory that holds them
#   hack/build-kube.sh --bin-dir  print that directory if the binaries are
#                                 built, else say how to build them and exit 1
#
# The binaries are built from the Go module k8s.io/kubernetes at the release
# hack/kube/go.mod pins (its staging modules k8s.io/* at the matching v0.x),
# with the version stamped in as Kubernetes' own build does, so that
# `kube-apiserver --version` prints "Kubernetes v1.34.4". The product stays C:
# Go builds only these test peers.
#
# They go into a versioned cache outside the tree, named by the release and a
# digest of go.mod, go.sum, this script and the Go version:
#   ${CEO_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cluster-etcd-operator/kube}/v1.34.4-<digest>/bin
# A second run finds them there and builds nothing. Go's module and build
# caches (~/go/pkg/mod, ~/.cache/go-build) are reused too.
#
# A first run on 2 cores downloads the modules and compiles for about 7
# minutes (395 s measured with empty Go caches; the figure is printed at the end).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod=$root/hack/kube
bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

die() { echo "build-kube: $*" >&2; exit 1; }

release=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2 } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$mod/go.mod" | head -1)
[ -n "$release" ] || die "hack/kube/go.mod does not require k8s.io/kubernetes"
command -v go >/dev/null || die "go not found: this machine needs Go (1.24 or newer) to build Kubernetes"
digest=$( { cat "$mod/go.mod" "$mod/go.sum" "${BASH_SOURCE[0]}"; go version; } | sha256sum | cut -c1-12)
cache=${CEO_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cluster-etcd-operator/kube}
dir=$cache/$release-$digest/bin

complete() {
        local b
        [ -f "$dir/.complete" ] || return 1
        for b in "${bins[@]}"; do [ -x "$dir/$b" ] || return 1; done
}

if [ "${1:-}" = --bin-dir ]; then
        complete || die "Kubernetes $release is not built ($dir): run hack/install-deps.sh (or hack/build-kube.sh)"
        echo "$dir"
        exit 0
fi
[ $# -eq 0 ] || die "usage: hack/build-kube.sh [--bin-dir]"

if complete; then
        echo "build-kube: Kubernetes $release already built in $dir" >&2
        echo "$dir"
        exit 0
fi

# The version stamp of Kubernetes' hack/lib/version.sh, for the two packages that carry it.
ldflags="-s -w"
minor=${release#v1.}
minor=${minor%%.*}
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $p.gitVersion=$release -X $p.gitMajor=1 -X $p.gitMinor=$minor"
        ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

start=$SECONDS
tmp=$cache/$release-$digest/bin.partial
rm -rf "$tmp"
mkdir -p "$tmp"
echo "build-kube: downloading the modules of Kubernetes $release" >&2
(cd "$mod" && go mod download) || die "go mod download failed (is the Go module proxy reachable?)"
echo "build-kube: compiling ${bins[*]} (about 7 minutes on 2 cores the first time)" >&2
# go build -v names each package as it compiles it: a progress line every 250.
(cd "$mod" && go build -v -trimpath -ldflags "$ldflags" -o "$tmp/" \
        $(printf 'k8s.io/kubernetes/cmd/%s ' "${bins[@]}") 2>&1) | {
        n=0
        while IFS= read -r line; do
                case $line in
                *" "* | *:*) echo "$line" >&2 ;; # a compiler message, not a package path
                *) n=$((n + 1))
                   [ $((n % 250)) -ne 0 ] || echo "build-kube: $n packages compiled ($((SECONDS - start)) s)" >&2 ;;
                esac
        done
} || true
for b in "${bins[@]}"; do
        [ -x "$tmp/$b" ] || die "$b was not built (the compiler's messages are above)"
done
"$tmp/kube-apiserver" --version | grep -qx "Kubernetes $release" ||
        die "kube-apiserver --version says '$("$tmp/kube-apiserver" --version)', not Kubernetes $release"
touch "$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
echo "build-kube: Kubernetes $release built in $((SECONDS - start)) s into $dir" >&2
echo "$dir"
