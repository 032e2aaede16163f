#!/bin/sh
# s52_call1.sh (written in session 51 for the next call, on whichever card comes): SPEC 3 (main's
# default since 12b37c2) against its 72-split form (bench/wip/att_poll72.patch: 9 loads a
# thread, so that a full layer at 4k + 1..128 keys keeps at_plan's 65-66 splits instead of 33 of
# two tiles; session 51's call 3 saw a full layer 11.87 -> 12.20 us at 4k and 34.53 -> 36.73 at
# 32k from that). On an H200 first the figures of record owed since session 37 (bench with its
# timeline, no-bytes, main's GPU tests). Then main's binary is kept as the third binary (alt),
# the patch applied with its attention object built on the CPU machine (build/attn_poll72.o)
# and relinked; an A/B of the patched tree (new) against main (alt) and against SPEC 2 on the
# patched binary, ROUNDS rounds (default 3); both SPECs' timelines; the forward test and memcheck
# over att_poll_bits on the patched tree. Before the call, here: make -j2 all &&
# scripts/pack_cuda_objects.sh, and attention.o of main + the patch as build/attn_poll72.o
# (e.g. a worktree with the patch applied: make build/src/cuda/attention.o). Carry .deps,
# build/cuda_objs.tar.xz, build/attn_poll72.o.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
case "$gpu" in
*H200*)
    timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
    GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
    grep -E "^\| decode" $OUT/tl_nobytes.md
    sh bench/gpu_tests.sh
    mv $OUT/checks.log $OUT/checks_main.log ;;
esac
xz -T0 -1 -c build/glimmer > build/alt_glimmer.xz
patch -p1 < bench/wip/att_poll72.patch > /dev/null || { echo "patch failed"; exit 1; }
cp build/attn_poll72.o build/src/cuda/attention.o && touch build/src/cuda/attention.o
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" > $OUT/build_alt.log 2>&1 || { tail -5 $OUT/build_alt.log; exit 1; }
grep -c nvcc $OUT/build_alt.log | sed 's/^/nvcc lines in the patched relink (want 0): /'
sh bench/decode_ab.sh ${ROUNDS:-3} new alt GLIM_CUDA_ATT_SPEC=2 2>&1 | tail -3
echo "A/B done at $(( $(date +%s) - t0 )) s"
mkdir -p $OUT/tl
for sp in 2 3; do
    GLIM_CUDA_ATT_SPEC=$sp timeout 60 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl/spec$sp.md > /dev/null 2>&1
    echo "SPEC $sp:"; grep -E "^\| (decode|attention)" $OUT/tl/spec$sp.md | cut -d'|' -f1-4,6,10-12
done
sh bench/gpu_tests.sh test_cuda_forward
grep -E "poll|FAIL" $OUT/checks.log | head -10
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/tests/test_cuda_forward > $OUT/san_poll_memcheck.log 2>&1
echo "compute-sanitizer memcheck over att_poll_bits: rc=$? ($(grep -E 'ERROR SUMMARY' $OUT/san_poll_memcheck.log | tail -1); $(grep -cE '^PASS' $OUT/san_poll_memcheck.log) pass)"
echo "call took $(( $(date +%s) - t0 )) s"
