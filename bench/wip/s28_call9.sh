#!/bin/sh
# s28_call9.sh (session 28): is attention's first-pass penalty under o_proj's early ring (calls
# 7-8: +1.5 us a layer) its cold code? GLIM_CUDA_ATT_WARM=1 rehearses the tiles before the PDL
# wait (the passes' instance, ATT_LEAN off for it), i.e. before o_proj launches (ATT_TRIG=2). If
# the tiles' phase falls to ~3.7 us (call 7's ATT_TRIG=3 figure) the penalty is the cold fetches;
# session 23 measured ATT_WARM -5 % (its rehearsal delays the wait) under other defaults. 3 rounds.
cd "$(dirname "$0")/../.." || exit 1
set --
for r in 1 2 3; do set -- "$@" new new,GLIM_CUDA_ATT_LEAN=0 new,GLIM_CUDA_ATT_WARM=1; done
sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj) " $OUT/e.md | awk -F'|' '/^decode/{n=0; d=$0; next} {n++; if (n<=3) printf "%s %s step %s first %s loop(w/p/l) %s\n", d, $2, $4, $5, $10}' | head -9
