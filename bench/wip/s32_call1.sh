#!/bin/sh
# s32_call1.sh (written in session 31, not run): what bounds the 32-token prefill GEMM. Session
# 31 measured mma.sync (GLIM_CUDA_GEMM=3) and wgmma (5) at the same speed (gate/up 137 / 138 us,
# RESULTS v33), so the tensor work is not the bound. Part 1: bench/wip/gemm_diag.patch's timing
# diagnostic (GLIM_CUDA_GEMM_DIAG, wrong outputs: 1 no weight copies, 2 no x copies, 4 no span
# math) under 3 and 5, the prompt profile's kernels alone. If 1 alone shortens gate/up a lot, the
# weights' access pattern (16 chunks of 1152 B a stage) is the bound; if 4 does, the math's
# latency. Part 2: s31_call3.sh's Nsight Compute run (stall reasons, DRAM and L2 throughput).
# Prepare here, from a clean main: git apply bench/wip/gemm_diag.patch && make -j2 all
# Carry [".deps", "build/src/cuda"]; ~7 minutes.
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for g in 3 5; do
  for d in 0 1 2 4 3 7; do
    GLIM_CUDA_GEMM=$g GLIM_CUDA_GEMM_DIAG=$d timeout 120 build/glimmer bench --synthetic -n 4 --prompt 2048 --profile > $OUT/prof.md 2>&1 || tail -3 $OUT/prof.md
    echo "GEMM=$g DIAG=$d: $(grep -E '^\| (qkvg|o_proj|gate/up\+swiglu|down), 32' $OUT/prof.md | awk -F'|' '{printf "%s %s; ", substr($2, 1, 8), $3}')"
  done
done
sh bench/wip/s31_call3.sh
