#!/bin/sh
# h200_record.sh (on the GPU machine, after a build; sourced by a call script that set $gpu, as
# bench/call_setup.sh does): on an H200 only, the figures of record owed since session 37
# (RESULTS v39): the bench with its timeline ($OUT/bench.md) and the no-bytes timeline
# (GLIM_CUDA_DIAG_RING=4, $OUT/tl_nobytes.md), their decode rows on stdout. Any other card: nothing.
case "$gpu" in
*H200*)
    timeout 100 build/glimmer bench --synthetic --timeline --out $OUT/bench.md > /dev/null 2>&1
    grep -E "^device|^copy|^\| (decode|prefill)|^warning" $OUT/bench.md
    GLIM_CUDA_DIAG_RING=4 timeout 100 build/glimmer bench --synthetic --timeline --prompt 0 --out $OUT/tl_nobytes.md > /dev/null 2>&1
    grep -E "^\| decode|^warning" $OUT/tl_nobytes.md ;;
esac
