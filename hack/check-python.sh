#!/usr/bin/env bash
# pyflakes over every Python file of the tree (tests, harness, hack/, bench/): an undefined
# name, an unused import or variable, a name used before it is bound. The test harness is
# Python; a NameError in a path one scenario takes shows up only when that scenario runs,
# so it is caught here instead. pyflakes3 comes from hack/install-deps.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
if ! command -v pyflakes3 >/dev/null; then
        echo "hack/check-python.sh: pyflakes3 is missing (hack/install-deps.sh installs it)" >&2
        exit 1
fi
mapfile -t files < <({
        git ls-files '*.py'
        git ls-files test hack bench | while read -r f; do
                case $f in *.py) continue ;; esac
                [ -f "$f" ] && head -c 64 "$f" | grep -q '^#!/usr/bin/env python3' && echo "$f"
        done
} | sort -u)
if ! pyflakes3 "${files[@]}"; then
        echo "hack/check-python.sh: pyflakes found problems" >&2
        exit 1
fi
echo "hack/check-python.sh: clean (${#files[@]} files)"
