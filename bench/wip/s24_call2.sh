#!/bin/sh
# s24_call2.sh (session 24's second GPU call, ~6 minutes): the new defaults (ATT_LEAN=1,
# UNIT_AHEAD=2) under the forward, kernel and hooks tests, then deeper rings for the products that
# wait on a latency-bound step: o_proj (launched after attention's q preparation, its whole
# 15.3 MB fits the SMs' shared memory at ~5 slots a warp), qkvg (launched under down's tail), and
# every product (TMA_SLOTS=3); the span kernel on the fewest blocks with the same largest share
# (SPAN_EVEN: 15 all, 10 o_proj and down, whose 416 row blocks go 4 a block on 104 SMs, the other
# 28 free for the next kernel's blocks). Controls: ATT_LEAN=0, SPAN=0 (now the lean k_dmv_tma).
# Carry [".deps", "build/src/cuda"]; timeout_s 600 (~6 minutes: the device time left was short,
# so session 19's tree and TMA_SLOTS=3 were dropped from it).
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
CHECKS="GLIM_CUDA_SPAN=15 GLIM_CUDA_SPAN=0" KTESTS=1 sh bench/ab_decode.sh new new,GLIM_CUDA_ATT_LEAN=0 new,GLIM_CUDA_SPAN_EVEN=15 new,GLIM_CUDA_SPAN_EVEN=10 \
    new,GLIM_CUDA_TMA_SLOTS_O=3 new,GLIM_CUDA_TMA_SLOTS_O=5 new,GLIM_CUDA_TMA_SLOTS_QKVG=4 \
    new,GLIM_CUDA_SPAN=0 \
    new new,GLIM_CUDA_ATT_LEAN=0 new,GLIM_CUDA_SPAN_EVEN=15 new,GLIM_CUDA_SPAN_EVEN=10 \
    new,GLIM_CUDA_TMA_SLOTS_O=3 new,GLIM_CUDA_TMA_SLOTS_O=5 new,GLIM_CUDA_TMA_SLOTS_QKVG=4 \
    new,GLIM_CUDA_SPAN=0 2>&1 | grep -v '^new'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down|head) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=6) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -70
echo "total $(($(date +%s) - T0)) s"
