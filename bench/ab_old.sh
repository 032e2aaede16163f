#!/bin/sh
# ab_old.sh (on the GPU machine, after a build): this tree's decode against an earlier commit's
# binary (build/old_glimmer.xz, made by scripts/old_binary.sh), alternating processes, decode
# without the timeline at contexts 0, 4k and 32k (64 tokens each), ROUNDS rounds (default 4).
# Extra environment for this tree's runs in NEW_ENV (e.g. "GLIM_CUDA_SPAN_SPEC=3"). Writes
# $OUT/ab.md and prints per binary the mean and every round's figures.
# Usage: bench/ab_old.sh [ROUNDS]
rounds=${1:-4}
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
xz -dc build/old_glimmer.xz > build/old_glimmer && chmod +x build/old_glimmer || exit 1
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
build/old_glimmer --help > /dev/null 2>&1 || { echo "ab_old: the old binary does not start:"; build/old_glimmer --help 2>&1 | head -3; exit 1; }
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1 # warm-up
: > "$OUT/ab.md"
r=0
while [ $r -lt "$rounds" ]; do
    r=$((r + 1))
    for b in new old; do
        echo "run $b" >> "$OUT/ab.md"
        if [ $b = new ]; then set -- env $NEW_ENV build/glimmer; else set -- build/old_glimmer; fi
        timeout 100 "$@" bench --synthetic --prompt 0 -n 64 --out "$OUT/ab.md" > /dev/null 2>&1 || echo "ab_old: $b: rc $?"
    done
done
awk '/^run /{v=$2} /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]}
     END{split("new old", names, " "); for (j=1; j<=2; j++) {v=names[j]; a=b=c=0; for (i=1; i<=n[v]; i+=3) {a+=t[v,i]; b+=t[v,i+1]; c+=t[v,i+2]}; k=n[v]/3; if (k) printf "%s: %.1f / %.1f / %.1f tok/s (%d rounds):%s\n", v, a/k, b/k, c/k, k, x[v]}}' "$OUT/ab.md"
