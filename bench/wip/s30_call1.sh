#!/bin/sh
# s30_call1.sh (session 30): Nsight Compute on the prefill GEMM (GLIM_CUDA_GEMM=2), the second
# 32-token sub-chunk's layer 0 of a 64-token prompt on the 2-layer synthetic 30B: qkvg, o_proj,
# gate/up, down. Where its warps wait (call 0: 27 % of the copy bandwidth on gate/up, 8-10 % on
# the split products). Carry [".deps", "build/src/cuda"]; ~3 minutes.
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
mkdir -p /tmp/pf
GLIM_CUDA_GEMM=${GEMM:-2} OUT=/tmp/pf NCU_BENCH="--synthetic --layers 2 -n 1 --prompt 64" \
  NCU_TARGETS="qkvg k_pf_gemm 4;oproj k_pf_gemm 5;gu k_pf_gemm 6;down k_pf_gemm 7" sh bench/ncu_stalls.sh
for k in qkvg oproj gu down; do
  echo "== $k"
  grep -E "^ *(Duration|Warp Cycles Per Issued Instruction|Issue Slots Busy|Registers Per Thread|Achieved Occupancy|Memory Throughput|Compute \(SM\) Throughput|Block Limit) " /tmp/pf/${k}_details.txt | head -12
  sed -n 1,30p /tmp/pf/${k}_profile.md | cut -c1-220
done
tar czf $OUT/s30_call1_ncu.tgz -C /tmp pf
