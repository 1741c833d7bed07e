#!/usr/bin/env bash
# The one test command (README, .ci/run): installs dependencies, checks
# formatting, runs clang-tidy (hack/tidy.sh), and runs every test label but
# `bench` in three builds:
#   build-fuzz      clang + libFuzzer: the `fuzz` label's short runs
#   build-valgrind  plain debug build: valgrind leak checks
#   build           ASan+UBSan (the default): unit, integration, e2e
# It ends with ctest's summary line of the main build and exits non-zero if
# anything failed anywhere.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
# The ASan phase runs one test more than there are cores: its two longest paths are the
# e2e clusters (RESOURCE_LOCK e2e-cluster-a and -b, test/e2e/CMakeLists.txt), which spend
# most of their time waiting on etcd (each member restart waits out etcd's request timeout
# for open watches), so unit and integration tests run beside them instead of after them.
test_jobs=${TEST_JOBS:-$((jobs + 1))}
failed=()

bash hack/install-deps.sh || exit 1

phase() { echo "== $1 (at $((SECONDS / 60))m$((SECONDS % 60))s)"; }

phase "format check"
if ! bash hack/check-format.sh; then
        failed+=("format")
fi

phase "clang-tidy"
if ! { cmake -S . -B build-valgrind -DSANITIZE=OFF -DVALGRIND=ON -DWERROR=ON >/dev/null &&
        bash hack/tidy.sh build-valgrind; }; then
        failed+=("clang-tidy")
fi

phase "fuzz build (clang, libFuzzer)"
if CC=clang cmake -S . -B build-fuzz -DFUZZ=ON -DSANITIZE=ON -DWERROR=ON >/dev/null &&
        make -s -C build-fuzz -j"$jobs"; then
        ctest --test-dir build-fuzz -L fuzz --output-on-failure -j"$jobs" || failed+=("fuzz")
else
        failed+=("fuzz build")
fi

phase "valgrind build (no sanitizers)"
if cmake -S . -B build-valgrind -DSANITIZE=OFF -DVALGRIND=ON -DWERROR=ON >/dev/null &&
        make -s -C build-valgrind -j"$jobs"; then
        ctest --test-dir build-valgrind -L valgrind --output-on-failure -j"$jobs" || failed+=("valgrind")
else
        failed+=("valgrind build")
fi

phase "ASan+UBSan build: unit, integration, e2e"
if cmake -S . -B build -DSANITIZE=ON -DWERROR=ON >/dev/null && make -s -C build -j"$jobs"; then
        ctest --test-dir build -LE 'bench|fuzz|valgrind' --output-on-failure -j"$test_jobs" || failed+=("tests")
else
        failed+=("build")
fi

echo "== done in $((SECONDS / 60))m$((SECONDS % 60))s"
if [ ${#failed[@]} -gt 0 ]; then
        echo "hack/test.sh: FAILED: ${failed[*]}" >&2
        exit 1
fi
