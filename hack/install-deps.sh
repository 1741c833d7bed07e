#!/usr/bin/env bash
# Installs, from Debian, everything the build, the tests and the demo need.
# Idempotent: packages already present are not touched, and apt is not even
# consulted when nothing is missing. Runs as root, or through sudo otherwise.
set -euo pipefail

packages=(
        cmake gcc make clang pkg-config libclang-rt-14-dev clang-format clang-tidy
        libcurl4-openssl-dev libcjson-dev libssl-dev libc-ares-dev libsystemd-dev
        libyaml-dev libmicrohttpd-dev libcmocka-dev
        etcd-server etcd-client
        python3 dnsmasq-base util-linux iproute2 openssl curl valgrind nghttp2-proxy
        sudo tar gzip nodejs
)

missing=()
for p in "${packages[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
                missing+=("$p")
        fi
done

if [ ${#missing[@]} -eq 0 ]; then
        echo "install-deps: all ${#packages[@]} packages present"
else
        sudo=()
        if [ "$(id -u)" -ne 0 ]; then
                command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
                sudo=(sudo)
        fi
        echo "install-deps: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        "${sudo[@]}" apt-get update -qq
        "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# kubectl comes with the machine image (the behaviour in shared/reference/kube-api.md
# is that kubectl's). Say so loudly when it is missing; the tests that need it fail
# with the same message.
if ! command -v kubectl >/dev/null; then
        echo "install-deps: WARNING: kubectl is not on PATH; kubectl conformance tests will fail" >&2
fi
# Debian ships etcd under /usr/bin/etcd; make sure it runs at all.
etcd --version >/dev/null

# The S3 test peer and the independent S3 client (test/s3: s3rver, AWS's
# signer and SDK), from the npm registry at the versions package-lock.json
# pins; again only when the lock changed since the last install.
s3dir="$(dirname "$0")/../test/s3"
if ! cmp -s "$s3dir/package-lock.json" "$s3dir/node_modules/.ceo-installed-lock" 2>/dev/null; then
        echo "install-deps: npm ci in test/s3"
        (cd "$s3dir" && npm ci --no-audit --no-fund --loglevel=error) || { echo "install-deps: npm ci in test/s3 failed" >&2; exit 1; }
        cp "$s3dir/package-lock.json" "$s3dir/node_modules/.ceo-installed-lock"
fi
