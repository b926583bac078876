#!/bin/sh
# Each folder of lib/ includes only the folders below it (docs/internals.md "Layers and
# folders"), and the pure state machines (store, stream, meta) none of the replication or node
# layers. Arguments: the lib/ directory.
set -eu
lib="$1"
order="util vfs raft wire log store stream meta node js sim"
pure_forbidden="raft wire log node js sim"
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
            store | stream | meta)
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
[ "$fail" -eq 0 ] && echo "layering: every folder includes only the folders below it"
exit "$fail"
