#!/bin/sh
# s38_call2.sh: call 1 found qkvg's prefetch at its end (GLIM_CUDA_L2PF_GU) shortening gate/up's
# loop 49.9 -> 46.0 us but holding attention's PDL wait back 3.3 us (a grid completes once its
# bulk prefetches are done). Here o_proj's blocks prefetch gate/up's row blocks before their PDL
# wait (GLIM_CUDA_L2PF_GU_O=M, GLIM_CUDA_L2PF_AT=2), during attention's last microseconds, with
# attention's trigger at its start too (GLIM_CUDA_ATT_TRIG=1); and with GLIM_CUDA_SPAN_ROW0=1
# GLIM_CUDA_SPAN_TWO=13. 2 alternating rounds; on an H200 the no-bytes pair as well.
# Here first: make -j2 all. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=l2pf_bits GLIM_REQUIRE_CUDA=1 timeout 120 build/tests/test_cuda_forward 2>&1 | tail -2
nb=""
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 &&
    nb="GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13"
R2=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
sh bench/decode_ab.sh 2 new GLIM_CUDA_L2PF_GU=8 GLIM_CUDA_L2PF_GU_O=8,GLIM_CUDA_L2PF_AT=2 \
    GLIM_CUDA_L2PF_GU_O=5,GLIM_CUDA_L2PF_AT=2 GLIM_CUDA_L2PF_GU_O=5,GLIM_CUDA_L2PF_AT=2,GLIM_CUDA_ATT_TRIG=1 \
    GLIM_CUDA_L2PF_GU_O=3,GLIM_CUDA_L2PF_AT=2 $R2 GLIM_CUDA_L2PF_GU_O=5,GLIM_CUDA_L2PF_AT=2,$R2 \
    GLIM_CUDA_L2PF_GU=8,$R2 $nb
for v in GLIM_CUDA_L2PF_GU_O=5,GLIM_CUDA_L2PF_AT=2 GLIM_CUDA_L2PF_GU_O=5,GLIM_CUDA_L2PF_AT=2,$R2; do
    n=$(echo "$v" | tr -c 'A-Za-z0-9\n' _)
    env $(echo "$v" | tr ',' ' ') timeout 200 build/glimmer bench --synthetic --timeline --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "== $v"; grep -E "^\| (decode|qkvg|attention|o_proj|gate|down)" $OUT/tl_$n.md | head -7
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
