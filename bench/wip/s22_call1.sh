#!/bin/sh
# s22_call1.sh (session 22; run 1-2 of RESULTS v24 on an H100 with ITEMS=short). Carry .deps and build/src/cuda
# (built here with `make -j2 all`); timeout_s 600, ~8 minutes. The next GPU call's first: it
# decides whether the span-major matvec (GLIM_CUDA_SPAN, decode_mv_span.cu, RESULTS v24) is
# correct and whether it gains. Then s22_call2.sh, s21_call1.sh and s21_call2.sh on the same
# machine.
# 1. The span kernel against the CPU: its kernel test (every integer-path shape of
#    decode_matvec, 3 ring depths, 7 warps or the kernel's choice, sums in registers or in
#    shared memory) and the forward (span_loop: four models, prompt and greedy decoding against
#    the CPU oracle, launch counts; the last with the split tail).
# 2. A/B in alternating processes (the timeline per product in e.md): the default (the span
#    kernel, sums in shared memory), k_dmv_tma (SPAN=0), the sums in registers (SPAN_ACC=0), the
#    split tail (TAIL_SPLIT=10), DIAG_RING=5 on k_dmv_tma, and DIAG_RING=4 (no weight bytes: the
#    loops' own compute ceiling) for both kernels. Session 22's run 2 (H100) measured this with
#    SPAN=15 set explicitly: 142.7 against 128.4 / 127.4 tok/s; repeat it on an H200.
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
# (since session 22's run 2 "new" is the span kernel with its sums in shared memory, the default;
# $S=0 is k_dmv_tma, the default before)
if [ "${ITEMS:-}" = min ]; then # (~2 minutes)
    set -- new new,$S=0 new new,$S=0
elif [ "${ITEMS:-}" = short ]; then
    set -- new new,$S=0 new,$C=0 new,$T=10 new,$S=0,$R=5 new new,$S=0 new,$R=4 new,$S=0,$R=4
else
    set -- new new,$S=0 new,$C=0 new,$T=10 new,$S=0,$R=5 new new,$S=0 new,$C=0 new,$T=10 new,$R=4 new,$S=0,$R=4 \
        new,GLIM_CUDA_SPAN_ROWS=4
fi
sh bench/ab_decode.sh "$@"
grep -E "^decode with|^\| (qkvg|attention|o_proj|gate/up|down|head) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=7) printf "   %s step %s loop(w/p/l) %s\n", $2, $3, $10}'
