#!/usr/bin/env bash
# rss-floor-lean.sh URL CA CERT KEY: the lowest RSS the operator's libraries
# (sd-event, libcurl, OpenSSL) can reach. It fetches Debian's source of the
# installed libcurl (apt-get source --download-only with a private deb-src list, so apt checks
# it against the archive's signed index; the system's apt configuration is
# not touched), builds a static libcurl with HTTP and HTTPS only on static
# OpenSSL, links bench/rss-floor-lean.c against it and libsystemd, and runs
# it: an sd-event loop and one mTLS GET. A benchmark only: nothing of it is
# linked into the operator. Work files stay in $RSS_FLOOR_LEAN_DIR
# (default /tmp/rss-floor-lean) and are reused.
#
#   bench/rss-floor-lean.sh https://127.0.150.10:2379/health ca.crt client.crt client.key
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 4 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
work=${RSS_FLOOR_LEAN_DIR:-/tmp/rss-floor-lean}
mkdir -p "$work"

version=$(dpkg-query -W -f='${Version}' libcurl4-openssl-dev)
upstream=${version%%-*}
src=$work/curl-$upstream
if [ ! -f "$work/prefix/lib/libcurl.a" ]; then
        if [ ! -d "$src" ]; then
                mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
                # The system's Debian entries as deb-src, in a list of our own.
                sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
                        >"$work/apt/debian-src.sources"
                # Own lists and cache: apt-get update here leaves the system's alone.
                opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$work/apt"
                        -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache")
                apt-get "${opts[@]}" -qq update
                (cd "$work" && apt-get "${opts[@]}" -qq source --download-only "curl=$version")
                tar -xzf "$work/curl_$upstream.orig.tar.gz" -C "$work"
        fi
        echo "rss-floor-lean: building a static libcurl $upstream (HTTP and HTTPS, OpenSSL) in $work" >&2
        (cd "$src" && ./configure --prefix="$work/prefix" --disable-shared --enable-static --with-openssl \
                --without-nghttp2 --without-libidn2 --without-libpsl --without-brotli --without-zstd \
                --without-zlib --without-librtmp --without-libssh2 --without-gssapi --disable-ldap \
                --disable-ldaps --disable-rtsp --disable-dict --disable-telnet --disable-tftp --disable-pop3 \
                --disable-imap --disable-smb --disable-smtp --disable-gopher --disable-mqtt --disable-ftp \
                --disable-file --disable-manual --disable-ntlm --disable-kerberos-auth --disable-alt-svc \
                --disable-hsts --disable-cookies --disable-netrc >"$work/configure.log" 2>&1 &&
                make -j2 -C lib >"$work/make.log" 2>&1 && make -C lib install >/dev/null &&
                make -C include install >/dev/null) || {
                echo "rss-floor-lean: the libcurl build failed; see $work/configure.log and make.log" >&2
                exit 1
        }
fi
gcc -O2 -o "$work/rss-floor-lean" "$root/bench/rss-floor-lean.c" -I"$work/prefix/include" \
        "$work/prefix/lib/libcurl.a" -Wl,-Bstatic -lssl -lcrypto -Wl,-Bdynamic -lsystemd -lpthread 2>"$work/link.log" || {
        cat "$work/link.log" >&2
        exit 1
}
"$work/rss-floor-lean" "$@"
echo "rss-floor-lean: shared objects: $(ldd "$work/rss-floor-lean" | grep -c '=>')" >&2
