#!/bin/sh
# s33_call1.sh (written in session 32, not run): Nsight Compute of the 64-token prefill GEMM on
# gate/up (k_pf_gemm<.., 8, 1, 0>). The bench's warm-up chunk (32 tokens) runs 8 GEMM launches
# on the 2-layer model first (session 32's call 6 profiled one of those by mistake), so the
# 64-token prompt's layer-0 gate/up is launch 10. Decides the next step (RESULTS v34): a tensor
# pipe near saturation says wgmma for 33..64 tokens, else more warps a scheduler.
# Carry [".deps", "build/src/cuda"]; ~3 minutes.
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
mkdir -p /tmp/pf
OUT=/tmp/pf NCU_BENCH="--synthetic --layers 2 -n 1 --prompt 64" NCU_TARGETS="gu64 k_pf_gemm 10" sh bench/ncu_stalls.sh
grep -E "k_pf_gemm<" /tmp/pf/gu64_details.txt | head -1
grep -E "^ *(Duration|Elapsed Cycles|SM Frequency|Warp Cycles Per Issued Instruction|Issue Slots Busy|Registers Per Thread|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|SM: Pipe Tensor Cycles Active) " /tmp/pf/gu64_details.txt | sort -u | head -12
grep -E "^ *Stall " /tmp/pf/gu64_details.txt | sort -k3 -n -r | head -10
sed -n 1,24p /tmp/pf/gu64_profile.md | cut -c1-200
cp /tmp/pf/gu64_details.txt /tmp/pf/gu64_profile.md $OUT/
