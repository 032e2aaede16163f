#!/bin/sh
# s48_call2.sh (written in session 47 for a later call on the same build as s48_call1.sh): where
# the span kernel's warps wait. Its loops without weight bytes run ~700 cycles per unit per warp
# for ~35 instructions (session 47's no-bytes timeline: gate/up 129,792 units over 132 SMs x 16
# warps in 21.5 us), with issue slots, tensor pipe and shared memory each ~20 % busy by count.
# Nsight Compute's stall reasons per instruction (bench/ncu_stalls.sh, bench/sass_profile.py)
# for layer 1's gate/up, qkvg and down of the third token, without weight bytes
# (GLIM_CUDA_DIAG_RING=4: the H200's compute-bound regime) and with them. Outputs:
# $OUT/{nobytes,bytes}/ncu_stalls.tgz. Carry as for s48_call1.sh.
cd "$(dirname "$0")/../.." || exit 1
[ -x build/glimmer ] || scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s)
# k_dmv launches per token of the 2-layer model: qkvg o gate/up down (x2), head: 9; the third
# token's layer 1: qkvg 22, o_proj 23, gate/up 24, down 25
T="gateup k_dmv 24;qkvg k_dmv 22;down k_dmv 25"
for mode in nobytes bytes; do
    mkdir -p $OUT/$mode
    if [ $mode = nobytes ]; then E=GLIM_CUDA_DIAG_RING=4; else E=GLIM_CUDA_DIAG_RING=0; fi
    env $E OUT=$OUT/$mode NCU_TARGETS="$T" NCU_TAR=1 sh bench/ncu_stalls.sh
    echo "$mode done at $(( $(date +%s) - t0 )) s"
done
