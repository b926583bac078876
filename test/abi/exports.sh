#!/bin/sh
# Every symbol libjetraft.so exports is public: jr_ followed by a character other than '_'
# (internal ones, jr__*, are hidden; anything else is a leak too). Then the soname.
# Usage: exports.sh LIB [--symbols-only]
set -eu
lib="$1"
defined=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}')
bad=$(printf '%s\n' "$defined" | grep -v '^jr_[^_]' | grep -v '^$' || true)
if [ -n "$bad" ]; then
    echo "symbols exported that are not public (jr_ then a non-underscore):"; echo "$bad"; exit 1
fi
n=$(printf '%s\n' "$defined" | grep -c '^jr_[^_]' || true)
echo "exports: $n public jr_ symbols, no others"
[ "${2:-}" = "--symbols-only" ] && exit 0
soname=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
case "$soname" in
    libjetraft.so.[0-9]*) echo "soname: $soname" ;;
    *) echo "unexpected soname: '$soname'"; exit 1 ;;
esac
