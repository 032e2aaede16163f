#!/bin/sh
# (Record of the call that ran. The patch landed in 5315a88; its file is at 1182ccd.)
# s50_call1.sh (session 50's first call, on whichever card comes; the figures of record only
# where it is an H200): main's bench of record with its timeline and without weight bytes; an
# A/B of main (new) against 8522bed (old) and against main with bench/wip/att_done_early.patch
# (alt), with the switches set on H100s for regimes an H200 may not share; then the patched
# tree's checks: the per-launch timelines of both binaries, the patch applied here with its
# attention object built on the CPU machine (build/attn_early.o), the forward test and the quick
# sanitizer. Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz (8522bed),
# build/alt_glimmer.xz (main + patch), build/attn_early.o.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
grep -E "^\| decode" $OUT/tl_nobytes.md
D=GLIM_CUDA_DIAG_RING=4
# (EXTRA: more variants, e.g. "GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_SPAN_AHEAD=15 GLIM_CUDA_SPAN_LATE=0")
sh bench/decode_ab.sh ${ROUNDS:-3} old new alt GLIM_CUDA_SPAN_TWO=13 GLIM_CUDA_SPAN_TWO=15 $EXTRA old,$D $D 2>&1 | tail -11
echo "A/B done at $(( $(date +%s) - t0 )) s"
for b in glimmer alt_glimmer; do
    timeout 60 build/$b bench --synthetic --timeline --prompt 0 --out $OUT/tl_$b.md > /dev/null 2>&1
    echo "$b:"; grep -E "^\| (decode|attention)" $OUT/tl_$b.md | cut -d'|' -f1-4,10-11
done
patch -p1 < bench/wip/att_done_early.patch > /dev/null || { echo "patch failed"; exit 1; }
cp build/attn_early.o build/src/cuda/attention.o && touch build/src/cuda/attention.o
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" > $OUT/build_alt.log 2>&1 || { tail -5 $OUT/build_alt.log; exit 1; }
grep -c nvcc $OUT/build_alt.log | sed 's/^/nvcc lines in the patched relink (want 0): /'
sh bench/gpu_tests.sh test_cuda_forward
sh bench/san_quick.sh
echo "call took $(( $(date +%s) - t0 )) s"
