#!/bin/sh
# gpu_check.sh: everything the CUDA backend needs checked on a GPU machine, in one call:
# build (with the carried -dev packages), the GPU tests (GLIM_REQUIRE_CUDA=1), compute-sanitizer
# (memcheck, racecheck, synccheck) on a decode of a few tokens, and `glimmer bench --synthetic`.
# Logs go to $OUT (default ./gpu_check_out): build.log, tests.log, sanitizer.log, bench.md,
# summary.txt, ncu.txt. Usage: bench/gpu_check.sh [STEP...]
# steps: tests sanitize quick bench variants profile timeline attenv ncu (default: tests
# sanitize bench variants profile; quick = a 2-layer bench; timeline = bench --timeline;
# attenv = decode again under each of ATT_ENVS (attention's switches by default; any settings,
# several in one item joined by commas, with ENV_FLAGS added to each bench, e.g. "--timeline -n 32"); ncu = Nsight
# Compute on a few matvec launches). The build
# always runs. SAN_TOOLS (default "memcheck racecheck synccheck") and SAN_T (seconds per tool,
# default 70) bound the sanitizer step. TEST_PART=k/n (e.g. 1/3) runs only every n-th of the
# tests step's runs from the k-th (the three test binaries, then the forward test under each
# setting: ~30 s each, ~20 minutes in all, more than one device call), so that n calls cover it.
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
S="$OUT/summary.txt"
: >"$S"
say() { echo "$*" | tee -a "$S"; }
nvidia-smi -L 2>&1 | tee -a "$S"
say "nvcc: $(nvcc --version 2>/dev/null | tail -1)"

t0=$(date +%s)
# the Makefile tracks headers through nvcc -MD, but a carried or stale build must not be trusted;
# KEEP_BUILD=1 (a second call in the same run) keeps the objects just built
[ "${KEEP_BUILD:-0}" = 1 ] || rm -f build/src/cuda/*.o
if ! scripts/device_build.sh >"$OUT/build.log" 2>&1; then
    say "BUILD FAILED (tail of build.log follows)"
    tail -30 "$OUT/build.log" | tee -a "$S"
    exit 1
fi
say "build ok ($(($(date +%s) - t0)) s)"

STEPS=${*:-tests sanitize bench variants profile}
# the decode path's off-default switches at once (tests and memcheck run them too)
OFF_DEFAULTS="GLIM_CUDA_SPAN=0 GLIM_CUDA_LATE_NORM=0 GLIM_CUDA_BLOCK_ROWS=0 GLIM_CUDA_DEFER_MERGE=0 GLIM_CUDA_TMA=0 GLIM_CUDA_LATE_RING=1 GLIM_CUDA_PF=8 GLIM_CUDA_ATT_TRIG=0 GLIM_CUDA_I8=0 GLIM_CUDA_ATT_MMA=0 GLIM_CUDA_ATT_PMERGE=0 GLIM_CUDA_ATT_PACK=0 GLIM_CUDA_ATT_LEAN=0 GLIM_CUDA_ATT_SPEC=0 GLIM_CUDA_UNIT_AHEAD=0"
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

t0=$(date +%s)
if has tests; then
: >"$OUT/tests.log"
# TEST_PART=k/n: run number i (from 1) runs where i % n == k % n
part_k=${TEST_PART%/*} part_n=${TEST_PART#*/} run_i=0
[ -n "${TEST_PART:-}" ] || { part_k=0; part_n=1; }
mine() { run_i=$((run_i + 1)); [ $((run_i % part_n)) -eq $((part_k % part_n)) ]; }
for t in build/tests/test_cuda_kernels build/tests/test_cuda_forward build/tests/test_cuda_hooks; do
    mine || continue
    echo "== $t" >>"$OUT/tests.log"
    GLIM_REQUIRE_CUDA=1 timeout 240 "$t" >>"$OUT/tests.log" 2>&1
    echo "rc=$?" >>"$OUT/tests.log"
