#!/bin/sh
# s21_call1.sh (sessions 20 and 21, no GPU lent to either: prepared, not run; was s20_call1.sh,
# session 21 added the unit probe's core loop and GLIM_CUDA_DIAG_ATT_TWICE). Carry .deps and
# build/src/cuda (built here with `make -j2 all`); ~9 minutes.
# 1. persist_probe's traced mode (~15 s): does the ring fill while the consumers spin? v20's third
#    finding (every emulated prologue fully additive) contradicts the arithmetic of a 192 KB ring
#    at 1/132 of the bandwidth; the trace says where the time goes (bench/RESULTS.md v22).
# 2. unit_probe (~10 s): the units' compute ceiling with their bytes already in shared memory
#    (the engine's tma_unit_load + dmv_unit_i8), plain / next unit loaded ahead / two units per
#    step / core (session 21: without the per-group epilogue, what the scales cost) / span
#    (session 21: span-major, one digit load per span for 19 row blocks), with 16, 8
#    and 32 warps, against the memory's pace.
# 3. The tree's tests (forward with tail_split and ahead_bits, kernels, hooks; session_cuda.cu's
#    move and the split tail are on every path), then in alternating processes the default
#    against GLIM_CUDA_UNIT_AHEAD=1 (the loop's next unit loaded ahead, in the lean kernel) and =2
#    (the lean kernel alone: what the freed registers do), GLIM_CUDA_TAIL_SPLIT=10, and the
#    diagnostics GLIM_CUDA_DIAG_RING=4 (no weight bytes: the loops' own compute ceiling) and
#    GLIM_CUDA_DIAG_ATT_TWICE=1 (attention's tiles twice: whether a 64-key tile's ~3.7 us at every
#    context is its execution or its cold start: the second pass runs with code, constants and
#    data in the SM's caches; the timeline's attention rows give "tiles' math" per launch). The
#    memcheck of the split tail moved to s21_call2.sh (session 21): with the new tests this call
#    came near the tool's 600 s. Use timeout_s 600; the ten bench items take ~5 minutes, the
#    tests ~3.
cd "$(dirname "$0")/../.." || exit 1
# (at most 8 files come back from $OUT: build logs go to /tmp, their tails to stdout on failure)
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -o build/persist_probe bench/persist_probe.cu \
    > /tmp/probe_build.log 2>&1 || tail -5 /tmp/probe_build.log
timeout 90 build/persist_probe 52 trace > $OUT/probe_trace.md 2>&1; echo "probe trace rc=$?"
cat $OUT/probe_trace.md
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -Xptxas -v -o build/unit_probe bench/unit_probe.cu \
    > /tmp/unit_build.log 2>&1 || tail -5 /tmp/unit_build.log
grep -E "registers|spill" /tmp/unit_build.log | tr -s ' ' | head -12
timeout 60 build/unit_probe > $OUT/unit_probe.md 2>&1; echo "unit probe rc=$?"
cat $OUT/unit_probe.md
A=GLIM_CUDA_UNIT_AHEAD T=GLIM_CUDA_TAIL_SPLIT R=GLIM_CUDA_DIAG_RING W=GLIM_CUDA_DIAG_ATT_TWICE
CHECKS="$T=0" KTESTS=1 sh bench/ab_decode.sh new new,$A=1 new,$A=2 new,$T=10 new,$W=1 new new,$A=1 new,$A=2 new,$T=10 \
    new,$R=4
grep -E "^(FAIL|PASS)|info: (tail_split|ahead|twice|warm)" $OUT/checks.log | sort | uniq -c | sort -rn | head -30
grep -E "^decode with|^\| (qkvg|attention|o_proj|gate/up|down|head) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=7) printf "   %s step %s loop(w/p/l) %s\n", $2, $3, $10}'
