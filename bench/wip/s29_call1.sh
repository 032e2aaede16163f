#!/bin/sh
# s29_call1.sh (written in session 28, not yet run; ~4 minutes): the late ring on the two-row
# products too (bench/wip/span_late_two.patch: k_dmv_span's LATE instances for RPC 2, so that
# GLIM_CUDA_SPAN_LATE's bits for qkvg (1) and down (8) take effect), and o_proj's post-wait ring
# one slot deeper (GLIM_CUDA_TMA_SLOTS_O=3: 1 slot before the wait, 2 after). Session 28 (RESULTS
# v30): LATE on qkvg and down together, before o_proj and gate/up had it, was -0.3 % (call 6,
# span_late.patch); with LATE=6 the pre-wait bytes meet other kernels' tails than then. Down's
# blocks start ~2 us later since its ring holds two rows a slot (first block -1.6 against -4.4
# us), which LATE on down may undo. Prepare here, from a clean main (the patch applies from
# 6e611cb on, where dmv_span_plan picks its instance once):
#   git apply bench/wip/span_late_two.patch && make -j2 all
# Carry [".deps", "build/src/cuda"]; timeout_s 300. Land the patch if a mask with 1 or 8 beats 6
# in every round at every context (the tests below pass first: the forward test under the
# default, which includes session 28's new span_chunk_bits, and under LATE=15); else drop it.
cd "$(dirname "$0")/../.." || exit 1
set --
for r in 1 2 3 4; do
  set -- "$@" new new,GLIM_CUDA_SPAN_LATE=14 new,GLIM_CUDA_SPAN_LATE=7 new,GLIM_CUDA_SPAN_LATE=15 new,GLIM_CUDA_TMA_SLOTS_O=3
done
CHECKS="GLIM_CUDA_SPAN_EVEN=15 GLIM_CUDA_SPAN_LATE=15" STEPS="qkvg, attention (sliding), o_proj, gate/up, down" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
