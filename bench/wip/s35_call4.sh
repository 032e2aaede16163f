#!/bin/sh
# s35_call4.sh (session 35): call 3's A/B again with the HEAD binary of 5baf822 running (in call 3
# it exited 127: linked here, it needs .deps' libraries on the device). Rows: 4 = this tree
# (SPEC 4, its default), 3 = this tree with SPEC 3, 9 = the HEAD binary (its default, SPEC 3);
# decode without the timeline, alternating processes, 4 rounds. Carry
# [".deps","build/src/cuda","build/old_glimmer.xz"]; ~3 min.
cd "$(dirname "$0")/../.." || exit 1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
xz -dc build/old_glimmer.xz > build/old_glimmer && chmod +x build/old_glimmer || exit 1
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
build/old_glimmer --help > /dev/null 2>&1 || { echo "old binary: rc $?"; build/old_glimmer --help 2>&1 | head -3; }
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
: > $OUT/nt.md
for r in 1 2 3 4; do for s in 4 3 9; do
  echo "spec $s" >> $OUT/nt.md
  case $s in 9) b="build/old_glimmer";; *) b="env GLIM_CUDA_SPAN_SPEC=$s build/glimmer";; esac
  timeout 100 $b bench --synthetic --prompt 0 -n 64 --out $OUT/nt.md > /dev/null 2>&1 || echo "spec $s: rc $?"
done; done
awk '/^spec/{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]} END{for (v=0; v<=9; v++) {a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "row %d: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' $OUT/nt.md
ls $OUT
