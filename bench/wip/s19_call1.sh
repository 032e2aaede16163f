#!/bin/sh
# s19_call1.sh (session 19): s18_call5.sh (probe's dealt / 16-range / arithmetic splits, chain_bits
# bisect), then the committed tree's timeline at context 0 and 4k (phases per kernel).
cd "$(dirname "$0")/../.." || exit 1
sh bench/wip/s18_call5.sh
timeout 150 build/glimmer bench --synthetic --timeline --out $OUT/timeline.md > $OUT/timeline.log 2>&1; echo "timeline rc=$?"
grep -E "tok/s|decode|prefill" $OUT/timeline.md | head -20
