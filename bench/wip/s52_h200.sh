#!/bin/sh
# s52_h200.sh (session 52): the H200 figures owed since session 37 (RESULTS v39), and nothing on
# another card (it exits at once, to spend as little of the budget as an H100 start costs). On
# an H200: main's bench of record with its timeline, the no-bytes run, main's three GPU test
# programs, then 3 alternating rounds of main against o_proj at one row block a chunk
# (SPAN_TWO=13, the H100's default; 15 is the H200's, set by emulation on an H100 in session 49).
# Carry .deps, build/cuda_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$name" in *H200*) ;; *) echo "$name: not an H200, nothing run"; exit 0 ;; esac
. bench/call_setup.sh
. bench/h200_record.sh
echo "benches done at $(( $(date +%s) - t0 )) s"
sh bench/gpu_tests.sh
sh bench/decode_ab.sh ${ROUNDS:-3} new GLIM_CUDA_SPAN_TWO=13 2>&1 | tail -2
echo "call took $(( $(date +%s) - t0 )) s"
