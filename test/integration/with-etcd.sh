#!/usr/bin/env bash
# with-etcd.sh 3.6 COMMAND...: runs COMMAND with etcd 3.6's etcd, etcdctl and etcdutl first on
# PATH (hack/build-etcd.sh built them; hack/install-deps.sh does that) and ETCD_TEST_VERSION=3.6.
# set, which the etcd harness checks against what its members report: the integration tests
# that run Debian's etcd 3.5 run on etcd 3.6 this way (ctest integration/etcd-3.6/*).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: with-etcd.sh 3.6 COMMAND..." >&2; exit 2; }
minor=$1
shift
[ "$minor" = 3.6 ] || { echo "with-etcd.sh: only etcd 3.6 is built beside Debian's 3.5, not $minor" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(bash "$root/hack/build-etcd.sh" --bin-dir) || exit 1
version=$("$bin/etcd" --version | awk '/^etcd Version:/ { print $3 }')
case $version in
"$minor".*) ;;
*) echo "with-etcd.sh: $bin/etcd is etcd $version, not $minor" >&2; exit 1 ;;
esac
export PATH=$bin:$PATH ETCD_TEST_VERSION=$minor.
exec "$@"
