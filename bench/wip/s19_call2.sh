#!/bin/sh
# s19_call2.sh (session 19): does the decode's address pattern cost bandwidth? GLIM_CUDA_DIAG_RING
# (timing only: 1 = chunks dealt over the grid's warps, 2 = over each block's warps) against the
# default, alternating processes, with the ring's shapes that bigger copies would use.
cd "$(dirname "$0")/../.." || exit 1
D=GLIM_CUDA_DIAG_RING
sh bench/ab_decode.sh new new,$D=1 new,$D=2 new new,$D=1 \
  new,GLIM_CUDA_TMA_CHUNK=4,GLIM_CUDA_TMA_SLOTS=1 new,$D=1,GLIM_CUDA_TMA_CHUNK=4,GLIM_CUDA_TMA_SLOTS=1 \
  new,GLIM_CUDA_TMA_SLOTS=4 new,$D=1,GLIM_CUDA_TMA_SLOTS=4 new,$D=1,GLIM_CUDA_TMA_CHUNK=8,GLIM_CUDA_TMA_SLOTS=1 \
  new,GLIM_CUDA_DIAG_WINDOW=4 new,$D=1
grep -E "^\| (gate/up|down|qkvg|o_proj|head) " $OUT/e.md | awk -F'|' '{print $2, $3, $10}' | paste - - - - - 
