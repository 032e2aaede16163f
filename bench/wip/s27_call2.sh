#!/bin/sh
# (Run in session 27, results: RESULTS v29.)
# session 27 call 2: ncu of attention (default and GLIM_CUDA_ATT_SHORT=64) at ctx ~3 and of
# qkvg / o_proj with and without bytes; all under /tmp/r, tarred to $OUT
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
mkdir -p /tmp/r/short /tmp/r/noBytes
OUT=/tmp/r NCU_TARGETS="attn k_attention 6;qkvg k_dmv 22;oproj k_dmv 23" sh bench/ncu_stalls.sh
GLIM_CUDA_ATT_SHORT=64 OUT=/tmp/r/short NCU_TARGETS="attn k_attention 6" sh bench/ncu_stalls.sh
GLIM_CUDA_DIAG_RING=4 OUT=/tmp/r/noBytes NCU_TARGETS="qkvg k_dmv 22;oproj k_dmv 23" sh bench/ncu_stalls.sh
for f in /tmp/r/attn /tmp/r/short/attn /tmp/r/qkvg /tmp/r/noBytes/qkvg /tmp/r/oproj /tmp/r/noBytes/oproj; do
  echo "== $f"
  grep -E "^ *(Duration|Warp Cycles Per Issued Instruction|Issue Slots Busy|Executed Instructions) " ${f}_details.txt | head -4
  sed -n 1,6p ${f}_profile.md | cut -c1-300
done
tar czf $OUT/s27_call2_ncu.tgz -C /tmp r
echo "total $(($(date +%s) - T0)) s"
