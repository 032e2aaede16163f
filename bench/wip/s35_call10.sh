#!/bin/sh
# s35_call10.sh (session 35): do attention's run-time settings still sit at their best after
# this session's cheaper tile requests? The default against GLIM_CUDA_ATT_TRIG 3 and 1, ATT_HEADS 8
# and 2, ATT_CHUNK 128, ATT_PMERGE 8; decode without the timeline, alternating processes, 3
# rounds. Carry [".deps","build/src/cuda"]; ~2 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/sweep.md
for r in 1 2 3; do
  for v in default GLIM_CUDA_ATT_TRIG=3 GLIM_CUDA_ATT_TRIG=1 GLIM_CUDA_ATT_HEADS=8 GLIM_CUDA_ATT_HEADS=2 GLIM_CUDA_ATT_CHUNK=128 GLIM_CUDA_ATT_PMERGE=8; do
    echo "run $v" >> $OUT/sweep.md
    e=$v; [ $v = default ] && e=GLIM_NOTHING=0
    env $e timeout 100 build/glimmer bench --synthetic --prompt 0 -n 64 --out $OUT/sweep.md > /dev/null 2>&1 || echo "$v: rc $?"
  done
done
awk '/^run /{v=$2; if (!(v in seen)) {seen[v]=1; order[++nv]=v}} /^\| decode/{split($0,f,"|"); t[v,++n[v]]=f[3]}
     END{for (j=1; j<=nv; j++) {v=order[j]; a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; printf "%-26s %.1f / %.1f / %.1f tok/s (%d rounds)\n", v, a/k, b/k, c/k, k}}' $OUT/sweep.md
