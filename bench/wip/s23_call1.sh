#!/bin/sh
# s23_call1.sh (session 23): the gpu_check suite's tests under the span kernel as the default (the
# three tests pinned to GLIM_CUDA_SPAN=0, the embedding in h2, dmv_plan's in-place guard), then
# the span kernel against k_dmv_tma twice (ITEMS=min) on whatever card came. Carry .deps and
# build/src/cuda (built here with `make -j2 all`); timeout_s 600.
cd "$(dirname "$0")/../.." || exit 1
t0=$(date +%s)
OUT=$OUT/check sh bench/gpu_check.sh tests 2>&1 | tail -40
echo "check took $(($(date +%s) - t0)) s"
ITEMS=${ITEMS:-min} sh bench/wip/s22_call1.sh 2>&1 | tail -40
