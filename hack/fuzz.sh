#!/usr/bin/env bash
# Runs every libFuzzer target for longer than ctest does (default 10 minutes
# each; FUZZ_SECONDS to change), one at a time, keeping each target's corpus
# under build-fuzz/test/fuzz/corpus-<target>. Crashes are written next to it
# (crash-*) and make this script exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-600}
bash hack/install-deps.sh >/dev/null
CC=clang cmake -S . -B build-fuzz -DFUZZ=ON -DSANITIZE=ON >/dev/null
make -s -C build-fuzz -j2
failed=()
for bin in build-fuzz/test/fuzz/fuzz-*; do
        [ -x "$bin" ] || continue
        name=$(basename "$bin")
        corpus=build-fuzz/test/fuzz/corpus-$name
        seeds=test/fuzz/corpus/${name#fuzz-} # as test/fuzz/CMakeLists.txt names them
        if [ ! -d "$seeds" ]; then
                echo "fuzz: $name has no seeds in $seeds" >&2
                failed+=("$name")
                continue
        fi
        mkdir -p "$corpus"
        echo "== $name for ${seconds}s"
        if ! (cd build-fuzz/test/fuzz && "./$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
                -print_final_stats=1 "corpus-$name" "../../../$seeds" 2>&1 | tail -n 12); then
                failed+=("$name")
        fi
done
if [ ${#failed[@]} -gt 0 ]; then
        echo "fuzz: crashes in ${failed[*]} (see build-fuzz/test/fuzz/crash-*)" >&2
        exit 1
fi
echo "fuzz: no crash in any target"
