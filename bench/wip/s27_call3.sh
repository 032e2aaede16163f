#!/bin/sh
# (Run in session 27, results: RESULTS v29.)
# s27_call3.sh (session 27): 1) bench/unit_probe.cu, never run since session 20 wrote it: units
# per us per SM of the decode's own unit code with its bytes already in shared memory, at 8, 16
# and 32 warps (plain, ahead, pairs, core, span); 2) the forward test on main (chunk_ilp landed)
# under the span kernel's other shapes (SPAN_ACC=0: sums in shared memory; SPAN_ROWS=4); 3) A/B
# x3: old = session 26's main (20b489f, build/oldtree) against this tree.
# Carry [".deps", "build/src/cuda", "build/oldtree"]; ~5 minutes.
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -o build/unit_probe bench/unit_probe.cu > $OUT/probe_build.log 2>&1 || { tail $OUT/probe_build.log; exit 1; }
timeout 120 build/unit_probe > $OUT/unit_probe.txt 2>&1; echo "unit_probe rc=$?"
cat $OUT/unit_probe.txt
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for e in GLIM_CUDA_SPAN_ACC=0 GLIM_CUDA_SPAN_ROWS=4; do
  env $e GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/fwd_$e.log 2>&1
  echo "forward $e: rc=$? pass $(grep -c '^PASS' $OUT/fwd_$e.log) fail $(grep -c '^FAIL' $OUT/fwd_$e.log) skip $(grep -c '^SKIP' $OUT/fwd_$e.log)"
done
echo "tests $(($(date +%s) - T0)) s"
sh bench/ab_decode.sh old new old new old new 2>&1 | grep -v '^new\|^old'
echo "total $(($(date +%s) - T0)) s"
