#!/bin/sh
# s35_call11.sh (session 35): call 9 again, right this time: call 9 carried a stale attention.o
# (the refuted att_merge_few.patch of call 8, built after HEAD's attention.cu and not rebuilt when
# the patch was taken out; the device build touches the carried objects, so it ran them), so its
# "new" was HEAD plus that patch. Here HEAD (rebuilt) against 5baf822 by bench/ab_old.sh, 4
# rounds; then bench/wip/s35_call10.sh's sweep of attention's run-time settings, 3 rounds.
# Carry [".deps","build/src/cuda","build/old_glimmer.xz"]; ~2 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/ab_old.sh 4
sed -n '/^: > \$OUT\/sweep.md/,$p' bench/wip/s35_call10.sh > $OUT/sweep.sh && sh $OUT/sweep.sh
