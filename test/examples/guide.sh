#!/usr/bin/env bash
# Compiles every C block of docs/guide.md (each one a complete file) against the public
# headers, with warnings as errors, so the guide's snippets stay true as the API changes.
set -euo pipefail
guide="$1" include="$2" cc="${CC:-cc}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk -v dir="$dir" '
    /^```c$/ { n++; out = sprintf("%s/snippet%02d.c", dir, n); next }
    /^```$/ { out = ""; next }
    out != "" { print > out }
' "$guide"
count=0
for f in "$dir"/snippet*.c; do
    [ -f "$f" ] || continue
    "$cc" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$include" -c "$f" -o "${f%.c}.o" || {
        echo "guide: $(basename "$f") does not compile:"; cat -n "$f"; exit 1; }
    count=$((count + 1))
done
[ "$count" -gt 0 ] || { echo "guide: no C blocks found"; exit 1; }
echo "guide: $count snippets compile"
