#!/bin/sh
# s52_call3.sh (session 52): call 2 found the full layers' 72-split instance 0.7 % slower at 4k
# (65 splits of one tile against main's 33 of two) and 0.6 % faster at 32k (65 against 57
# splits of 8-9 tiles). GLIM_CUDA_ATT_CHUNK_FULL (keys per split at least, full layers only)
# can give 4k its two-tile splits back and leave 32k's plan alone: the A/B of this tree (new:
# 0, one tile), 128 and 192 against main (alt: main's attention object relinked). On an H200
# first the bench of record of this tree and the no-bytes run. att_poll_bits first (poll_wide
# pins CHUNK_FULL=64). Carry .deps, build/cuda_objs.tar.xz, build/attn_main.o.
cd "$(dirname "$0")/../.." || exit 1
. bench/call_setup.sh
case "$gpu" in
*H200*)
    timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
    GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
    grep -E "^\| decode" $OUT/tl_nobytes.md ;;
esac
CHECK_ONLY=att_poll_bits GLIM_REQUIRE_CUDA=1 timeout 100 build/tests/test_cuda_forward > $OUT/checks.log 2>&1
echo "att_poll_bits: rc=$?"; grep -E "poll|FAIL" $OUT/checks.log | head -8
cp build/src/cuda/attention.o build/attn_new.o
cp build/attn_main.o build/src/cuda/attention.o && touch build/src/cuda/attention.o
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" > $OUT/build_alt.log 2>&1 || { tail -5 $OUT/build_alt.log; exit 1; }
xz -T0 -1 -c build/glimmer > build/alt_glimmer.xz
cp build/attn_new.o build/src/cuda/attention.o && touch build/src/cuda/attention.o
make -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" >> $OUT/build_alt.log 2>&1 || { tail -5 $OUT/build_alt.log; exit 1; }
grep -c nvcc $OUT/build_alt.log | sed 's/^/nvcc lines in the two relinks (want 0): /'
sh bench/decode_ab.sh ${ROUNDS:-5} new alt GLIM_CUDA_ATT_CHUNK_FULL=128 GLIM_CUDA_ATT_CHUNK_FULL=192 2>&1 | tail -4
echo "A/B done at $(( $(date +%s) - t0 )) s"
GLIM_CUDA_ATT_CHUNK_FULL=128 timeout 60 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_cf128.md > /dev/null 2>&1
grep -E "^\| (decode|attention|o_proj)" $OUT/tl_cf128.md | cut -d'|' -f1-4,6,10-12
echo "call took $(( $(date +%s) - t0 )) s"
