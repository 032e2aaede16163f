#!/bin/sh
# s28_call7.sh (session 28): o_proj's two-row ring (twice the pre-wait bytes: its loop 6.7 ->
# 5.3 us in call 2, but attention's tiles 5.1 -> 7.3) with o_proj launched once attention's
# tiles are done (GLIM_CUDA_ATT_TRIG=3), so that its ring's bytes do not meet the tiles. 3 rounds.
cd "$(dirname "$0")/../.." || exit 1
set --
for r in 1 2 3; do set -- "$@" new new,GLIM_CUDA_ATT_TRIG=3 new,GLIM_CUDA_SPAN_TWO=11,GLIM_CUDA_ATT_TRIG=3 new,GLIM_CUDA_SPAN_TWO=11; done
sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
awk -F'|' '/^decode with /{v=$0; next} /^\| decode @ ctx/{printf "%s %s\n", v, $3}' $OUT/e.md | awk '{k=$3; a[k]=a[k] " " $4} END{for (k in a) print k, a[k]}' | sort
grep -E "^decode with|^\| (attention \(sliding\)|o_proj) " $OUT/e.md | awk -F'|' '/^decode/{n=0; d=$0; next} {n++; if (n<=2) printf "%s %s step %s first %s loop(w/p/l) %s\n", d, $2, $4, $5, $10}' | head -8
