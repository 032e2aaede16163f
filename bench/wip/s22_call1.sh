#!/bin/sh
# s22_call1.sh (session 22, no GPU lent: prepared, not run). Carry .deps and build/src/cuda
# (built here with `make -j2 all`); timeout_s 600, ~8 minutes. The next GPU call's first: it
# decides whether the span-major matvec (GLIM_CUDA_SPAN, decode_mv_span.cu, RESULTS v24) is
# correct and whether it gains. Then s22_call2.sh, s21_call1.sh and s21_call2.sh on the same
# machine.
# 1. The span kernel against the CPU: its kernel test (every integer-path shape of
#    decode_matvec, 3 ring depths, 7 warps or the kernel's choice, sums in registers or in
#    shared memory) and the forward (span_loop: four models, prompt and greedy decoding against
#    the CPU oracle, launch counts; the last with the split tail).
# 2. A/B in alternating processes (the timeline per product in e.md): the default, SPAN=15 with
#    the sums in registers, in shared memory (SPAN_ACC=1) and with the split tail
#    (TAIL_SPLIT=10), DIAG_RING=5 (k_dmv_tma's prologues skipped: what they cost, the span
#    kernel's prize), and DIAG_RING=4 (no weight bytes: the loops' own compute ceiling) for
#    k_dmv_tma and for the span kernel in both forms: does the span loop keep k_dmv_tma's rate
#    (13 warps, 76 units each for gate/up against 62; the unrolled loop's ~4.5k instructions)?
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
for t in "kernels decode_matvec_span" "forward span_loop"; do
    set -- $t
    GLIM_REQUIRE_CUDA=1 CHECK_ONLY=$2 timeout 150 build/tests/test_cuda_$1 > $OUT/span_$1.log 2>&1
    echo "span $1 rc=$? $(grep -cE '^PASS' $OUT/span_$1.log) pass $(grep -cE '^FAIL' $OUT/span_$1.log) fail"
    grep -E 'check failed|FAIL|info: span' $OUT/span_$1.log | head -16
done
S=GLIM_CUDA_SPAN R=GLIM_CUDA_DIAG_RING T=GLIM_CUDA_TAIL_SPLIT C=GLIM_CUDA_SPAN_ACC
# (ITEMS=short: the first nine, ~5 minutes, when the device time left is short; ITEMS=min: five)
if [ "${ITEMS:-}" = min ]; then # (~3 minutes: is it right, and does it gain at all)
    set -- new new,$S=15 new,$R=5 new new,$S=15
elif [ "${ITEMS:-}" = short ]; then
    set -- new new,$S=15 new,$S=15,$C=1 new,$S=15,$T=10 new,$R=5 new new,$S=15 new,$R=4 new,$S=15,$R=4
else
    set -- new new,$S=15 new,$S=15,$C=1 new,$S=15,$T=10 new,$R=5 new new,$S=15 new,$S=15,$C=1 \
        new,$S=15,$T=10 new,$R=4 new,$S=15,$R=4 new,$S=15,$C=1,$R=4
fi
sh bench/ab_decode.sh "$@"
grep -E "^decode with|^\| (qkvg|attention|o_proj|gate/up|down|head) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=7) printf "   %s step %s loop(w/p/l) %s\n", $2, $3, $10}'
