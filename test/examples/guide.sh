#!/usr/bin/env bash
# The snippets of docs/guide.md stay true as the API changes:
#   guide.sh c GUIDE INCLUDE         compiles every C block (each one a complete file) against
#                                    the public headers, with warnings as errors;
#   guide.sh python GUIDE PYTHON     runs every Python block (each one a complete program) with
#                                    the binding on PYTHONPATH and JETRAFT_LIB naming the library
#                                    just built (the environment's), each in a directory of its
#                                    own, and fails on a non-zero exit or after 120 s.
# A fenced block only counts at the start of a line: an indented one would escape the test, so
# it is an error.
set -euo pipefail
mode="$1" guide="$2"
case "$mode" in
c) lang=c ext=c ;;
python) lang=python ext=py ;;
*) echo "usage: guide.sh c GUIDE INCLUDE | guide.sh python GUIDE PYTHON" >&2; exit 2 ;;
esac
if grep -nE '^[[:space:]]+```(c|python)$' "$guide"; then
    echo "guide: an indented code block (above) would not be checked; put it at column 0"
    exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk -v dir="$dir" -v lang="$lang" -v ext="$ext" '
    $0 == "```" lang { n++; out = sprintf("%s/snippet%02d.%s", dir, n, ext); next }
    /^```$/ { out = ""; next }
    out != "" { print > out }
' "$guide"
count=0
for f in "$dir"/snippet*."$ext"; do
    [ -f "$f" ] || continue
    if [ "$mode" = c ]; then
        "${CC:-cc}" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$3" -c "$f" -o "${f%.c}.o" || {
            echo "guide: $(basename "$f") does not compile:"; cat -n "$f"; exit 1; }
    else
        run="$dir/run-$(basename "$f" .py)"
        mkdir "$run"
        (cd "$run" && timeout 120 "$3" "$f") || {
            echo "guide: $(basename "$f") failed:"; cat -n "$f"; exit 1; }
    fi
    count=$((count + 1))
done
[ "$count" -gt 0 ] || { echo "guide: no $lang blocks found"; exit 1; }
if [ "$mode" = c ]; then echo "guide: $count C snippets compile"; else echo "guide: $count Python snippets run"; fi
