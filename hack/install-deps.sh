#!/usr/bin/env bash
# Installs, from Debian, everything the build, the tests and the demo need.
# Idempotent: packages already present are not touched, and apt is not even
# consulted when nothing is missing. Runs as root, or through sudo otherwise.
set -euo pipefail

packages=(
        cmake gcc make clang pkg-config libclang-rt-14-dev clang-format clang-tidy
        libcurl4-openssl-dev libcjson-dev libssl-dev libc-ares-dev libsystemd-dev
        libyaml-dev libmicrohttpd-dev libgnutls28-dev libcmocka-dev
        python3 dnsmasq-base util-linux iproute2 openssl curl valgrind nghttp2-proxy
        sudo tar gzip nodejs haproxy pyflakes3
        prometheus # for promtool: unit/prometheus-rules checks and unit-tests the alert rules
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
        # Some of these packages come with a service that Debian starts on install where an
        # init system runs (prometheus would listen on every address, port 9090): none may
        # start. policy-rc.d answering 101 ("action forbidden") is Debian's switch for that;
        # one already there (container images have one) is left as it is.
        policy=/usr/sbin/policy-rc.d
        own_policy=0
        if [ ! -e "$policy" ]; then
                printf '#!/bin/sh\n# install-deps: no service starts while it installs\nexit 101\n' |
                        "${sudo[@]}" tee "$policy" >/dev/null
                "${sudo[@]}" chmod 755 "$policy"
                own_policy=1
                trap '[ $own_policy = 1 ] && "${sudo[@]}" rm -f "$policy"' EXIT
        fi
        "${sudo[@]}" apt-get update -qq
        "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
        if [ $own_policy = 1 ]; then
                "${sudo[@]}" rm -f "$policy"
                own_policy=0
        fi
fi

# etcd 3.5, the minor OpenShift runs (its separate HTTP listener on 2381,
# etcdutl). Debian 13 (trixie) ships 3.5; Debian 12 (bookworm) only 3.4, so on
# bookworm the two etcd packages come from trixie, pinned so that nothing
# else does: a trixie source beside the machine's own Debian archive (same
# mirror, same keyring), at priority 100 for every package but these two.
etcd_min=3.5
etcd_ok() {
        local v
        v=$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null) || return 1
        dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" &&
                dpkg --compare-versions "$v" ge "$etcd_min"
}
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
apt_changed=0
# put_file PATH CONTENT: writes PATH when it differs (apt_changed=1 then).
put_file() {
        if [ "$(cat "$1" 2>/dev/null)" != "$2" ]; then
                printf '%s\n' "$2" | "${sudo[@]}" tee "$1" >/dev/null
                apt_changed=1
        fi
}
. /etc/os-release
if [ "${VERSION_CODENAME:-}" = bookworm ]; then
        # The machine's Debian archive: the first deb822 or one-line source of "bookworm".
        mirror=$(awk 'function pick() { if (u != "" && s) { print u; found = 1; exit } }
                /^[ \t]*$/ { pick(); u = ""; s = 0 } /^URIs:/ { u = $2 }
                /^Suites:/ && (/ bookworm$/ || / bookworm /) { s = 1 } END { if (!found) pick() }' \
                /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
        [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
                /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
        [ -n "$mirror" ] || { echo "install-deps: no bookworm source in /etc/apt to take the mirror from" >&2; exit 1; }
        put_file /etc/apt/sources.list.d/ceo-etcd-trixie.sources "$(printf '%s\n' "Types: deb" "URIs: $mirror" \
                "Suites: trixie" "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg")"
        put_file /etc/apt/preferences.d/ceo-etcd-trixie "$(printf '%s\n' "Package: *" "Pin: release n=trixie" \
                "Pin-Priority: 100" "" "Package: etcd-server etcd-client" "Pin: release n=trixie" "Pin-Priority: 990")"
        [ $apt_changed = 0 ] || echo "install-deps: etcd $etcd_min from Debian trixie ($mirror), pinned to etcd-server and etcd-client"
fi
if [ $apt_changed = 1 ] || ! etcd_ok etcd-server || ! etcd_ok etcd-client; then
        export DEBIAN_FRONTEND=noninteractive
        "${sudo[@]}" apt-get update -qq
fi
if ! etcd_ok etcd-server || ! etcd_ok etcd-client; then
        "${sudo[@]}" apt-get install -y -qq --no-install-recommends etcd-server etcd-client
        etcd_ok etcd-server && etcd_ok etcd-client ||
                { echo "install-deps: etcd-server and etcd-client $etcd_min or newer could not be installed" >&2; exit 1; }
fi

# Kubernetes' own control plane for the e2e scenarios and the demo: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl of one pinned release, built with
# the machine's Go into a cache outside the tree (hack/build-kube.sh; nothing when built).
bash "$(dirname "$0")/build-kube.sh" >/dev/null || { echo "install-deps: building Kubernetes failed" >&2; exit 1; }
# etcd 3.6 beside Debian's 3.5, for the tests that run a member or a cluster on it and upgrade
# to it (hack/build-etcd.sh, pinned by hack/etcd/go.mod; nothing when built).
bash "$(dirname "$0")/build-etcd.sh" >/dev/null || { echo "install-deps: building etcd 3.6 failed" >&2; exit 1; }
# Its monitoring stack's CRDs (ServiceMonitor, PrometheusRule) from prometheus-operator's Go
# module, for the control plane to serve (hack/monitoring-crds.sh; nothing when fetched).
bash "$(dirname "$0")/monitoring-crds.sh" >/dev/null || { echo "install-deps: fetching the monitoring CRDs failed" >&2; exit 1; }
# Debian ships etcd under /usr/bin/etcd; make sure it runs at all.
etcd --version >/dev/null
etcdutl version >/dev/null

# The S3 test peer and the independent S3 client (test/s3: s3rver, AWS's
# signer and SDK), from the npm registry at the versions package-lock.json
# pins; again only when the lock changed since the last install.
s3dir="$(dirname "$0")/../test/s3"
if ! cmp -s "$s3dir/package-lock.json" "$s3dir/node_modules/.ceo-installed-lock" 2>/dev/null; then
        echo "install-deps: npm ci in test/s3"
        (cd "$s3dir" && npm ci --no-audit --no-fund --loglevel=error) || { echo "install-deps: npm ci in test/s3 failed" >&2; exit 1; }
        cp "$s3dir/package-lock.json" "$s3dir/node_modules/.ceo-installed-lock"
fi
