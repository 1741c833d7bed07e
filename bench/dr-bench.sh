#!/usr/bin/env bash
# Disaster-recovery figures on one real etcd (TLS, loopback), for a database
# of DR_BENCH_MB megabytes (default 200):
#   backup:  cluster-etcd-operator cluster-backup (snapshot over gRPC, SHA-256
#            checked while streaming and again from disk, plus the tarball)
#            against `etcdctl snapshot save` of the same member;
#   restore: what cluster-restore and the restore pod do before etcd serves:
#            the snapshot check (SHA-256 + `etcdctl snapshot status`), the
#            copy, `etcdctl snapshot restore`, and bump-revision (50 000
#            revisions past the snapshot's, the default margin), against a
#            bare `etcdctl snapshot restore`.
# Then the time from a restore to three voters: the quorum-loss runbook's e2e
# with as much data written before its backup (DR_BENCH_E2E=0 skips it).
# Prints the figures; not a timed test.
#   bench/dr-bench.sh [BUILD_DIR]    (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/${1:-build}/cluster-etcd-operator
mb=${DR_BENCH_MB:-200}
dir=$(mktemp -d "${DR_BENCH_DIR:-/var/tmp}/dr-bench.XXXXXX")
etcd_pid=
cleanup() {
        [ -z "$etcd_pid" ] || { kill "$etcd_pid" 2>/dev/null; wait "$etcd_pid" 2>/dev/null || true; }
        rm -rf "$dir"
}
trap cleanup EXIT
[ -x "$bin" ] || { echo "dr-bench: $bin is missing (build it first)" >&2; exit 1; }

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
rate() { awk -v s="$1" -v b="$2" 'BEGIN { printf "%.0f", (s > 0 ? b / s / 1e6 : 0) }'; }

# A CA, and one certificate for the server and the client.
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt -days 1 \
        -subj /CN=dr-bench-ca 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout peer.key -out peer.csr \
        -subj /CN=dr-bench 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >ext
openssl x509 -req -in peer.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out peer.crt -days 1 -extfile ext \
        2>/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ep=https://127.0.0.1:$port
etcd --name bench --data-dir "$dir/data" --listen-client-urls "$ep" --advertise-client-urls "$ep" \
        --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
        --initial-cluster "bench=http://127.0.0.1:$pport" --cert-file peer.crt --key-file peer.key \
        --trusted-ca-file ca.crt --client-cert-auth --quota-backend-bytes $((8 << 30)) >etcd.log 2>&1 &
etcd_pid=$!
export ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$ep ETCDCTL_CACERT=$dir/ca.crt ETCDCTL_CERT=$dir/peer.crt ETCDCTL_KEY=$dir/peer.key
for _ in $(seq 1 100); do etcdctl endpoint health >/dev/null 2>&1 && break; sleep 0.1; done

echo "dr-bench: loading ${mb} MB (1 MB values) into $ep"
head -c 750000 /dev/urandom | base64 -w0 >value
for i in $(seq 1 "$mb"); do etcdctl put "/kubernetes.io/bench/$i" <value >/dev/null; done

# The host a backup reads: four static pods, each naming its revision directory.
cfg=$dir/etc-kubernetes
for p in kube-apiserver kube-controller-manager kube-scheduler etcd; do
        mkdir -p "$cfg/manifests" "$cfg/static-pod-resources/$p-pod-1"
        echo "path: /etc/kubernetes/static-pod-resources/$p-pod-1" >"$cfg/manifests/$p-pod.yaml"
done

t0=$(now)
etcdctl snapshot save "$dir/etcdctl.db" >/dev/null 2>&1
t1=$(now)
"$bin" cluster-backup --endpoints "$ep" --config-dir "$cfg" "$dir/backup" 2>backup.log
t2=$(now)
snap=$(ls "$dir"/backup/snapshot_*.db)
size=$(stat -c %s "$snap")
base_save=$(secs "$t0" "$t1")
ours_save=$(secs "$t1" "$t2")

# Restore: the bare etcdctl restore, then what ours adds before etcd serves.
t0=$(now)
etcdctl snapshot restore "$dir/etcdctl.db" --name bench --data-dir "$dir/restore-bare" \
        --initial-cluster bench=https://127.0.0.1:2380 --initial-advertise-peer-urls https://127.0.0.1:2380 \
        >/dev/null 2>&1
t1=$(now)
rev=$(etcdctl snapshot status "$snap" -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["revision"])')
t2=$(now)
cp "$snap" "$dir/copy.db" && sync "$dir/copy.db"
t3=$(now)
etcdctl snapshot restore "$dir/copy.db" --name bench --data-dir "$dir/restore-ours" \
        --initial-cluster bench=https://127.0.0.1:2380 --initial-advertise-peer-urls https://127.0.0.1:2380 \
        >/dev/null 2>&1
t4=$(now)
printf '{"clusterId":"1","raftIndex":{},"maxRaftIndex":1,"created":"2026-01-01T00:00:00Z","maxRevision":%s}\n' \
        "$rev" >revision.json
"$bin" bump-revision --data-dir "$dir/restore-ours" --name bench --revision-json revision.json \
        --status-file bump.json 2>bump.log
t5=$(now)
bare_restore=$(secs "$t0" "$t1")
check=$(secs "$t1" "$t2")
copy=$(secs "$t2" "$t3")
restore=$(secs "$t3" "$t4")
bump=$(secs "$t4" "$t5")
writes=$(python3 -c 'import json; b=json.load(open("bump.json")); print(b["toRevision"] - b["fromRevision"])')

cat <<EOF

dr-bench: database $((size / 1000000)) MB (snapshot revision $rev), etcd $(etcd --version | head -1 | awk '{print $3}'), $(nproc) cores, data in ${DR_BENCH_DIR:-/var/tmp}

| step | etcdctl | cluster-etcd-operator |
|---|---|---|
| backup (snapshot save) | ${base_save} s ($(rate "$base_save" "$size") MB/s) | ${ours_save} s ($(rate "$ours_save" "$size") MB/s), SHA-256 checked twice, tarball included |
| restore to a data dir | ${bare_restore} s | ${restore} s (the same etcdctl restore) |
| snapshot check before anything changes | - | ${check} s (etcdctl snapshot status; SHA-256 is in the backup figure) |
| copy to /var/lib/etcd-backup/snapshot.db | - | ${copy} s |
| revision bump (${writes} revisions, compaction) | not available in 3.4 | ${bump} s |
EOF

# The time from a restore to three voters, for a database of this size: the
# quorum-loss runbook's e2e with the same amount of data written before the
# backup (DR_BENCH_E2E=0 skips it; it takes several minutes).
if [ "${DR_BENCH_E2E:-1}" != 0 ]; then
        echo
        echo "dr-bench: the quorum-loss runbook e2e with a ${mb} MB database..."
        if E2E_DR_FILL_MB=$mb python3 "$root/test/e2e/test_dr.py" "$(dirname "$bin")" quorum-loss \
                >"$dir/e2e.log" 2>&1; then
                grep -o 'filled .*\|runbook done in .*\|FIGURES .*' "$dir/e2e.log"
        else
                tail -n 30 "$dir/e2e.log" >&2
                echo "dr-bench: the e2e failed" >&2
                exit 1
        fi
fi
