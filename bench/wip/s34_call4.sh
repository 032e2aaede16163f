#!/bin/sh
# s34_call4.sh (session 34): the prefill GEMM with more warps a block and one row block a warp
# (PF_WARPS x PF_UPW: 8 x 2 as built, 12 x 1 and 16 x 1: 3 or 4 warps a scheduler instead of 2,
# the 64-token instance at 168 / 128 registers with 28 / 84 bytes of spills; session 33 found
# it latency-bound with 2 warps a scheduler). Each variant's object is compiled here
# (build/pfvar/prefill_gemm_WxU.o) and linked; each runs matvec_gemm and the
# forward test's long prompts, then prefill of 2048 tokens, alternating processes, 3 rounds.
# The variants' objects are compiled here, beside the build (the Makefile's flags for this file).
# Carry [".deps","build/src/cuda"]; ~6 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
mkdir -p build/pfvar
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
for c in "12 1" "16 1"; do set -- $c
  $NVCC -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -lineinfo -Xcompiler -fPIC -Iinclude -Isrc -DGLIM_HAVE_CUDA \
    -DPF_WARPS=$1 -DPF_UPW=$2 -c -o build/pfvar/prefill_gemm_$1x$2.o src/cuda/prefill_gemm.cu > $OUT/pfvar_$1.log 2>&1 &
done
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
wait
ls -la build/pfvar
mkdir -p /tmp/pfv
: > $OUT/checks.log
for v in 8x2 12x1 16x1; do
  if [ $v != 8x2 ]; then cp build/pfvar/prefill_gemm_$v.o build/src/cuda/prefill_gemm.o; touch build/src/cuda/prefill_gemm.o; fi
  scripts/device_build.sh build/glimmer build/tests/test_cuda_kernels build/tests/test_cuda_forward >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
  cp build/glimmer /tmp/pfv/glimmer_$v
  echo "== $v" >> $OUT/checks.log
  CHECK_ONLY=matvec_gemm GLIM_REQUIRE_CUDA=1 timeout 120 build/tests/test_cuda_kernels >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
  CHECK_ONLY=long_prompt,random_mlx4 GLIM_REQUIRE_CUDA=1 timeout 120 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
grep -E '^==|^FAIL|long_mlx4:|long_mlx4_t32' $OUT/checks.log | head -20
timeout 60 /tmp/pfv/glimmer_8x2 bench --synthetic -n 2 --prompt 2048 > /dev/null 2>&1
: > $OUT/pf.md
for r in 1 2 3; do for v in 8x2 12x1 16x1; do
  echo "variant $v" >> $OUT/pf.md
  timeout 100 /tmp/pfv/glimmer_$v bench --synthetic -n 2 --prompt 2048 --out $OUT/pf.md > /dev/null 2>&1 || echo "$v: rc $?"
done; done
awk '/^variant/{v=$2} /^\| prefill/{split($0,f,"|"); printf "%s %s\n", v, f[3]}' $OUT/pf.md
awk '/^variant/{v=$2} /^\| prefill/{split($0,f,"|"); t[v]+=f[3]; n[v]++} END{for (v in t) printf "%s: mean %.1f tok/s (%d)\n", v, t[v]/n[v], n[v]}' $OUT/pf.md
cd $OUT && tar czf logs.tgz checks.log pf.md build.log pfvar_*.log 2>/dev/null; rm -f checks.log; ls
