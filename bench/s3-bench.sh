#!/usr/bin/env bash
# Backup upload to S3: `cluster-etcd-operator s3 put` (multipart, 16 MiB parts,
# every part hashed for its signature and MD5-checked, the object checked
# after) against a plain `curl --aws-sigv4` single PUT of the same file to the
# same server in the same run (its SHA-256 computed by sha256sum first, as
# S3 needs the payload hash in the signature). The server is the test peer
# (test/s3/s3-peer.js: s3rver behind the SigV4-checking front) on loopback,
# so both pay the same server; the figures are MB/s of the file's size over
# wall time, best of RUNS.
# Usage: s3-bench.sh [SIZE_MIB] [RUNS] (defaults 256 and 3)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-256}
runs=${2:-3}
bash hack/install-deps.sh >/dev/null
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DSANITIZE=OFF >/dev/null
make -s -C build-release -j2 cluster-etcd-operator
bin=$PWD/build-release/cluster-etcd-operator

tmp=$(mktemp -d /tmp/s3-bench-XXXXXX)
peer=""
cleanup() {
        [ -n "$peer" ] && kill "$peer" 2>/dev/null && wait "$peer" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

ak=AKIABENCH sk=bench-secret bucket=bench
node --openssl-legacy-provider test/s3/s3-peer.js --address 127.0.85.1 --port 0 --dir "$tmp/store" \
        --access-key $ak --secret-key $sk --bucket $bucket --max-body-mib $((size_mib + 16)) > "$tmp/peer.out" &
peer=$!
for _ in $(seq 100); do grep -q listening "$tmp/peer.out" 2>/dev/null && break; sleep 0.1; done
endpoint=$(awk '{print $2}' "$tmp/peer.out")
mkdir "$tmp/creds"
printf %s $ak > "$tmp/creds/accessKeyID"
printf %s $sk > "$tmp/creds/secretAccessKey"
printf %s "$endpoint" > "$tmp/creds/endpoint"
printf true > "$tmp/creds/s3ForcePathStyle"
printf true > "$tmp/creds/insecureHTTP" # the peer listens on loopback, plain http
head -c $((size_mib * 1024 * 1024)) /dev/urandom > "$tmp/file"
bytes=$(stat -c %s "$tmp/file")

mbps() { python3 -c "print('%.1f' % ($bytes / 1e6 / $1))"; }
best_ours=999999 best_curl=999999
for i in $(seq "$runs"); do
        t0=$(date +%s.%N)
        "$bin" s3 put "$tmp/file" "ours-$i" --credentials-dir "$tmp/creds" --bucket $bucket 2>/dev/null
        t1=$(date +%s.%N)
        hash=$(sha256sum "$tmp/file" | cut -d' ' -f1)
        code=$(curl -sS -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ak:$sk" \
                -H "x-amz-content-sha256: $hash" -T "$tmp/file" "$endpoint/$bucket/curl-$i")
        t2=$(date +%s.%N)
        [ "$code" = 200 ] || { echo "s3-bench: curl's PUT answered $code" >&2; exit 1; }
        ours=$(python3 -c "print($t1 - $t0)") curl_s=$(python3 -c "print($t2 - $t1)")
        echo "run $i: ours $(printf %.2f "$ours") s ($(mbps "$ours") MB/s), curl $(printf %.2f "$curl_s") s ($(mbps "$curl_s") MB/s)"
        best_ours=$(python3 -c "print(min($best_ours, $ours))")
        best_curl=$(python3 -c "print(min($best_curl, $curl_s))")
done
echo "s3-bench size_mib=$size_mib runs=$runs ours_mb_s=$(mbps "$best_ours") curl_mb_s=$(mbps "$best_curl") ratio=$(python3 -c "print('%.2f' % ($best_curl / $best_ours))")"
