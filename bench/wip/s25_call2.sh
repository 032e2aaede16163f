#!/bin/sh
# s25_call2.sh (session 25, ~7 minutes): the new default (GLIM_CUDA_SPAN_LEAN=1) checked and
# placed. 1) test_cuda_forward, test_cuda_kernels, test_cuda_hooks under the default; 2) the
# A/B, alternating processes, twice: session 19's tree (34e54b8, build/oldtree), the default,
# two timing diagnostics that bound what is left (GLIM_CUDA_DIAG_RING=4: the loops' own compute,
# no weight bytes copied; GLIM_CUDA_DIAG_WINDOW=4: every matvec's weights from L2; both give
# wrong logits), and the knobs measured before LEAN whose answer may have moved (SPAN_EVEN=0,
# TMA_SLOTS_QKVG=4, TMA_SLOTS_O=3, ATT_TRIG=1); 3) compute-sanitizer (memcheck, racecheck,
# synccheck) on a 3-token prompt + 4 decoded tokens (mlx4_a) and on a 41-token prompt (mlx8_b)
# under the default. Carry [".deps", "build/src/cuda", "build/oldtree"]; timeout_s 600.
cd "$(dirname "$0")/../.." || exit 1
[ -d build/oldtree ] || { echo "build/oldtree must be carried"; exit 1; }
T0=$(date +%s)
KTESTS=1 CHECKS="GLIM_CUDA_SPAN=15" sh bench/ab_decode.sh old new new,GLIM_CUDA_DIAG_RING=4 new,GLIM_CUDA_DIAG_WINDOW=4 \
    new,GLIM_CUDA_SPAN_EVEN=0 new,GLIM_CUDA_TMA_SLOTS_QKVG=4 new,GLIM_CUDA_TMA_SLOTS_O=3 new,GLIM_CUDA_ATT_TRIG=1 \
    old new new,GLIM_CUDA_DIAG_RING=4 new,GLIM_CUDA_DIAG_WINDOW=4 new,GLIM_CUDA_SPAN_EVEN=0 \
    new,GLIM_CUDA_TMA_SLOTS_QKVG=4 new,GLIM_CUDA_TMA_SLOTS_O=3 new,GLIM_CUDA_ATT_TRIG=1 2>&1 | grep -v '^new\|^old'
grep -E "^FAIL|check failed" $OUT/checks.log | head -8
grep -E "^decode with|^\| (qkvg|attention \(sliding\)|o_proj|gate/up|down) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=5) printf "   %s step %s first %s spread %s loop(w/p/l) %s\n", $2, $4, $5, $8, $10}' | head -48
echo "ab $(($(date +%s) - T0)) s"
P=0,$(seq -s, 11 50)
for tool in memcheck racecheck synccheck; do
  for run in "tests/vectors/mlx4_a 0,5,7" "tests/vectors/mlx8_b $P"; do
    set -- $run
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 build/glimmer run -m $1 --backend cuda \
      --tokens $2 -n 4 --temp 0 --ignore-eos > $OUT/san.log 2>&1
    echo "sanitizer $tool $1 ($(echo $2 | tr -cd , | wc -c)+1 tokens): rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san.log | tail -1)"
  done
done
echo "total $(($(date +%s) - T0)) s"
