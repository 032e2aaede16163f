#!/bin/sh
# s20_call1.sh (session 20, no GPU lent: prepared, not run). Carry .deps and build/src/cuda (built
# here with `make -j2 all`); ~8-9 minutes.
# 1. persist_probe's traced mode (~15 s): does the ring fill while the consumers spin? v20's third
#    finding (every emulated prologue fully additive) contradicts the arithmetic of a 192 KB ring
#    at 1/132 of the bandwidth; the trace says where the time goes (bench/RESULTS.md v22).
# 2. unit_probe (~10 s): the units' compute ceiling with their bytes already in shared memory
#    (the engine's tma_unit_load + dmv_unit_i8), plain / next unit loaded ahead / two units per
#    step, with 16, 8 and 32 warps, against the memory's pace.
# 3. s19_call4.sh: session_cuda.cu (the session's buffers moved out of forward_cuda.cu, its byte
#    count now including the split tails) and the split tail tested by the forward, kernel and hooks
#    tests, then GLIM_CUDA_TAIL_SPLIT 10 / 2 / 8 and GLIM_CUDA_DIAG_RING 3 / 4 against the
#    default in alternating processes, and memcheck on the tail's test model.
cd "$(dirname "$0")/../.." || exit 1
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -o build/persist_probe bench/persist_probe.cu \
    > $OUT/probe_build.log 2>&1 || { tail -5 $OUT/probe_build.log; }
timeout 90 build/persist_probe 52 trace > $OUT/probe_trace.md 2>&1; echo "probe trace rc=$?"
cat $OUT/probe_trace.md
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -Xptxas -v -o build/unit_probe bench/unit_probe.cu \
    > $OUT/unit_build.log 2>&1 || { tail -5 $OUT/unit_build.log; }
timeout 60 build/unit_probe > $OUT/unit_probe.md 2>&1; echo "unit probe rc=$?"
cat $OUT/unit_probe.md
sh bench/wip/s19_call4.sh
