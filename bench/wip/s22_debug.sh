#!/bin/sh
# s22_debug.sh (session 22): s22_call1's forward test failed for the span kernel on the models
# whose products have fewer row blocks than SMs (decode logits off by 3-5, the kernel test and
# the 132-block tail model passing). Bisect: the span_loop test with PDL off, LATE_NORM off, the
# graph off, and one product at a time (GLIM_TEST_SPAN); the decode-logit line of three cases.
cd "$(dirname "$0")/../.." || exit 1
[ -x build/tests/test_cuda_forward ] || scripts/device_build.sh > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
for v in X=0 GLIM_CUDA_PDL=0 GLIM_CUDA_LATE_NORM=0 GLIM_CUDA_GRAPH=0 GLIM_TEST_SPAN=1 GLIM_TEST_SPAN=2 GLIM_TEST_SPAN=4 \
    GLIM_TEST_SPAN=8; do
    echo "== $v"
    env $v GLIM_REQUIRE_CUDA=1 CHECK_ONLY=span_loop timeout 60 build/tests/test_cuda_forward 2>&1 |
        grep -E '(span_wide|span_half|span_tail_split_2_row_groups) fp32 KV (decode logits|greedy)' | grep -v generic
done
