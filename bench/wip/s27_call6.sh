#!/bin/sh
# (Run in session 27 on main + bench/wip/span_diag_chunk.patch, whose final form is call 7's; results: RESULTS v29.)
# s27_call6.sh (session 27): call 5 fitted diagnostic 9's loop (no bytes, staging, units or chunk
# waits) as ~1.8 us per launch + ~0.27 us per chunk per warp (o_proj 4 chunks a warp, qkvg 10,
# down 20, gate/up 38). Further: 11 = 9 without the refill (lane 0's fence and arrive), 12 = 11
# without the row block's sums read and written in shared memory (GLIM_CUDA_SPAN_ACC's default).
# Carry [".deps", "build/src/cuda"]; ~1 minute.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
sh bench/ab_decode.sh new,GLIM_CUDA_DIAG_RING=9 new,GLIM_CUDA_DIAG_RING=11 new,GLIM_CUDA_DIAG_RING=12 \
   new,GLIM_CUDA_DIAG_RING=9 new,GLIM_CUDA_DIAG_RING=11 new,GLIM_CUDA_DIAG_RING=12 new 2>&1 | grep -v '^new\|^old'
grep -E "^decode with|^\| (qkvg|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=4) printf "   %s step %s loop(w/p/l) %s\n", $2, $4, $10}' | head -35
echo "total $(($(date +%s) - T0)) s"
