#!/bin/sh
# s49_h200.sh (written in session 48 for the first call that gets an H200): the H200 figures owed
# since session 37 (RESULTS v39: 202.8 tok/s = 72.2 %) and session 48's prediction (v51: ~225-245
# tok/s, 80-87 %). Main's bench of record with its timeline, and without weight bytes; then 3
# alternating rounds of main against session 47's main (build/old_glimmer.xz from
# `scripts/old_binary.sh 257425b`) and of the switches whose defaults were set on H100s for
# regimes an H200 may not share: gate/up's prefetch during attention at every 3rd row block
# (default 4th), the digits made a pair ahead (AHEAD, off), the late ring off (LATE=0), and
# o_proj at one row block a chunk (TWO=13, the H100's default) against two (15, the default
# since session 49 where the memory has more than 32 GB/s per SM by its data sheet, as an
# H200's: +3.3 % under the H200 emulation on an H100, unmeasured on an H200). On an H100 it still runs, as a check of the same tree. Before the call,
# here: make -j2 all && scripts/pack_cuda_objects.sh && scripts/old_binary.sh REV (257425b in
# session 49's call 1, 8522bed since). Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
[ -n "$BUILT" ] || scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
t0=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
grep -E "^device|^copy|^\| (decode|prefill)" $OUT/bench.md
GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
grep -E "^\| decode" $OUT/tl_nobytes.md
D=GLIM_CUDA_DIAG_RING=4
sh bench/decode_ab.sh ${ROUNDS:-3} old new GLIM_CUDA_L2PF_GU_O=3 GLIM_CUDA_SPAN_AHEAD=15 GLIM_CUDA_SPAN_LATE=0 GLIM_CUDA_SPAN_TWO=13 \
    GLIM_CUDA_SPAN_TWO=15 \
    old,$D $D 2>&1 | tail -9
echo "all took $(( $(date +%s) - t0 )) s"
