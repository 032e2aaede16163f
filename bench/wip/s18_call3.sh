#!/bin/sh
# s18_call3.sh (session 18): the GPU tests with GLIM_CUDA_LATE_NORM on by default, the bench's
# figures of the tree as committed, and bench/persist_probe.cu (a persistent kernel streaming
# the model's bytes through grid barriers and emulated prologues). Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
export OUT
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -o build/persist_probe bench/persist_probe.cu > $OUT/probe_build.log 2>&1
timeout 120 build/persist_probe > $OUT/probe.md 2>&1; echo "probe rc=$?"; cat $OUT/probe.md
KEEP_BUILD=1 OUT=$OUT/check sh bench/gpu_check.sh tests bench > /dev/null 2>&1
grep -E "tests:|FAIL" $OUT/check/summary.txt | head
grep -B3 "^FAIL" $OUT/check/tests.log | head -20
grep -E "^\| (decode|prefill)|copy bandwidth" $OUT/check/bench.md | head
tar czf /tmp/r.tgz -C "$OUT" . && rm -rf "$OUT"/* && mv /tmp/r.tgz "$OUT/r.tgz"
