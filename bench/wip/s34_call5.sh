#!/bin/sh
# s34_call5.sh (session 34): bench/icache_probe.cu (what a launch, other code and the weight
# stream do to a kernel's instructions). Carry nothing; ~1 min.
cd "$(dirname "$0")/../.." || exit 1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$NVCC -O3 -arch=sm_90 -o /tmp/icache_probe bench/icache_probe.cu || exit 1
/tmp/icache_probe | tee $OUT/icache.md
# the layout of the hop kernels: where the never-run blocks sit (in line or moved out)
for k in _Z5k_hopILi64ELi64ELi3EEvffPfPy _Z5k_hopILi64ELi256ELi3EEvffPfPy; do
  cuobjdump -sass -fun $k /tmp/icache_probe > $OUT/$k.sass 2>&1
  echo "$k: $(grep -c 'FFMA' $OUT/$k.sass) FFMA; branches:"; grep -n 'BRA\|EXIT' $OUT/$k.sass | head -8
done
