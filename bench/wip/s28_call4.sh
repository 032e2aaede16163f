#!/bin/sh
# s28_call4.sh (session 28): confirm call 3's candidates, GLIM_CUDA_SPAN_TWO 8 (down) and 9 (qkvg +
# down), against 0 (main's one row block a chunk), 5 alternating rounds. Call 3 (3 rounds):
# 0 153.3 / 145.2 / 138.3, 8 153.3 / 145.9 / 139.1, 9 153.8 / 145.7 / 139.0 tok/s; o_proj's two
# rows (2 slots of 4 units in flight during attention, twice main's bytes: tma_slots is 2) slowed
# attention's tiles 5.1 -> 7.3 us.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
set --
for r in 1 2 3 4 5; do set -- "$@" new,GLIM_CUDA_SPAN_TWO=0 new,GLIM_CUDA_SPAN_TWO=8 new,GLIM_CUDA_SPAN_TWO=9; done
sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
awk -F'|' '/^decode with /{v=$0; next} /^\| decode @ ctx/{printf "%s %s\n", v, $3}' $OUT/e.md | awk '{k=$3; a[k]=a[k] " " $4} END{for (k in a) print k, a[k]}' | sort
echo "total $(($(date +%s) - T0)) s"
