#!/bin/sh
# s38_call4.sh: the final tree (o_proj's L2 prefetch of every 5th gate/up row block before its
# PDL wait and attention's trigger at its start, the defaults now) against ff077e5 (session 37's
# end, `old`), with the controls on this tree: the trigger alone (L2PF_GU_O=0), session 37's path
# (L2PF_GU_O=0, ATT_TRIG=2), and the prefetch's size (4, 8); 3 alternating rounds. Then the bench
# of record with its timeline, then the GPU tests. Here first: make -j2 all,
# scripts/old_binary.sh ff077e5. Carry .deps, build/src/cuda, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/decode_ab.sh 3 new old GLIM_CUDA_L2PF_GU_O=0 GLIM_CUDA_L2PF_GU_O=0,GLIM_CUDA_ATT_TRIG=2 \
    GLIM_CUDA_L2PF_GU_O=4 GLIM_CUDA_L2PF_GU_O=8
timeout 120 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
grep -E "^\| (qkvg|attention|o_proj|gate|down)" $OUT/bench.md | head -6
timeout 240 sh bench/gpu_tests.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
