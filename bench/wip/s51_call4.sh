#!/bin/sh
# s51_call4.sh (session 51, on whichever card comes): SPEC 3 with 9 loads a thread (72 splits,
# bench/wip/att_poll.patch as of this call). Call 3 found the 64-split form's clamp moved a full
# layer at 4k + 1..128 keys (the bench's 4k and 32k positions) to splits of two tiles. The
# patched tree only: built from build/poll_objs.tar.xz (no main objects carried), then SPEC 2
# (new, its default) against SPEC 3 on that one binary over ROUNDS rounds (default 3), both
# timelines, the forward test with SPEC 3 where a test does not set it, and memcheck over
# att_poll_bits. Carry .deps and build/poll_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
t0=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu"
patch -p1 < bench/wip/att_poll.patch > /dev/null || { echo "patch failed"; exit 1; }
mkdir -p build/src/cuda && xz -dc build/poll_objs.tar.xz | tar -xf - && rm -f build/src/cuda/*.d && touch build/src/cuda/*.o
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" > $OUT/build.log 2>&1 || { tail -5 $OUT/build.log; exit 1; }
grep -c nvcc $OUT/build.log | sed 's/^/nvcc lines (want 0): /'
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sh bench/decode_ab.sh ${ROUNDS:-3} new GLIM_CUDA_ATT_SPEC=3 2>&1 | tail -2
echo "A/B done at $(( $(date +%s) - t0 )) s"
mkdir -p $OUT/tl
for sp in 2 3; do
    GLIM_CUDA_ATT_SPEC=$sp timeout 60 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl/spec$sp.md > /dev/null 2>&1
    echo "SPEC $sp:"; grep -E "^\| (decode|attention)" $OUT/tl/spec$sp.md | cut -d'|' -f1-4,6,10-12
done
GLIM_CUDA_ATT_SPEC=3 sh bench/gpu_tests.sh test_cuda_forward
grep -E "poll|FAIL" $OUT/checks.log | head -10
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/tests/test_cuda_forward > $OUT/san_poll_memcheck.log 2>&1
echo "compute-sanitizer memcheck over att_poll_bits: rc=$? ($(grep -E 'ERROR SUMMARY' $OUT/san_poll_memcheck.log | tail -1); $(grep -cE '^PASS' $OUT/san_poll_memcheck.log) pass)"
echo "call took $(( $(date +%s) - t0 )) s"
