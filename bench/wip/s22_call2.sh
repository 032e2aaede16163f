#!/bin/sh
# s22_call2.sh (session 22, prepared, not run): after s22_call1.sh on the same machine (or alone:
# carry .deps and build/src/cuda); ~8 minutes.
# 1. memcheck on the span kernel's kernel test and on its forward test with the split tail
#    (new shared-memory, bulk-copy and slot traffic).
# 2. A/B: the span kernel with 16 warps owning spans (GLIM_CUDA_SPAN_WARPS=16: 52 spans as 4
#    warps of 4 and 12 of 3, against 13 of 4), and as 4 span groups x 4 row groups
#    (GLIM_CUDA_SPAN_ROWS=4: gate/up's warps 13 spans x 4-5 row blocks, 65 units at most against
#    76 with 13 warps), and the default, alternating; the last two with no weight bytes
#    (DIAG_RING=4): the loops' compute ceilings in each arrangement.
cd "$(dirname "$0")/../.." || exit 1
[ -x build/glimmer ] || scripts/device_build.sh > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
for t in "kernels decode_matvec_span" "forward span_loop"; do
    set -- $t
    GLIM_REQUIRE_CUDA=1 CHECK_ONLY=$2 timeout 110 compute-sanitizer --tool memcheck --error-exitcode 9 \
        build/tests/test_cuda_$1 > /tmp/memcheck_$1.log 2>&1
    echo "memcheck $1 $2 rc=$? $(grep 'ERROR SUMMARY' /tmp/memcheck_$1.log | tail -1) $(grep -E '^(PASS|FAIL)' /tmp/memcheck_$1.log | tr '\n' ' ')"
    grep -m3 -A4 'Invalid\|Race\|Error:' /tmp/memcheck_$1.log
done
S=GLIM_CUDA_SPAN
sh bench/ab_decode.sh new new,$S=15 new,$S=15,GLIM_CUDA_SPAN_WARPS=16 new,$S=15,GLIM_CUDA_SPAN_ROWS=4 new new,$S=15 \
    new,$S=15,GLIM_CUDA_SPAN_ROWS=4 new,$S=15,GLIM_CUDA_DIAG_RING=4 new,$S=15,GLIM_CUDA_SPAN_ROWS=4,GLIM_CUDA_DIAG_RING=4
grep -E "^decode with|^\| (qkvg|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=7) printf "   %s step %s loop(w/p/l) %s\n", $2, $3, $10}'
