#!/bin/sh
# s49_call3.sh (session 49): where the single split's gates are loaded (the tree: after the q
# preparation, before the tiles; build/alt_glimmer.xz, the previous commit: before the q
# preparation; build/old_glimmer.xz: 8522bed, after the tiles), 4 alternating rounds, then the
# three timelines on this machine, and the tree's under GLIM_CUDA_DIAG_NOPE=1 (no RoPE: is the
# sliding layers' longer q preparation at context 0 RoPE's?). The forward test first (spec2_*
# hold the decode instance); without weight bytes, o_proj at two row blocks a chunk too
# (SPAN_TWO=15: its loop is compute-bound on an H200). Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz,
# build/alt_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
sh bench/gpu_tests.sh test_cuda_forward
echo "checks done at $(( $(date +%s) - t0 )) s"
D=GLIM_CUDA_DIAG_RING=4
sh bench/decode_ab.sh ${ROUNDS:-4} old alt new $D $D,GLIM_CUDA_SPAN_TWO=15 2>&1 | tail -5
tl() { # NAME BINARY [SETTING]: the timeline's decode and attention rows at ctx 0 and 4k
    env $3 timeout 100 build/$2 bench --synthetic --timeline --prompt 0 --out $OUT/tl_$1.md > /dev/null 2>&1
    echo "$1:"; grep -E "^\| (decode|attention)" $OUT/tl_$1.md | head -6 | cut -d'|' -f1-4,10-11
}
tl old old_glimmer; tl alt alt_glimmer; tl new glimmer; tl nope glimmer GLIM_CUDA_DIAG_NOPE=1
echo "call took $(( $(date +%s) - t0 )) s"
