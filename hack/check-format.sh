#!/usr/bin/env bash
# Fails when any tracked or new .c/.h file differs from .clang-format.
set -uo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r f; do
        [ -f "$f" ] || continue
        if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
                echo "clang-format differs: $f (fix: clang-format -i $f)" >&2
                bad=1
        fi
done < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h')
exit $bad
