#!/bin/sh
# s52_call4.sh (session 52, not run: the device budget ran out; apply bench/wip/att_wide_keys.patch
# first and build here, then carry .deps and build/cuda_objs.tar.xz): the full layers' 72-split instance behind a key count
# (GLIM_CUDA_ATT_WIDE_KEYS: 72 splits a kv head past that many keys, 64 up to it; 0, the default
# written here, keeps main's instance, the same SASS as main's SPEC 3). Calls 2-3 found 72
# splits -0.7 % at 4k and +0.6 % at 32k; this call looks between, at ctx 0 / 4k / 8k / 16k /
# 32k (bench --ctx, new here): WIDE_KEYS 0 (main), 1 (72 at every context), 4200 (64 at 4k, 72
# from 8k on), 12000 (64 up to 8k, 72 from 16k on). On an H200 first the bench of record and
# the no-bytes run. Then att_poll_bits (poll_wide: WIDE_KEYS=1 at 4200 tokens, 66 splits), the
# A/B (ROUNDS, default 3), memcheck over att_poll_bits, test_cuda_forward (the device budget's
# last ~360 s: the order is what matters most first). Carry .deps, build/cuda_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
. bench/h200_record.sh
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 60 build/tests/test_cuda_forward > $OUT/poll.log 2>&1
echo "att_poll_bits: rc=$?"; grep -E "poll_wide|FAIL" $OUT/poll.log | head -4
CTX=0,4096,8192,16384,32768 sh bench/decode_ab.sh ${ROUNDS:-3} new GLIM_CUDA_ATT_WIDE_KEYS=1 \
    GLIM_CUDA_ATT_WIDE_KEYS=4200 GLIM_CUDA_ATT_WIDE_KEYS=12000 2>&1 | tail -4
echo "A/B done at $(( $(date +%s) - t0 )) s"
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/tests/test_cuda_forward > $OUT/san_poll_memcheck.log 2>&1
echo "compute-sanitizer memcheck over att_poll_bits: rc=$? ($(grep -E 'ERROR SUMMARY' $OUT/san_poll_memcheck.log | tail -1); $(grep -cE '^PASS' $OUT/san_poll_memcheck.log) pass)"
sh bench/gpu_tests.sh test_cuda_forward
echo "tests done at $(( $(date +%s) - t0 )) s"
echo "call took $(( $(date +%s) - t0 )) s"
