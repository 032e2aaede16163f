#!/bin/sh
# s25_call1.sh (written in session 24 for the next GPU call; ~5 minutes): how many SMs each
# product needs to hold the memory's pace, now that SPAN_EVEN showed that SMs a product leaves
# free start the next kernel early (+2 % at ctx 0 on an H100, RESULTS v26). First the forward
# test under the default (span_even_bits now holds GLIM_CUDA_SPAN_BLOCKS_GU=40 bit for bit too),
# then the A/B, alternating processes, twice: the default; down on at most 84 blocks (5 row
# blocks each, 48 SMs free for qkvg) and 70 (6 each); o_proj on 84; gate/up on 125 (20 each, 7
# SMs free for down) and 111; qkvg on 91 (6 each); and GLIM_CUDA_SPAN_LEAN=1 (the span kernel
# without the split tail compiled in: 10 % fewer instructions, 8 fewer registers; the forward
# test's span_lean_bits holds it bit for bit, and it is the default if it wins). Each cap is a cap, SPAN_EVEN then picking the
# fewest blocks with the same largest share. Reading: a cap that wins says the product held the
# memory's pace on fewer SMs and the next kernel's early start paid; the loops' times say which.
# Carry [".deps", "build/src/cuda"]; timeout_s 600. On an H200 also compare with session 23's
# figures (171.7 tok/s at ctx 0 before session 24's defaults).
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
B=GLIM_CUDA_SPAN_BLOCKS
L=GLIM_CUDA_SPAN_LEAN=1
CHECKS="GLIM_CUDA_SPAN=15" sh bench/ab_decode.sh new new,$L new,${B}_DOWN=84 new,${B}_DOWN=70 new,${B}_O=84 \
    new,${B}_GU=125 new,${B}_GU=111 new,${B}_QKVG=91 \
    new new,$L new,${B}_DOWN=84 new,${B}_DOWN=70 new,${B}_O=84 new,${B}_GU=125 new,${B}_GU=111 \
    new,${B}_QKVG=91 2>&1 | grep -v '^new'
grep -E "^FAIL|check failed|span_blocks_gu|span_even:|span_lean" $OUT/checks.log | head -8
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -48
echo "total $(($(date +%s) - T0)) s"
