#!/bin/sh
# session_run.sh: one device call's worth of checks, in the order that loses least if something
# hangs or the call's time runs out: build + a 2-layer bench (q/), then the full bench with
# variants, timeline and SASS (b/), then, if ENVS is set, decode again under each of its items
# (gpu_check.sh's attenv: settings of one item joined by commas, bench flags ENV_FLAGS, default
# "--timeline -n 32"; e/), then the GPU tests and sanitizers (t/); everything under $OUT is
# packed into $OUT/all.tgz (the device tool returns at most 8 files).
# Usage (device): OUT=$OUT [ENVS="GLIM_CUDA_ATT_MMA=0 GLIM_CUDA_ATT_MMA=1"] sh bench/session_run.sh
# (carry .deps)
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$OUT/q" "$OUT/b" "$OUT/e" "$OUT/t"
: >"$OUT/e/summary.txt"
OUT="$OUT/q" sh bench/gpu_check.sh quick >"$OUT/q/run.log" 2>&1
if grep -q "quick bench rc=0" "$OUT/q/summary.txt"; then
    KEEP_BUILD=1 OUT="$OUT/b" timeout 330 sh bench/gpu_check.sh bench variants timeline sass >"$OUT/b/run.log" 2>&1
    if [ -n "$ENVS" ]; then
        KEEP_BUILD=1 ATT_ENVS="$ENVS" ENV_FLAGS="${ENV_FLAGS:---timeline -n 32}" OUT="$OUT/e" \
            timeout 150 sh bench/gpu_check.sh attenv >"$OUT/e/run.log" 2>&1
    fi
fi
KEEP_BUILD=1 OUT="$OUT/t" SAN_T=40 timeout 250 sh bench/gpu_check.sh tests sanitize >"$OUT/t/run.log" 2>&1
for d in q b e t; do echo "== $d"; grep -v "info:" "$OUT/$d/summary.txt" | cut -c1-300; done
cut -c1-250 "$OUT/b/bench.md"
[ -n "$ENVS" ] && grep -A14 "^decode with" "$OUT/e/bench.md" |
    grep -E "^decode with|^\| (qkvg|attention|o_proj|gate|down|head)|decode @" | cut -c1-230
(cd "$OUT" && tar czf all.tgz q b e t && rm -rf q b e t)
