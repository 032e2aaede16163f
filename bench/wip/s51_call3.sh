#!/bin/sh
# (Record of the call that ran. att_poll.patch as it ran here is at 52026f4; call 3's form landed in 12b37c2.)
# s51_call3.sh (session 51, on whichever card comes): SPEC 3 as revised after call 2
# (bench/wip/att_poll.patch: the mergers poll the splits' maxima and sums alone until at most 4
# splits are out, then whole partials; call 2's SPEC 3 polled whole partials from the start and
# slowed the other splits' tiles, a full layer at 32k keys 33.8 -> 35.0 us). An A/B of main (new),
# main + patch (alt: SPEC 2 by default) and alt with GLIM_CUDA_ATT_SPEC=3 over ROUNDS rounds
# (default 4); the per-launch timelines of alt under SPEC 2 and 3; then the patched tree relinked
# from build/poll_objs.tar.xz, the three GPU test programs with GLIM_CUDA_ATT_SPEC=3 and
# compute-sanitizer memcheck over att_poll_bits (SAN_TOOLS; racecheck over it ran out 200 s in
# call 2, and bench/san_quick.sh's fixture has heads the decode instance does not serve). On an H200 first the bench of record and the no-bytes run. Carry .deps,
# build/cuda_objs.tar.xz, build/alt_glimmer.xz (main + patch), build/poll_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
case "$gpu" in
*H200*)
    timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
    GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
    grep -E "^\| decode" $OUT/tl_nobytes.md ;;
esac
sh bench/decode_ab.sh ${ROUNDS:-4} new alt alt,GLIM_CUDA_ATT_SPEC=3 2>&1 | tail -3
echo "A/B done at $(( $(date +%s) - t0 )) s"
mkdir -p $OUT/tl
for sp in 2 3; do
    GLIM_CUDA_ATT_SPEC=$sp timeout 60 build/alt_glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl/alt_spec$sp.md > /dev/null 2>&1
    echo "alt SPEC $sp:"; grep -E "^\| (decode|attention)" $OUT/tl/alt_spec$sp.md | cut -d'|' -f1-4,10-12
done
patch -p1 < bench/wip/att_poll.patch > /dev/null || { echo "patch failed"; exit 1; }
xz -dc build/poll_objs.tar.xz | tar -xf - && touch build/src/cuda/*.o
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" > $OUT/build_alt.log 2>&1 || { tail -5 $OUT/build_alt.log; exit 1; }
grep -c nvcc $OUT/build_alt.log | sed 's/^/nvcc lines in the patched relink (want 0): /'
# all three GPU test programs with SPEC 3 where a test does not set it (the evidence for a default)
GLIM_CUDA_ATT_SPEC=3 sh bench/gpu_tests.sh
grep -E "poll|FAIL" $OUT/checks.log | head -20
for tool in ${SAN_TOOLS:-memcheck}; do
    CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout ${SAN_S:-90} compute-sanitizer --tool $tool --error-exitcode 9 \
        build/tests/test_cuda_forward > $OUT/san_poll_$tool.log 2>&1
    echo "compute-sanitizer $tool over att_poll_bits: rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_poll_$tool.log | tail -1); $(grep -cE '^PASS' $OUT/san_poll_$tool.log) pass)"
done
echo "call took $(( $(date +%s) - t0 )) s"
