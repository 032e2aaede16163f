#!/bin/sh
# s53_call2.sh (session 53): the tree with GLIM_CUDA_ATT_WIDE_KEYS=12000 as the default (full
# layers on the 72-split instance past 12000 keys, on it capped at 64 splits below). On an H200
# first the bench of record and the no-bytes run (bench/h200_record.sh). Then the three GPU test
# programs under the new default, memcheck over att_poll_bits, and the A/B of the default
# against WIDE_KEYS=0 (main's instance, the same SASS as before the change) at ctx 0/4k/16k/32k,
# plus on an H200 o_proj at one row block a chunk (SPAN_TWO=13). Carry .deps, build/cuda_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
. bench/h200_record.sh
sh bench/gpu_tests.sh
echo "tests done at $(( $(date +%s) - t0 )) s"
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/tests/test_cuda_forward > $OUT/san_poll_memcheck.log 2>&1
echo "compute-sanitizer memcheck over att_poll_bits: rc=$? ($(grep -E 'ERROR SUMMARY' $OUT/san_poll_memcheck.log | tail -1); $(grep -cE '^PASS' $OUT/san_poll_memcheck.log) pass)"
case "$gpu" in *H200*) extra=GLIM_CUDA_SPAN_TWO=13 ;; *) extra= ;; esac
CTX=0,4096,16384,32768 sh bench/decode_ab.sh ${ROUNDS:-4} new GLIM_CUDA_ATT_WIDE_KEYS=0 $extra 2>&1 | tail -4
echo "call took $(( $(date +%s) - t0 )) s"
