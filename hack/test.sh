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
# The ASan phase gives ctest two PROCESSORS per core. A unit or integration test counts as
# one, an e2e cluster as two (test/e2e/CMakeLists.txt, from measured CPU and memory): on 2
# cores the two e2e chains (RESOURCE_LOCK e2e-cluster-a and -b) run together and alone, or
# one cluster beside two other tests, or four other tests at once.
test_jobs=${TEST_JOBS:-$((jobs * 2))}
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
