#!/bin/sh
# Each folder of lib/ includes only the folders below it (docs/internals.md "Layers and
# folders"), and the pure state machines (store, stream, consumer, meta) none of the replication
# or node layers. The JetStream layer (js) sees the node core only through its seam: of lib/node it
# includes the service headers ($seam) and nothing else, and those include no other header of
# lib/node. Arguments: the lib/ directory.
set -eu
lib="$1"
order="util link vfs raft wire log store stream consumer meta node js sim"
pure_forbidden="raft wire log node js sim"
seam="services.h"
fail=0
below=""
for layer in $order; do
    [ -d "$lib/$layer" ] || { below="$below $layer"; continue; }
    used=$(cat "$lib/$layer"/*.c "$lib/$layer"/*.h 2>/dev/null |
        sed -n 's/^#include "\([a-z_]*\)\/.*/\1/p' | sort -u)
    for u in $used; do
        [ "$u" = "$layer" ] || [ "$u" = jetraft ] && continue
        case " $below " in
            *" $u "*) ;;
            *) echo "lib/$layer includes lib/$u, which is not below it"; fail=1 ;;
        esac
        case "$layer" in
            store | stream | consumer | meta)
                case " $pure_forbidden " in
                    *" $u "*) echo "lib/$layer is a pure state machine but includes lib/$u"; fail=1 ;;
                esac ;;
        esac
    done
    below="$below $layer"
done
for d in "$lib"/*/; do
    d=$(basename "$d")
    case " $order " in *" $d "*) ;; *) echo "lib/$d is not in the layer order"; fail=1 ;; esac
done
# The seam: lib/js's files, and the seam headers themselves, include of lib/node only the seam.
seam_files=""
for h in $seam; do
    [ -f "$lib/node/$h" ] || { echo "lib/node/$h (a seam header) is missing"; fail=1; continue; }
    seam_files="$seam_files $lib/node/$h"
done
for f in "$lib"/js/*.c "$lib"/js/*.h $seam_files; do
    [ -f "$f" ] || continue
    for h in $(sed -n 's/^#include "node\/\([^"]*\)".*/\1/p' "$f"); do
        case " $seam " in
            *" $h "*) ;;
            *) echo "lib/${f#"$lib"/} includes node/$h: the layer above the core sees only node/{$seam}"
               fail=1 ;;
        esac
    done
done
[ "$fail" -eq 0 ] && echo "layering: every folder includes only the folders below it; lib/js sees lib/node through its seam only"
exit "$fail"
