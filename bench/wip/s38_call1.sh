#!/bin/sh
# s38_call1.sh: the L2 prefetch of gate/up's row blocks by qkvg (GLIM_CUDA_L2PF_GU=N: every N-th
# row block) and by o_proj (GLIM_CUDA_L2PF_GU_O=M), and of the next qkvg by down (GLIM_CUDA_L2PF_Q),
# against the default, 2 alternating rounds; then the timeline of the default and of the best
# guess; `old` is ff077e5 (session 37's end; carry build/old_glimmer.xz too). GLIM_CUDA_SPAN_ROW0=1 with TWO=13 (gate/up on two row blocks a chunk too), with and
# without weight bytes. Here first: make -j2 all. Carry .deps, build/src/cuda.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -c "import torch; p=torch.cuda.get_device_properties(0); print('L2 bytes', p.L2_cache_size)" 2>&1 | tail -1
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=l2pf_bits,span_chunk_bits GLIM_REQUIRE_CUDA=1 timeout 120 build/tests/test_cuda_forward 2>&1 | tail -4
sh bench/decode_ab.sh 2 new old GLIM_CUDA_L2PF_GU=8 GLIM_CUDA_L2PF_GU=5 GLIM_CUDA_L2PF_GU=3 \
    GLIM_CUDA_L2PF_GU=5,GLIM_CUDA_L2PF_AT=1 GLIM_CUDA_L2PF_GU_O=6 \
    GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_L2PF_GU=5,GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_DIAG_RING=4 GLIM_CUDA_DIAG_RING=4,GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13
for v in default GLIM_CUDA_L2PF_GU=5 GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13; do
    n=$(echo "$v" | tr -c 'A-Za-z0-9\n' _)
    env $(echo "$v" | sed 's/^default$//' | tr ',' ' ') timeout 200 build/glimmer bench --synthetic --timeline \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "== $v"; grep -E "^\| (decode|qkvg|attention|o_proj|gate|down)" $OUT/tl_$n.md | head -9
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
