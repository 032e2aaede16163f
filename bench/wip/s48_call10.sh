#!/bin/sh
# s48_call10.sh (session 48): the tree to land after call 7, with the tensor copies taken out
# again (bench/wip/span_tmap.patch): its SPEC instance's SASS is what ptxas made for the refill
# reordered and the kept barrier address without them. The forward and hooks tests,
# compute-sanitizer, and ROUNDS (2) rounds against 972dcd0 (build/alt_glimmer.xz) with and
# without weight bytes. Carry .deps, build/cuda_objs.tar.xz, build/alt_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sh bench/gpu_tests.sh test_cuda_forward test_cuda_hooks
echo "tests done at $(( $(date +%s) - t0 )) s"
for tool in memcheck racecheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 build/glimmer run -m tests/vectors/mlx4_a \
        --backend cuda --tokens 0,5,7 -n 4 --temp 0 --ignore-eos > $OUT/san_$tool.log 2>&1
    echo "compute-sanitizer $tool: rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1))"
done
D=GLIM_CUDA_DIAG_RING=4
sh bench/decode_ab.sh ${ROUNDS:-2} alt new alt,$D $D 2>&1 | tail -4
echo "all took $(( $(date +%s) - t0 )) s"
