#!/bin/sh
# s19_call3.sh (session 19): GLIM_CUDA_DIAG_RING 3 (owners cut to the mean share: what the row
# blocks' granularity costs) and 4 (no weight bytes: the loops' compute ceiling), 2 again with
# the owner's warps (down's owner is a cluster of 2), against the default, alternating processes.
cd "$(dirname "$0")/../.." || exit 1
D=GLIM_CUDA_DIAG_RING
sh bench/ab_decode.sh new new,$D=3 new,$D=4 new new,$D=3 new,$D=4 new,$D=2 new,$D=1 new,GLIM_CUDA_DIAG_WINDOW=4
grep -E "^\| (gate/up|down|qkvg|o_proj|head|attention) " $OUT/e.md | awk -F'|' 'NR%21<8 {print $2, $3, $4, $7, $10}' | head -70
