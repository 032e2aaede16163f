#!/bin/sh
# s43_call2.sh (git apply bench/wip/span_split.patch and build first): GLIM_CUDA_SPAN_SPLIT (the
# span kernel's row blocks owned by clusters of 2 or 4 blocks, each block a share of the spans,
# the sums merged through distributed shared memory).
# Its kernel test (decode_matvec_split) and forward test (span_split) first; then 3 alternating
# rounds of the default, SPLIT=11 (qkvg, o_proj, down) on clusters of 2 and 4, and the same
# without weight bytes (GLIM_CUDA_DIAG_RING=4: the compute-bound regime of an H200's loops, which
# an H100 shows too); on an H200 also ROW0 + TWO=13 + AHEAD=15 with and without SPLIT=11;
# timelines at ctx 0 (the loops of qkvg, o_proj, down); memcheck of span_split last. `old`:
# main without the patch (scripts/old_binary.sh on main's commit), what its code in the default
# instance costs. Carry .deps, build/src/cuda, build/old_glimmer.xz. ~250 s plus the start;
# LEAN=1: the tests and 2 rounds, no timelines or memcheck; LEAN=2 (~150 s): the tests and 2
# rounds of old, new, SPLIT=11 with and without weight bytes only.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
CHECK_ONLY=decode_matvec_split GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_kernels > $OUT/split_kernels.log 2>&1
echo "kernels rc=$? $(grep -c '^PASS' $OUT/split_kernels.log) pass $(grep -c '^FAIL' $OUT/split_kernels.log) fail"
CHECK_ONLY=span_split GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward > $OUT/split_forward.log 2>&1
echo "forward rc=$? $(grep -c '^PASS' $OUT/split_forward.log) pass $(grep -c '^FAIL' $OUT/split_forward.log) fail"
grep -hE "check failed|info: span_split" $OUT/split_kernels.log $OUT/split_forward.log | cut -c1-220 | head -30
grep -q '^FAIL' $OUT/split_kernels.log $OUT/split_forward.log && exit 1
R=3
[ -n "$LEAN" ] && R=2
S=GLIM_CUDA_SPAN_SPLIT=11 S4=GLIM_CUDA_SPAN_SPLIT=11,GLIM_CUDA_SPAN_SPLIT_N=4 N=GLIM_CUDA_DIAG_RING=4
if [ "$LEAN" = 2 ]; then
    sh bench/decode_ab.sh 2 old new $S $N $S,$N
    cp $OUT/ab.md $OUT/ab_s43_call2.md
    exit 0
elif nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    T=GLIM_CUDA_SPAN_ROW0=1,GLIM_CUDA_SPAN_TWO=13,GLIM_CUDA_SPAN_AHEAD=15
    sh bench/decode_ab.sh $R old new $S $S4 $T $T,$S $N $S,$N $S4,$N
else
    sh bench/decode_ab.sh $R old new $S $S4 $N $S,$N $S4,$N
fi
cp $OUT/ab.md $OUT/ab_s43_call2.md
[ -n "$LEAN" ] && exit 0
for v in default $S $N $S,$N; do
    n=$(echo "$v" | tr '=,' '__' | cut -c1-80)
    env $( [ "$v" = default ] || echo "$v" | tr ',' ' ') timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 \
        --out $OUT/tl_$n.md > /dev/null 2>&1
    echo "$v: $(grep -E '^\| (decode|qkvg|o_proj|gate/up|down) ' $OUT/tl_$n.md | head -5 | awk -F"|" "{printf \"%s %s %s %s;\", \$2, \$3, \$4, \$11}")"
done
CHECK_ONLY=span_split GLIM_REQUIRE_CUDA=1 timeout 150 compute-sanitizer --tool memcheck build/tests/test_cuda_forward \
    > $OUT/split_memcheck.log 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $OUT/split_memcheck.log | tail -1)"
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
