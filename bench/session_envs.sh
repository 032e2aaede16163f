#!/bin/sh
# session_envs.sh: one device call for a change behind a switch: the GPU tests and
# sanitizers first (a hang there costs least), then the bench with its variants and SASS, then
# timelines at context 0 under each of RING_ENVS (items as gpu_check.sh's ATT_ENVS: settings
# joined by commas; bench flags RING_FLAGS, default "--timeline -n 32"); everything packed into
# $OUT/all.tgz.
# Usage (device): OUT=$OUT RING_ENVS="GLIM_CUDA_TMA_FLIGHT=0 GLIM_CUDA_TMA_FLIGHT=2" sh bench/session_envs.sh
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$OUT/t" "$OUT/b" "$OUT/e"
OUT="$OUT/t" SAN_T=40 timeout 330 sh bench/gpu_check.sh tests sanitize >"$OUT/t/run.log" 2>&1
KEEP_BUILD=1 OUT="$OUT/b" timeout 150 sh bench/gpu_check.sh bench variants sass >"$OUT/b/run.log" 2>&1
KEEP_BUILD=1 ATT_ENVS="${RING_ENVS:-GLIM_CUDA_TMA_FLIGHT=0}" ENV_FLAGS="${RING_FLAGS:---timeline -n 32}" OUT="$OUT/e" \
    timeout 120 sh bench/gpu_check.sh attenv >"$OUT/e/run.log" 2>&1
for d in t b e; do echo "== $d"; grep -v "info:" "$OUT/$d/summary.txt" | cut -c1-300; done
cut -c1-200 "$OUT/b/bench.md" | grep -v "^| --- "
grep -A14 "^decode with" "$OUT/e/bench.md" | grep -E "^decode with|^\| (qkvg|attention|o_proj|gate|down|head)|decode @" | cut -c1-230
(cd "$OUT" && tar czf all.tgz t b e && rm -rf t b e)
