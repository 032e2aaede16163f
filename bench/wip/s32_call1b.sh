#!/bin/sh
# s32_call1b.sh (session 32): main's decode on whatever card comes (3 processes, the issue's
# figure; the GEMM diagnostic patch does not touch decode), then s32_call1.sh (the prefill GEMM's
# parts left out one at a time, and Nsight Compute of gate/up under GEMM 3 and 5).
# Prepare: git apply bench/wip/gemm_diag.patch && make -j2 all. Carry [".deps", "build/src/cuda"].
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
STEPS="qkvg, attention (sliding), o_proj, gate/up, down" sh bench/ab_decode.sh new new new 2>&1 | grep -v '^new\|^old'
grep -E "copy bandwidth|floor" $OUT/e.md | head -4
sh bench/wip/s32_call1.sh
