#!/bin/sh
# (Run in session 27 on main + bench/wip/span_diag_chunk.patch, whose final form is call 7's; results: RESULTS v29.)
# s27_call8.sh (session 27): where an empty chunk's ~0.15 us goes (diagnostic 12: no bytes,
# staging, units, waits, refills or sums; calls 6-7). Nsight Compute on qkvg and down of the
# 2-layer synthetic decode under GLIM_CUDA_DIAG_RING=12, with the SASS page's per-instruction
# counts and stall samples (bench/sass_profile.py). Apply bench/wip/span_diag_chunk.patch first.
# Carry [".deps", "build/src/cuda"]; ~2 minutes.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
mkdir -p /tmp/r12
GLIM_CUDA_DIAG_RING=12 OUT=/tmp/r12 NCU_TARGETS="qkvg k_dmv 22;down k_dmv 21" sh bench/ncu_stalls.sh
for k in qkvg down; do
  echo "== $k"
  grep -E "^ *(Duration|Warp Cycles Per Issued Instruction|Issue Slots Busy) " /tmp/r12/${k}_details.txt | head -3
  sed -n 1,40p /tmp/r12/${k}_profile.md | cut -c1-200
done
tar czf $OUT/s27_call8_ncu.tgz -C /tmp r12
echo "total $(($(date +%s) - T0)) s"
