#!/bin/sh
# s29_call2.sh (written in session 28, not yet run; ~3 minutes; best on an H200): gate/up on two
# row blocks a chunk. Its 19 rows of sums (13 span groups: 61 KB) leave shared memory for one
# two-row slot, so it has kept one row a chunk; bench/wip/span_warps_gu.patch adds
# GLIM_CUDA_SPAN_WARPS_GU, gate/up's own span-group count, and at 11 or fewer (<= 53 KB of sums)
# two slots of two rows fit (224 KB: 56 KB staging + sums + scratch + 2 x 11 x 4.6 KB). 11
# groups of 52 spans: at most 5 spans a warp against 13's 4 (+6 % of the unit work on the
# slowest warp, by the unit probe's flat rate in warps), against half the per-chunk bookkeeping.
# On an H100 gate/up's loop already runs at the memory's pace (expect nothing or a loss); on an
# H200 it was at 80 % of its bytes with no bytes at all (RESULTS v28), where it may gain.
# Prepare here, from a clean main (span_late_two.patch optional, both apply together):
#   git apply bench/wip/span_warps_gu.patch && make -j2 all
# Carry [".deps", "build/src/cuda"]; timeout_s 300. Keep it only where 13 (TWO with gate/up) and
# WARPS_GU 11 beat the default in every round; the rows below say whether gate/up's loop shrank.
cd "$(dirname "$0")/../.." || exit 1
set --
for r in 1 2 3; do
  set -- "$@" new new,GLIM_CUDA_SPAN_WARPS_GU=11,GLIM_CUDA_SPAN_TWO=13 new,GLIM_CUDA_SPAN_WARPS_GU=11 new,GLIM_CUDA_SPAN_WARPS_GU=9,GLIM_CUDA_SPAN_TWO=13
done
CHECKS="GLIM_CUDA_SPAN_WARPS_GU=11,GLIM_CUDA_SPAN_TWO=13" STEPS="gate/up, down" sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -5
