#!/bin/sh
# cpu_bench.sh: CPU decode speed on the demo model and on a ~1B-parameter random model with Muse
# Glimmer's proportions (bf16 and MLX 4-bit), each beside the memory bandwidth floor.
# Usage: bench/cpu_bench.sh [BUILD]   (models are cached in $BUILD/bench-models)
set -e
build=${1:-build}
make --no-print-directory "$build/glimmer" "$build/bench/cpu_bench"
models="$build/bench-models"
mkdir -p "$models"
[ -f "$models/tiny/config.json" ] || "$build/glimmer" demo --write "$models/tiny"
[ -f "$models/1b-q4/config.json" ] || "$build/glimmer" demo --write "$models/1b-q4" --size 1b --bits 4
[ -f "$models/1b-bf16/config.json" ] || "$build/glimmer" demo --write "$models/1b-bf16" --size 1b
for m in tiny 1b-q4 1b-bf16; do
    n=16; [ "$m" = tiny ] && n=256
    "$build/bench/cpu_bench" "$models/$m" $n
    echo
done
