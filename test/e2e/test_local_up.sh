#!/usr/bin/env bash
# e2e/local-up: the README's demo command as a user runs it (hack/local-up.sh),
# on the test's build tree, in a scratch directory on its own loopback
# addresses: it must return with the cluster settled, every request allowed by
# RBAC, and `--down` must stop everything it started.
#   test_local_up.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
dir=$(mktemp -d "${TMPDIR:-/dev/shm}/ceo-local-up.XXXXXX")
net=127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))
export LOCAL_UP_DIR=$dir/state LOCAL_UP_NET=$net LOCAL_UP_BUILD=$build
finish() {
        local rc=$?
        bash "$root/hack/local-up.sh" --down >/dev/null 2>&1 || true
        if [ $rc -ne 0 ]; then
                tail -n 40 "$dir/out.log" 2>/dev/null || true
                for f in "$dir"/state/logs/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 15 "$f"; }; done
        fi
        rm -rf "$dir"
        exit $rc
}
trap finish EXIT
trap 'exit 143' TERM INT

start=$SECONDS
if ! timeout 600 bash "$root/hack/local-up.sh" >"$dir/out.log" 2>&1; then
        echo "FAIL: hack/local-up.sh did not come up" >&2
        exit 1
fi
echo "local-up came up in $((SECONDS - start)) s"
grep -q "The control plane is up: kube-apiserver v1\." "$dir/out.log" || { echo "FAIL: no summary" >&2; exit 1; }
grep -q "refused no request of theirs" "$dir/out.log" || { echo "FAIL: RBAC denied requests" >&2; exit 1; }
export KUBECONFIG=$dir/state/kube/kubeconfig
export PATH=$(bash "$root/hack/build-kube.sh" --bin-dir):$PATH
avail=$(kubectl get co etcd -o jsonpath='{.status.conditions[?(@.type=="Available")].status}')
[ "$avail" = True ] || { echo "FAIL: clusteroperator/etcd Available=$avail" >&2; exit 1; }
pids=$(cat "$dir"/state/pids/*.pid "$dir"/state/kube/*.pid 2>/dev/null || true)
bash "$root/hack/local-up.sh" --down >/dev/null
for p in $pids; do
        st=$(ps -o stat= -p "$p" 2>/dev/null) || continue
        if [[ $st != Z* ]]; then  # a zombie has stopped; PID 1 reaps it in its own time
                echo "FAIL: pid $p still runs after --down" >&2
                exit 1
        fi
done
echo "ok: local-up settled, no denial, --down stopped $(wc -w <<<"$pids") processes"
