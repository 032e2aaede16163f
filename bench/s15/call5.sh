#!/bin/sh
# session 15, device call 5: RESID's residual read before the PDL wait and attention's V rows
# zeroed a warp per row: GPU tests, A/B against 9e3ee63 (build/oldtree), then the sanitizers.
cd "$(dirname "$0")/../.." || exit 1
export OUT
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
KEEP_BUILD=1 OUT=$OUT/check sh bench/gpu_check.sh tests > /dev/null 2>&1
grep -E "tests:|FAIL" $OUT/check/summary.txt | head
grep -B3 "^FAIL" $OUT/check/tests.log | head -20
sh bench/ab_decode.sh old new old new
KEEP_BUILD=1 SAN_T=30 OUT=$OUT/san sh bench/gpu_check.sh sanitize > /dev/null 2>&1
grep -c "rc=0" $OUT/san/summary.txt; grep "compute-sanitizer" $OUT/san/summary.txt | grep -v "rc=0" | head
