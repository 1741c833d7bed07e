#!/usr/bin/env bash
# clang-tidy over the product's C (operator/, controllers/, render/) with the
# checks in .clang-tidy; any warning fails. Tests and benchmarks are left
# out: their unchecked printf()s are not worth the noise.
#   hack/tidy.sh [BUILD_DIR]   a configured build with compile_commands.json
#                              (default: build); JOBS (2) files at a time
set -uo pipefail
cd "$(dirname "$0")/.."
bdir=${1:-build}
if ! command -v clang-tidy >/dev/null; then
        echo "hack/tidy.sh: clang-tidy is missing (hack/install-deps.sh installs it)" >&2
        exit 1
fi
if [ ! -f "$bdir/compile_commands.json" ]; then
        echo "hack/tidy.sh: no $bdir/compile_commands.json (configure it: cmake -S . -B $bdir)" >&2
        exit 1
fi
out=$(git ls-files -- 'operator/*.c' 'controllers/*.c' 'render/*.c' |
        xargs -P "${JOBS:-2}" -n 4 clang-tidy -p "$bdir" --quiet 2>&1)
rc=$?
if [ $rc -ne 0 ] || grep -q 'warning:\|error:' <<<"$out"; then
        grep -A3 'warning:\|error:' <<<"$out" >&2
        echo "hack/tidy.sh: clang-tidy found problems (checks and why: .clang-tidy)" >&2
        exit 1
fi
echo "hack/tidy.sh: clean ($(git ls-files -- 'operator/*.c' 'controllers/*.c' 'render/*.c' | wc -l) files)"
