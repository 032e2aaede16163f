#!/bin/sh
# s28_call10.sh (session 28): GLIM_CUDA_SPAN_LATE (a product mask), the one-row span kernel
# requesting one ring slot before its PDL wait and the other after its prologue, as a separate
# template instance (the default one's code unchanged). For o_proj (2): half the bytes its blocks
# request while attention runs, which slowed attention's first pass by ~1.5 us a layer (calls
# 7-8), against whatever o_proj's loop loses. Forward test under LATE=6, then 4 rounds.
cd "$(dirname "$0")/../.." || exit 1
set --
for r in 1 2 3 4; do set -- "$@" new new,GLIM_CUDA_SPAN_LATE=2 new,GLIM_CUDA_SPAN_LATE=6; done
CHECKS="GLIM_CUDA_SPAN_LATE=6" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
awk -F'|' '/^decode with /{v=$0; next} /^\| decode @ ctx/{printf "%s %s\n", v, $3}' $OUT/e.md | awk '{k=$3; a[k]=a[k] " " $4} END{for (k in a) print k, a[k]}' | sort
grep -E "^decode with|^\| (attention \(sliding\)|o_proj|gate/up) " $OUT/e.md | awk -F'|' '/^decode/{n=0; d=$0; next} {n++; if (n<=3) printf "%s %s step %s first %s loop(w/p/l) %s\n", d, $2, $4, $5, $10}' | head -9
