#!/bin/sh
# s36_call2.sh (session 36): GLIM_CUDA_SPAN_RING_WAIT, the LATE ring's other slots requested
# right after the PDL wait instead of after the prologue (qkvg's and gate/up's norms). Its test
# (span_ring_wait_bits) and memcheck on it; decode A/B, 4 rounds, alternating processes: this
# tree with it off (new), on for qkvg and gate/up (5), on for all four (15: RAW products have no
# prologue, so the same as 5 but for the code path), and the previous commit's binary (old:
# what the run-time branch costs); then the timeline at ctx 0 with it on and off.
# Here first: make -j2 all; scripts/old_binary.sh REV. Carry .deps, build/src/cuda,
# build/old_glimmer.xz. ~5 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for t in span_ring_wait_bits span_spec_bits; do
  CHECK_ONLY=$t GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/check_$t.log 2>&1
  echo "$t: rc=$? $(grep -cE '^PASS' $OUT/check_$t.log) pass $(grep -cE '^FAIL' $OUT/check_$t.log) fail"
done
CHECK_ONLY=span_ring_wait_bits GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/test_cuda_forward > $OUT/san.log 2>&1
echo "memcheck span_ring_wait_bits: rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san.log | tail -1)"
sh bench/decode_ab.sh 4 new GLIM_CUDA_SPAN_RING_WAIT=5 GLIM_CUDA_SPAN_RING_WAIT=15 old
# the timeline at ctx 0: RING_WAIT off / on, then what the norms' L2 reads cost (GLIM_CUDA_DIAG_RING
# 6: no residual read, 7: no reads; wrong logits) on the general instance (SPAN_SPEC=0, which the
# diagnostics run on) against that instance without them
for v in GLIM_CUDA_SPAN_RING_WAIT=0 GLIM_CUDA_SPAN_RING_WAIT=5 GLIM_CUDA_SPAN_SPEC=0 \
         GLIM_CUDA_SPAN_SPEC=0,GLIM_CUDA_DIAG_RING=6 GLIM_CUDA_SPAN_SPEC=0,GLIM_CUDA_DIAG_RING=7; do
  f=$OUT/tl_$(echo "$v" | tr -c 'A-Za-z0-9\n' _).md
  timeout 100 env $(echo "$v" | tr ',' ' ') build/glimmer bench --synthetic --prompt 0 --timeline --out $f > /dev/null 2>&1
  echo "timeline $v: $(grep -E '^\| decode @ ctx 0' $f | cut -d'|' -f3)"
  grep -A9 "timeline @ ctx 0" $f | grep -E "^\| (qkvg|o_proj|gate|down)"
done
# on an H200 (the issue's card; none came in sessions 34-35): the bench of record, timeline on
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench_h200.md > /dev/null 2>&1
  grep -E "^copy|^\| decode|^\| prefill" $OUT/bench_h200.md
fi
