#!/bin/sh
# s23_call4.sh (session 23; ~2 minutes): o_proj's launch moved off attention's q preparation
# (GLIM_CUDA_ATT_TRIG=2: once every attention block has q; =3: once its tiles are done) and
# what RoPE costs a sliding layer's attention (GLIM_CUDA_DIAG_NOPE=1, wrong logits), against the
# default, in alternating processes; then the forward test under ATT_TRIG=2 and 3. Carry .deps
# and build/src/cuda (built here with `make -j2 all`).
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
A=GLIM_CUDA_ATT_TRIG N=GLIM_CUDA_DIAG_NOPE
sh bench/ab_decode.sh ${AB:-new new,$A=2 new,$A=3 new,$N=1 new new,$A=2 new,$A=3 new,$N=1} 2>&1 | tail -6
grep -E "^decode with|^\| (attention|o_proj) " $OUT/e.md | awk -F'|' '/^decode/{print; n=0; next} {n++; if (n<=3) printf "   %s step %s past-wait %s loop(w/p/l) %s\n", $2, $4, $6, $10}' | head -20
echo "ab $(($(date +%s) - T0)) s"
for v in 2 3; do
    env $A=$v GLIM_REQUIRE_CUDA=1 timeout 100 build/tests/test_cuda_forward > $OUT/fwd_trig$v.log 2>&1
    echo "forward $A=$v rc=$? $(grep -c '^PASS' $OUT/fwd_trig$v.log) pass $(grep -c '^FAIL' $OUT/fwd_trig$v.log) fail ($(($(date +%s) - T0)) s)"
done
