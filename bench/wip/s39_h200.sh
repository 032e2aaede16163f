#!/bin/sh
# s39_h200.sh (prepared in session 38 for the next one; not run): the H200 call sessions 37-38
# could not get again. On an H200: the L2 prefetch's size there (GLIM_CUDA_L2PF_GU_O: 0 off, 3, 4
# the default, 6), the span kernel's row at offset 0 with two row blocks a chunk for qkvg, gate/up
# and down (GLIM_CUDA_SPAN_ROW0=1 GLIM_CUDA_SPAN_TWO=13, +4.9 % without weight bytes on an H100)
# alone and with TWO=9, gate/up's own prefetch before its wait during o_proj's compute-bound loop
# (GLIM_CUDA_L2PF_GU_SELF=4, 8; l2pf_bits covers it but has not run on a GPU yet), 3 alternating
# rounds; then the bench of record with its timeline and the
# same without weight bytes. Session 39 added the prefetch's delay (GLIM_CUDA_L2PF_DELAY, SM
# cycles: attention's loads first). Here first: make -j2 all. Carry .deps,
# build/src/cuda (~3 min).
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
# on an H100 it runs the same list (GU_SELF has never run on a GPU)
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
R=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
CHECK_ONLY=l2pf_bits GLIM_REQUIRE_CUDA=1 timeout 150 build/tests/test_cuda_forward 2>&1 | tail -3
sh bench/decode_ab.sh 3 new GLIM_CUDA_L2PF_GU_O=0 GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_L2PF_GU_O=6 $R \
    GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_L2PF_GU_SELF=4 GLIM_CUDA_L2PF_GU_SELF=8 \
    GLIM_CUDA_L2PF_DELAY=2000 GLIM_CUDA_L2PF_DELAY=4000 GLIM_CUDA_L2PF_DELAY=7000 \
    GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,$R
timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
GLIM_CUDA_DIAG_RING=4 timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/nobytes.md > /dev/null 2>&1
for v in GLIM_CUDA_L2PF_DELAY=4000 GLIM_CUDA_L2PF_GU_O=0; do
    env $v timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 -n 32 --out $OUT/tl_$v.md > /dev/null 2>&1
done
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md $OUT/nobytes.md
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
