#!/bin/sh
# s55_call1.sh (session 55): s54_call1.sh's H200 branch behind bench/h200_only.sh (an H100 lent
# for the H200 request costs only its start), with one more variant in its sweep: qkvg's blocks
# prefetching every 6th of gate/up's row blocks at their end (GLIM_CUDA_L2PF_GU=6: +1.2-1.6 % at
# ctx 0 on an H100 in session 38, but attention's wait 3.3 us later there; on an H200 qkvg's loop
# is compute-bound, so the memory is free under it). Carry .deps, build/cuda_objs.tar.xz,
# build/old_glimmer.xz (scripts/old_binary.sh d84ec4a).
cd "$(dirname "$0")/../.." || exit 1
. bench/h200_only.sh
MORE=GLIM_CUDA_L2PF_GU=6 exec sh bench/wip/s54_call1.sh
