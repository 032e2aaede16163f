#!/bin/sh
# (Run in session 27 on main + bench/wip/span_diag_chunk.patch, whose final form is call 7's; results: RESULTS v29.)
# s27_call5.sh (session 27): call 4 found the span kernel's chunk bookkeeping alone (diagnostic
# 7: no bytes, no staging, no units) at 12.6 us of gate/up's loop on an H100, as much as its
# units. Which part: 8 = 7 without the refill's fence.proxy.async, 9 = 7 without the chunk's
# mbarrier wait; 10 = the real decode (bytes, staging, units) without the fence (a timing
# diagnostic only: the fence orders the lanes' reads of a slot before its refill).
# Carry [".deps", "build/src/cuda"]; ~2 minutes.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
sh bench/ab_decode.sh new new,GLIM_CUDA_DIAG_RING=10 new,GLIM_CUDA_DIAG_RING=7 new,GLIM_CUDA_DIAG_RING=8 \
   new,GLIM_CUDA_DIAG_RING=9 new new,GLIM_CUDA_DIAG_RING=10 2>&1 | grep -v '^new\|^old'
grep -E "^decode with|^\| (qkvg|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=4) printf "   %s step %s loop(w/p/l) %s\n", $2, $4, $10}' | head -25
echo "total $(($(date +%s) - T0)) s"