done
# the decode switches that are off by default get the forward test too (LATE_RING 1 and 2 on the
# shared-memory ring: before session 14 only chain_bits under OFF_DEFAULTS ran ring_at 1 there)
for v in GLIM_CUDA_TMA=0 GLIM_CUDA_I8=0 GLIM_CUDA_SPAN=0 "GLIM_CUDA_SPAN=0 GLIM_CUDA_TMA_SLOTS=0 GLIM_CUDA_TMA_CHUNK=1" "GLIM_CUDA_SPAN=0 GLIM_CUDA_LATE_RING=0" "GLIM_CUDA_SPAN=0 GLIM_CUDA_LATE_RING=1" "GLIM_CUDA_SPAN=0 GLIM_CUDA_LATE_RING=2" "GLIM_CUDA_SPAN=0 GLIM_CUDA_BLOCK_ROWS=0" "GLIM_CUDA_SPAN=0 GLIM_CUDA_BLOCK_ROWS=0 GLIM_CUDA_DEFER_MERGE=0" GLIM_CUDA_STAGE_I8=1 "GLIM_CUDA_SPAN=0 GLIM_CUDA_CLUSTER=1" GLIM_CUDA_CHAIN=1 GLIM_CUDA_ATT_FEW=1 "GLIM_CUDA_I8=1 GLIM_CUDA_DYN=1" GLIM_CUDA_ATT_MMA=0 "GLIM_CUDA_SPAN=0 GLIM_CUDA_TMA_SLOTS_O=8 GLIM_CUDA_TMA_SLOTS_QKVG=4" "GLIM_CUDA_SPAN=0 GLIM_CUDA_CLUSTER_ROWS=0" "GLIM_CUDA_SPAN=0 GLIM_CUDA_CLUSTER_PRODUCTS=11 GLIM_CUDA_CLUSTER_OWN_STAGE=3" "GLIM_CUDA_SPAN=0 GLIM_CUDA_CLUSTER_PRODUCTS=11" GLIM_CUDA_FLAG_WAIT=1 "GLIM_CUDA_SPAN=0 GLIM_CUDA_UNIT_AHEAD=1" GLIM_CUDA_ATT_WARM=1 GLIM_CUDA_SPAN_ACC=0 GLIM_CUDA_SPAN_SPEC=0 GLIM_CUDA_SPAN_SPEC=1 GLIM_CUDA_SPAN_SPEC=2 GLIM_CUDA_SPAN_SPEC=3 GLIM_CUDA_SPAN_ROWS=4 "GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_LATE=6" GLIM_CUDA_SPAN_LATE=0 GLIM_CUDA_SPAN_EVEN=0 "GLIM_CUDA_SPAN_BLOCKS_DOWN=84 GLIM_CUDA_SPAN_BLOCKS_GU=111" GLIM_CUDA_LATE_NORM=0 GLIM_CUDA_FRONT_ROWS=0 "GLIM_CUDA_ATT_PMERGE=0 GLIM_CUDA_ATT_PACK=0 GLIM_CUDA_ATT_GROUP=8192" GLIM_CUDA_ATT_GROUP=0 GLIM_CUDA_ATT_GROUP_HALF=0 GLIM_CUDA_ATT_TRIG=1 GLIM_CUDA_ATT_TRIG=3 GLIM_CUDA_ATT_LEAN=0 GLIM_CUDA_ATT_SPEC=0 GLIM_CUDA_ATT_SPEC=2 "GLIM_CUDA_SPAN=0 GLIM_CUDA_UNIT_AHEAD=0" GLIM_CUDA_GEMM=1 GLIM_CUDA_GEMM=2 "$OFF_DEFAULTS"; do
    mine || continue
    echo "== build/tests/test_cuda_forward with $v" >>"$OUT/tests.log"
    env $v GLIM_REQUIRE_CUDA=1 timeout 240 build/tests/test_cuda_forward >>"$OUT/tests.log" 2>&1
    echo "rc=$?" >>"$OUT/tests.log"
done
say "tests: $(grep -c '^PASS' "$OUT/tests.log") passed, $(grep -c '^FAIL' "$OUT/tests.log") failed, $(grep -c '^SKIP' "$OUT/tests.log") skipped ($(($(date +%s) - t0)) s)"
grep -E '^(FAIL|SKIP)|check failed|info:' "$OUT/tests.log" | head -60 | tee -a "$S"
fi

