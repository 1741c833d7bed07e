#!/usr/bin/env bash
# build-etcd.sh - etcd 3.6 beside the machine's etcd 3.5, for the tests.
#
#   hack/build-etcd.sh            build etcd, etcdctl and etcdutl (once) and print
#                                 the directory that holds them
#   hack/build-etcd.sh --bin-dir  print that directory if they are built, else say
#                                 how to build them and exit 1
#
# etcd 3.5 is Debian's (hack/install-deps.sh); OpenShift releases now move etcd to
# 3.6, which Debian does not ship. These three are built from the Go modules
# go.etcd.io/etcd/{server,etcdctl,etcdutl}/v3 at the release hack/etcd/go.mod pins,
# with etcd's git stamp in place of a checkout's, so that `etcd --version` prints
# "etcd Version: 3.6.16". The etcd 3.6 image (images/etcd-3.6/Containerfile) takes
# them from here; the tests that upgrade a cluster to 3.6 and back run them.
#
# They go into a versioned cache outside the tree, named by the release and a digest
# of go.mod, go.sum, this script and the Go version:
#   ${CEO_ETCD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cluster-etcd-operator/etcd}/v3.6.16-<digest>/bin
# A second run finds them there and builds nothing; Go's module and build caches are
# reused too. A first run on 2 cores compiles for about 95 s (93 s measured with an empty Go
# build cache; the figure is printed at the end).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod=$root/hack/etcd
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

die() { echo "build-etcd: $*" >&2; exit 1; }

release=$(awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v/ { print $2 }' "$mod/go.mod" | head -1)
[ -n "$release" ] || die "hack/etcd/go.mod does not require go.etcd.io/etcd/server/v3"
command -v go >/dev/null || die "go not found: this machine needs Go (1.26 or newer) to build etcd $release"
digest=$( { cat "$mod/go.mod" "$mod/go.sum" "${BASH_SOURCE[0]}"; go version; } | sha256sum | cut -c1-12)
cache=${CEO_ETCD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cluster-etcd-operator/etcd}
dir=$cache/$release-$digest/bin
# binary name -> main package
declare -A pkgs=([etcd]=go.etcd.io/etcd/server/v3 [etcdctl]=go.etcd.io/etcd/etcdctl/v3
        [etcdutl]=go.etcd.io/etcd/etcdutl/v3)

complete() {
        local b
        [ -f "$dir/.complete" ] || return 1
        for b in "${!pkgs[@]}"; do [ -x "$dir/$b" ] || return 1; done
}

if [ "${1:-}" = --bin-dir ]; then
        complete || die "etcd $release is not built ($dir): run hack/install-deps.sh (or hack/build-etcd.sh)"
        echo "$dir"
        exit 0
fi
[ $# -eq 0 ] || die "usage: hack/build-etcd.sh [--bin-dir]"

if complete; then
        echo "build-etcd: etcd $release already built in $dir" >&2
        echo "$dir"
        exit 0
fi

start=$SECONDS
tmp=$cache/$release-$digest/bin.partial
rm -rf "$tmp"
mkdir -p "$tmp"
echo "build-etcd: downloading the modules of etcd $release" >&2
(cd "$mod" && go mod download) || die "go mod download failed (is the Go module proxy reachable?)"
# etcd's Makefile stamps the commit it was built from; a module has none, so the stamp
# names the module release instead.
ldflags="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module-$release"
for b in etcd etcdctl etcdutl; do
        echo "build-etcd: compiling $b" >&2
        (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$tmp/$b" "${pkgs[$b]}") ||
                die "$b was not built (the compiler's messages are above)"
done
want=${release#v}
"$tmp/etcd" --version | grep -qx "etcd Version: $want" ||
        die "etcd --version says '$("$tmp/etcd" --version | head -1)', not etcd Version: $want"
"$tmp/etcdutl" version | grep -qx "etcdutl version: $want" ||
        die "etcdutl version says '$("$tmp/etcdutl" version | head -1)', not etcdutl version: $want"
touch "$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
echo "build-etcd: etcd $release built in $((SECONDS - start)) s into $dir" >&2
echo "$dir"
