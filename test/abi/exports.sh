#!/bin/sh
# Every symbol libjetraft.so exports starts with jr_ (internal ones are hidden).
set -eu
lib="$1"
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^jr_' || true)
if [ -n "$bad" ]; then
    echo "symbols exported without the jr_ prefix:"; echo "$bad"; exit 1
fi
n=$(nm -D --defined-only "$lib" | grep -c ' jr_' || true)
echo "exports: $n jr_ symbols, no others"
soname=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
case "$soname" in
    libjetraft.so.[0-9]*) echo "soname: $soname" ;;
    *) echo "unexpected soname: '$soname'"; exit 1 ;;
esac