t0=$(date +%s)
if has sanitize; then
: >"$OUT/sanitizer.log"
FIX=tests/vectors/mlx4_a
[ -d "$FIX" ] || FIX=tests/vectors/hf_a
# (the defaults: down's row blocks owned by its clusters of 2, partials read from the peer's
# shared memory)
for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
    echo "== compute-sanitizer --tool $tool: 3-token prompt + 4 decoded tokens on $FIX" >>"$OUT/sanitizer.log"
    F=0
    [ "$tool" = memcheck ] && F=1 # memcheck on the fused SwiGLU-staging decode path too
    GLIM_CUDA_FUSE=$F timeout ${SAN_T:-70} compute-sanitizer --tool "$tool" --error-exitcode 9 \
        build/glimmer run -m "$FIX" --backend cuda --tokens 0,5,7 -n 4 --temp 0 --ignore-eos \
        >>"$OUT/sanitizer.log" 2>&1
    rc=$?
    say "compute-sanitizer $tool ($FIX): rc=$rc ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log" | tail -1))"
done
echo "== memcheck with $OFF_DEFAULTS on $FIX" >>"$OUT/sanitizer.log"
env $OFF_DEFAULTS timeout ${SAN_T:-70} compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/glimmer run -m "$FIX" --backend cuda --tokens 0,5,7 -n 4 --temp 0 --ignore-eos >>"$OUT/sanitizer.log" 2>&1
say "compute-sanitizer memcheck ($FIX, $OFF_DEFAULTS): rc=$? ($(grep 'ERROR SUMMARY' "$OUT/sanitizer.log" | tail -1))"
# stream-K on the shared-memory ring (the default gives each block whole row blocks)
echo "== memcheck with GLIM_CUDA_BLOCK_ROWS=0 on $FIX" >>"$OUT/sanitizer.log"
GLIM_CUDA_BLOCK_ROWS=0 timeout ${SAN_T:-70} compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/glimmer run -m "$FIX" --backend cuda --tokens 0,5,7 -n 4 --temp 0 --ignore-eos >>"$OUT/sanitizer.log" 2>&1
say "compute-sanitizer memcheck ($FIX, GLIM_CUDA_BLOCK_ROWS=0): rc=$? ($(grep 'ERROR SUMMARY' "$OUT/sanitizer.log" | tail -1))"
# the chained decode (a layer's products in one launch, grid barriers, the ring across them),
# also after a 41-token prompt
P=0,$(seq -s, 11 50)
for tool in memcheck racecheck synccheck; do
    for toks in 0,5,7 "$P"; do
        echo "== $tool with GLIM_CUDA_CHAIN=1 on $FIX, prompt $toks" >>"$OUT/sanitizer.log"
        GLIM_CUDA_CHAIN=1 timeout ${SAN_T:-70} compute-sanitizer --tool "$tool" --error-exitcode 9 \
            build/glimmer run -m "$FIX" --backend cuda --tokens "$toks" -n 4 --temp 0 --ignore-eos >>"$OUT/sanitizer.log" 2>&1
        say "compute-sanitizer $tool ($FIX, GLIM_CUDA_CHAIN=1, $(echo "$toks" | tr -cd , | wc -c)+1-token prompt): rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log" | tail -1))"
    done
done
FIX8=tests/vectors/mlx8_b
# the prefill kernels, and the tensor-core attention, which needs splits of 16 keys or more
# (the 3-token runs above stay below)
for tool in memcheck racecheck synccheck; do
    echo "== $tool: 41-token prompt (prefill kernels, tensor-core attention) + 4 decoded tokens on $FIX8" >>"$OUT/sanitizer.log"
    timeout ${SAN_T:-70} compute-sanitizer --tool "$tool" --error-exitcode 9 \
        build/glimmer run -m "$FIX8" --backend cuda --tokens "$P" -n 4 --temp 0 --ignore-eos >>"$OUT/sanitizer.log" 2>&1
    say "compute-sanitizer $tool ($FIX8, 41-token prompt): rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log" | tail -1))"
