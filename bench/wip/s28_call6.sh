#!/bin/sh
# s28_call6.sh (session 28): GLIM_CUDA_SPAN_LATE=1, a two-row ring requesting one slot before the
# PDL wait and the rest after the prologue (main's pre-wait bytes), so that o_proj can take two
# rows without slowing attention (call 2: tiles 5.1 -> 7.3 us) and down's prologue stays short.
# Forward test under LATE=1 with every product on two rows, then 4 rounds.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
set --
for r in 1 2 3 4; do set -- "$@" new new,GLIM_CUDA_SPAN_LATE=1 new,GLIM_CUDA_SPAN_TWO=11,GLIM_CUDA_SPAN_LATE=1 new,GLIM_CUDA_SPAN_TWO=0; done
CHECKS="GLIM_CUDA_SPAN_TWO=11,GLIM_CUDA_SPAN_LATE=1" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
awk -F'|' '/^decode with /{v=$0; next} /^\| decode @ ctx/{printf "%s %s\n", v, $3}' $OUT/e.md | awk '{k=$3; a[k]=a[k] " " $4} END{for (k in a) print k, a[k]}' | sort
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{n=0; d=$0; next} {n++; if (n<=5) printf "%s %s step %s loop(w/p/l) %s\n", d, $2, $4, $10}' | head -20
echo "total $(($(date +%s) - T0)) s"
