#!/bin/sh
# s22_call1.sh (session 22, no GPU lent: prepared, not run). Carry .deps and build/src/cuda
# (built here with `make -j2 all`); timeout_s 600, ~11 minutes. Run it before s21_call1.sh and
# s21_call2.sh: it decides whether the span-major matvec (GLIM_CUDA_SPAN, decode_mv_span.cu,
# RESULTS v24) is correct and whether it gains, with the prologues' price (DIAG_RING=5) and the
# session 20-21 switches in the same alternating A/B.
# 1. The span kernel against the CPU: its kernel test (33 calls of the integer path's shapes, 3
#    ring depths, 7 warps or the kernel's choice) and the forward (span_loop: two models, prompt
#    and greedy decoding against the CPU oracle, launch counts), then memcheck on the kernel
#    test (new shared-memory and bulk-copy traffic).
# 2. A/B in alternating processes (the timeline per product in e.md): the default, SPAN=15,
#    SPAN=15 with the sums in shared memory (SPAN_ACC=1: the loop over row blocks not unrolled),
#    SPAN=15 with the split tail (TAIL_SPLIT=10: o_proj's and down's leftover row blocks),
#    DIAG_RING=5 (prologues skipped: their cost), UNIT_AHEAD=1, SPAN=15 with 16 warps owning
#    spans (52 spans: 4 warps of 4 and 12 of 3, against 13 of 4), TAIL_SPLIT=10, ATT_WARM=1;
#    then DIAG_RING=4 (no weight bytes: the loops' own compute ceiling) for k_dmv_tma and for
#    the span kernel in both forms: whether the span loop keeps k_dmv_tma's rate (13 warps,
#    76 units each for gate/up against 62; the unrolled loop's code size).
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
for t in "kernels decode_matvec_span" "forward span_loop"; do
    set -- $t
    GLIM_REQUIRE_CUDA=1 CHECK_ONLY=$2 timeout 150 build/tests/test_cuda_$1 > $OUT/span_$1.log 2>&1
    echo "span $1 rc=$? $(grep -cE '^PASS' $OUT/span_$1.log) pass $(grep -cE '^FAIL' $OUT/span_$1.log) fail"
    grep -E 'check failed|FAIL|info: span' $OUT/span_$1.log | head -12
done
GLIM_REQUIRE_CUDA=1 CHECK_ONLY=decode_matvec_span timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/tests/test_cuda_kernels > /tmp/span_memcheck.log 2>&1
echo "span memcheck rc=$? $(grep 'ERROR SUMMARY' /tmp/span_memcheck.log | tail -1)"; grep -m5 -A3 'Invalid\|Error' /tmp/span_memcheck.log
S=GLIM_CUDA_SPAN R=GLIM_CUDA_DIAG_RING A=GLIM_CUDA_UNIT_AHEAD T=GLIM_CUDA_TAIL_SPLIT
sh bench/ab_decode.sh new new,$S=15 new,$S=15,GLIM_CUDA_SPAN_ACC=1 new,$S=15,$T=10 new,$R=5 new,$A=1 \
    new,$S=15,GLIM_CUDA_SPAN_WARPS=16 new new,$S=15 new,$S=15,GLIM_CUDA_SPAN_ACC=1 new,$S=15,$T=10 new,$T=10 \
    new,GLIM_CUDA_ATT_WARM=1 new,$R=4 new,$S=15,$R=4 new,$S=15,GLIM_CUDA_SPAN_ACC=1,$R=4
grep -E "^decode with|^\| (qkvg|attention|o_proj|gate/up|down|head) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=7) printf "   %s step %s loop(w/p/l) %s\n", $2, $3, $10}'
