#!/bin/sh
# s35_call9.sh (session 35): the session's whole change in one A/B: this tree (SPAN_SPEC 4,
# attention's straight-line tile requests) against the session's starting commit 5baf822
# (build/old_glimmer.xz from scripts/old_binary.sh), 4 rounds by bench/ab_old.sh (its first run).
# Carry [".deps","build/src/cuda","build/old_glimmer.xz"]; ~2 min.
cd "$(dirname "$0")/../.." || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
sh bench/ab_old.sh 4