done
# attention's splits merged by the last blocks to arrive (a merger waits for the others) and its
# blocks numbered split-major: decode past 64 keys, where a full layer has 2 splits
P70=0,$(seq -s, 11 79)
for tool in memcheck racecheck synccheck; do
    echo "== $tool: 70-token prompt + 4 decoded tokens on $FIX8 (2 splits per full layer)" >>"$OUT/sanitizer.log"
    timeout ${SAN_T:-70} compute-sanitizer --tool "$tool" --error-exitcode 9 \
        build/glimmer run -m "$FIX8" --backend cuda --tokens "$P70" -n 4 --temp 0 --ignore-eos >>"$OUT/sanitizer.log" 2>&1
    say "compute-sanitizer $tool ($FIX8, 70-token prompt): rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log" | tail -1))"
    echo "== $tool: the attention kernel tests (the last blocks' merge among them)" >>"$OUT/sanitizer.log"
    CHECK_ONLY=attention GLIM_REQUIRE_CUDA=1 timeout ${SAN_T:-70} compute-sanitizer --tool "$tool" --error-exitcode 9 \
        build/tests/test_cuda_kernels >>"$OUT/sanitizer.log" 2>&1
    say "compute-sanitizer $tool (attention kernel tests): rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log" | tail -1))"
done
say "sanitizers: $(($(date +%s) - t0)) s"
fi

: >"$OUT/bench.md"
if has quick; then
    t0=$(date +%s)
    timeout 120 build/glimmer bench --synthetic --layers 2 --prompt 256 -n 16 --out "$OUT/bench.md" >>"$OUT/bench.log" 2>&1
    say "quick bench rc=$? ($(($(date +%s) - t0)) s)"
fi
if has bench; then
    t0=$(date +%s)
    V=""
    has variants && V=--variants
    has profile && V="$V --profile"
    has timeline && V="$V --timeline"
    timeout 300 build/glimmer bench --synthetic $V --out "$OUT/bench.md" >>"$OUT/bench.log" 2>&1
    say "bench rc=$? ($(($(date +%s) - t0)) s)"
fi
if has attenv; then
    for v in ${ATT_ENVS:-GLIM_CUDA_ATT_CHUNK=128 GLIM_CUDA_ATT_CHUNK=256 GLIM_CUDA_ATT_GROUP=65536}; do
        printf '\ndecode with %s:\n\n' "$v" >>"$OUT/bench.md"
        env $(echo "$v" | tr ',' ' ') timeout 120 build/glimmer bench --synthetic --prompt 0 $ENV_FLAGS --out "$OUT/bench.md" >>"$OUT/bench.log" 2>&1
        say "bench with $v: rc=$?"
    done
fi
if has sass; then # the default decode matvec, bf16 path and integer path
    : >"$OUT/sass.txt"
    for fn in decode_mv:_Z5k_dmvILi0ELi2ELb0ELi3ELb0EEv7DmvArgs decode_mv:_Z5k_dmvILi0ELi2ELb0ELi3ELb1EEv7DmvArgs \
        decode_mv_tma:_Z9k_dmv_tmaILi0ELi2ELb0ELb0EEv7DmvArgs decode_mv_tma:_Z9k_dmv_tmaILi0ELi2ELb0ELb1EEv7DmvArgs; do
        obj=build/src/cuda/${fn%%:*}.o
        fn=${fn#*:}
        cuobjdump --dump-sass --function "$fn" "$obj" >"$OUT/sass_one.txt" 2>&1
        say "sass $fn: $(grep -cE '/\*[0-9a-f]{4}\*/' "$OUT/sass_one.txt") instructions, $(grep -cE 'HMMA|IMMA' "$OUT/sass_one.txt") mma"
        cat "$OUT/sass_one.txt" >>"$OUT/sass.txt"
    done
    rm -f "$OUT/sass_one.txt"
fi
if has ncu; then
    t0=$(date +%s)
    : >"$OUT/ncu.txt"
    # decode_mv launches per token of the 2-layer model: qkvg o gate/up down (x2), head: skip 20 = gate/up
    for k in "k_dmv 20" "k_attention 6"; do
        set -- $k
        timeout 60 ncu --clock-control none --set full --kernel-name regex:"$1" --launch-skip "$2" --launch-count 1 \
            build/glimmer bench --synthetic --layers 2 -n 4 --prompt 0 >>"$OUT/ncu.txt" 2>&1
    done
    say "ncu rc=$? ($(($(date +%s) - t0)) s)"
    grep -E "^  [a-z_ ]*k_|Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Warp Cycles Per Issued|Executed Ipc A|Issue Slots Busy|No Eligible" "$OUT/ncu.txt" | head -40 >>"$S"
fi
tail -5 "$OUT/bench.log" >>"$S" 2>/dev/null
cat "$OUT/bench.md" | tee -a "$S"
