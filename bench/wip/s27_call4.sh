#!/bin/sh
# (Run in session 27 on main + bench/wip/span_diag_chunk.patch, whose final form is call 7's; results: RESULTS v29.)
# s27_call4.sh (session 27): where the span kernel's loop time goes when no weight bytes are
# copied. unit_probe (call 3) found the unit code alone at 2.7-3.8x the memory's pace per SM,
# yet the no-bytes decode's qkvg and o_proj loops are slower than their bytes: the diagnostics 6
# (no bytes, no per-pair staging) and 7 (no bytes, no staging, no units) split the loop in situ.
# Also: the forward test on this tree (the diagnostics' branches are in the default instance) and
# old (main 979b910, build/oldtree) against new, so that they cost nothing by default.
# Carry [".deps", "build/src/cuda", "build/oldtree"]; ~4 minutes.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
CHECKS=GLIM_CUDA_SPAN=1 sh bench/ab_decode.sh old new new,GLIM_CUDA_DIAG_RING=4 new,GLIM_CUDA_DIAG_RING=6 \
   new,GLIM_CUDA_DIAG_RING=7 old new new,GLIM_CUDA_DIAG_RING=4 new,GLIM_CUDA_DIAG_RING=6 \
   new,GLIM_CUDA_DIAG_RING=7 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -30
echo "total $(($(date +%s) - T0)) s"
