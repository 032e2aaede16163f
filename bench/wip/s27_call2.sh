#!/bin/sh
# s27_call2.sh (written in session 26, not yet run; ~3 minutes, best on the machine s27_call1.sh
# left warm, whatever tree it has built): what limits the span kernel's loop when no weight bytes
# are copied. Under ncu (session 26, call 2) qkvg's loop spent 37 % of its stall samples at the
# chunk's mbarrier wait, yet the no-bytes decode (GLIM_CUDA_DIAG_RING=4) shortens that loop by
# only 3-7 %: profile qkvg and o_proj with and without bytes and compare the loop's stall
# reasons (bench/sass_profile.py --range over the loop's instructions; find the loop as the
# instructions run once per chunk, the largest class of the first table). Carry [".deps",
# "build/src/cuda"]; timeout_s 300.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
[ -x build/glimmer ] || { scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }; }
mkdir -p /tmp/r
OUT=/tmp/r NCU_TARGETS="qkvg k_dmv 22;oproj k_dmv 23" sh bench/ncu_stalls.sh
mkdir -p /tmp/r/noBytes
GLIM_CUDA_DIAG_RING=4 OUT=/tmp/r/noBytes NCU_TARGETS="qkvg k_dmv 22;oproj k_dmv 23" sh bench/ncu_stalls.sh
for k in qkvg oproj; do
  for d in /tmp/r /tmp/r/noBytes; do
    echo "== $k ($d)"
    grep -E "Duration|Warp Cycles Per Issued Instruction|Issue Slots Busy" $d/${k}_details.txt | head -3
    sed -n 1,8p $d/${k}_profile.md
  done
done
tar czf $OUT/s27_call2_ncu.tgz -C /tmp r
echo "total $(($(date +%s) - T0)) s"
