#!/bin/sh
# s31_call1b.sh (session 31): the three prepared patches in one tree and one call:
# sk_where_waves.patch (GLIM_CUDA_GEMM=4), span_late_two.patch (GLIM_CUDA_SPAN_LATE's qkvg and
# down bits), span_warps_gu.patch (GLIM_CUDA_SPAN_WARPS_GU). Prepare here from e161ea6:
#   git apply bench/wip/sk_where_waves.patch bench/wip/span_late_two.patch \
#     bench/wip/span_warps_gu.patch && make -j2 all
# Carry [".deps", "build/src/cuda"]. Part 1 is s31_call1.sh (prefill), part 2 the decode items
# of s29_call1.sh and s29_call2.sh, 3 rounds, alternating processes.
cd "$(dirname "$0")/../.." || exit 1
sh bench/wip/s31_call1.sh
mv $OUT/checks.log $OUT/checks_pf.log
set --
for r in 1 2 3; do
  set -- "$@" new new,GLIM_CUDA_SPAN_LATE=14 new,GLIM_CUDA_SPAN_LATE=7 new,GLIM_CUDA_TMA_SLOTS_O=3 new,GLIM_CUDA_SPAN_WARPS_GU=11,GLIM_CUDA_SPAN_TWO=13 new,GLIM_CUDA_SPAN_WARPS_GU=11
done
CHECKS="GLIM_CUDA_SPAN_LATE=15 GLIM_CUDA_SPAN_WARPS_GU=11,GLIM_CUDA_SPAN_TWO=13" STEPS="qkvg, o_proj, gate/up, down" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
cd $OUT && tar czf logs.tgz *.log *.md 2>/dev/null; ls
