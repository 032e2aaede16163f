#!/bin/sh
# (Run in session 27 on main + bench/wip/span_diag_chunk.patch, whose final form is call 7's; results: RESULTS v29.)
# s27_call7.sh (session 27): the span kernel's diagnostic switch and the matrix read from the
# parameters once, before the loop. Call 6: with no bytes, staging, units, waits, refills or sums
# (diagnostic 12) a chunk still cost ~0.16 us a warp; the PTX showed d.diag_ring loaded from the
# parameters 3-5 times per chunk (after each asm with a memory clobber), and main loads it once
# per chunk on lane 0's refill path. A/B x3: old = main 979b910 (build/oldtree), new = this tree;
# then the diagnostics 4, 9, 11, 12 again. Forward test (CHECKS) first.
# Carry [".deps", "build/src/cuda", "build/oldtree"]; ~3 minutes.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
CHECKS=GLIM_CUDA_SPAN=1 sh bench/ab_decode.sh old new old new old new new,GLIM_CUDA_DIAG_RING=4 \
   new,GLIM_CUDA_DIAG_RING=9 new,GLIM_CUDA_DIAG_RING=11 new,GLIM_CUDA_DIAG_RING=12 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
grep -E "^decode with|^\| (qkvg|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=4) printf "   %s step %s loop(w/p/l) %s\n", $2, $4, $10}' | tail -35
echo "total $(($(date +%s) - T0)) s"
