#!/bin/sh
# (Record of the call that ran. att_poll.patch as it ran here is at d49da17; call 3's form landed in 12b37c2.)
# s51_call2.sh (session 51, on whichever card comes): decode attention's SPEC 3
# (bench/wip/att_poll.patch: the splits' partials as their own arrival flags, no fence and no
# counters before the merge; GLIM_CUDA_ATT_SPEC=3, written this session, never run) and the
# attention plan re-swept at 4k keys, where the token loses ~3 points of the floor against ctx 0
# (v53). On an H200 first the figures of record owed since session 37 (bench of record with its
# timeline, the no-bytes run, and main's GPU tests). Then, on any card: an A/B of main (new)
# against 8522bed (old) and main + the patch (alt, which runs main's defaults unless
# GLIM_CUDA_ATT_SPEC=3 is set) over ROUNDS rounds (default 3) with the attention variants (and, on
# an H200, the switches set on H100s); the per-launch attention timeline of SPEC 2 and 3 at 4k;
# then the patch applied here with its objects built on the CPU machine (build/poll_objs.tar.xz),
# relinked, its forward test (att_poll_bits: SPEC 3 against 2 bit for bit, plus the whole forward
# test) and compute-sanitizer over att_poll_bits. Carry .deps, build/cuda_objs.tar.xz,
# build/old_glimmer.xz (8522bed), build/alt_glimmer.xz (main + patch), build/poll_objs.tar.xz.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
h200=0
case "$gpu" in *H200*) h200=1 ;; esac
if [ $h200 = 1 ]; then
    timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
    GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
    grep -E "^\| decode" $OUT/tl_nobytes.md
    sh bench/gpu_tests.sh
    cp $OUT/checks.log $OUT/checks_main.log
    SW="GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_SPAN_AHEAD=15 GLIM_CUDA_SPAN_LATE=0 GLIM_CUDA_SPAN_TWO=13"
fi
echo "first part done at $(( $(date +%s) - t0 )) s"
A=GLIM_CUDA_ATT
sh bench/decode_ab.sh ${ROUNDS:-3} old new alt alt,${A}_SPEC=3 ${A}_GROUP=4096 ${A}_GROUP_HALF=2048 \
    ${A}_PMERGE=8 ${A}_CHUNK=128 $SW 2>&1 | tail -12
echo "A/B done at $(( $(date +%s) - t0 )) s"
for v in "glimmer 2" "alt_glimmer 2" "alt_glimmer 3"; do
    set -- $v
    GLIM_CUDA_ATT_SPEC=$2 timeout 60 build/$1 bench --synthetic --timeline --prompt 0 --out $OUT/tl_$1_spec$2.md > /dev/null 2>&1
    echo "$1 SPEC $2:"; grep -E "^\| (decode|attention)" $OUT/tl_$1_spec$2.md | cut -d'|' -f1-4,10-12
done
patch -p1 < bench/wip/att_poll.patch > /dev/null || { echo "patch failed"; exit 1; }
xz -dc build/poll_objs.tar.xz | tar -xf - && touch build/src/cuda/*.o
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" > $OUT/build_alt.log 2>&1 || { tail -5 $OUT/build_alt.log; exit 1; }
grep -c nvcc $OUT/build_alt.log | sed 's/^/nvcc lines in the patched relink (want 0): /'
sh bench/gpu_tests.sh test_cuda_forward
grep -E "poll|FAIL" $OUT/checks.log | head -20
for tool in memcheck racecheck; do
    CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 \
        build/tests/test_cuda_forward > $OUT/san_poll_$tool.log 2>&1
    echo "compute-sanitizer $tool over att_poll_bits: rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_poll_$tool.log | tail -1); $(grep -cE '^PASS' $OUT/san_poll_$tool.log) pass)"
done
echo "call took $(( $(date +%s) - t0 )) s"
