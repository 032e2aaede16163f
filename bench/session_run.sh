#!/bin/sh
# session_run.sh: one device call's worth of checks, in the order that loses least if something
# hangs or the call's time runs out: build + a 2-layer bench (q/), then the full bench with
# variants, timeline and SASS (b/), then the GPU tests and sanitizers (t/); everything under
# $OUT is packed into $OUT/all.tgz (the device tool returns at most 8 files).
# Usage (device): OUT=$OUT sh bench/session_run.sh   (carry .deps)
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$OUT/q" "$OUT/b" "$OUT/t"
OUT="$OUT/q" sh bench/gpu_check.sh quick >"$OUT/q/run.log" 2>&1
if grep -q "quick bench rc=0" "$OUT/q/summary.txt"; then
    KEEP_BUILD=1 OUT="$OUT/b" timeout 330 sh bench/gpu_check.sh bench variants timeline sass >"$OUT/b/run.log" 2>&1
fi
KEEP_BUILD=1 OUT="$OUT/t" SAN_T=40 timeout 250 sh bench/gpu_check.sh tests sanitize >"$OUT/t/run.log" 2>&1
for d in q b t; do echo "== $d"; grep -v "info:" "$OUT/$d/summary.txt" | cut -c1-300; done
cut -c1-250 "$OUT/b/bench.md"
(cd "$OUT" && tar czf all.tgz q b t && rm -rf q b t)
