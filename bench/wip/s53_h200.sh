#!/bin/sh
# s53_h200.sh (session 53): the H200 figures owed since session 37 (RESULTS v39), at b0a2105
# (GLIM_CUDA_ATT_WIDE_KEYS=12000); nothing on another card (it exits at once). On an H200: the
# bench of record with its timeline and the no-bytes run (bench/h200_record.sh), 3 alternating
# rounds of the default against o_proj at one row block a chunk (SPAN_TWO=13, the H100's default)
# and against WIDE_KEYS=0, then the forward test. Carry .deps, build/cuda_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$name" in *H200*) ;; *) echo "$name: not an H200, nothing run"; exit 0 ;; esac
. bench/call_setup.sh
. bench/h200_record.sh
echo "benches done at $(( $(date +%s) - t0 )) s"
sh bench/decode_ab.sh ${ROUNDS:-3} new GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_ATT_WIDE_KEYS=0 2>&1 | tail -3
echo "A/B done at $(( $(date +%s) - t0 )) s"
sh bench/gpu_tests.sh test_cuda_forward
echo "call took $(( $(date +%s) - t0 )) s"
