#!/bin/sh
# quick_verify.sh: a short device call for code already compiled here. The CUDA objects built
# on this machine travel in the carry (build/src/cuda, with .deps: the same nvcc, sm_90), so the
# device compiles only the C files and links; then the GPU tests, the bench twice (the first
# process of a call runs ~2.5 % slow, bench/RESULTS.md v12), and the ncu targets of
# bench/ncu_stalls.sh if NCU_TARGETS is set. Logs and tables under $OUT.
# Usage (device): OUT=$OUT sh bench/quick_verify.sh   (carry .deps and build/src/cuda)
# Written in session 10 after its device time ran out: not yet run on the device.
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$OUT"
# newer than the copied sources; the dependency lists name this machine's system headers,
# which the device may not have, so they stay behind (each object then depends on its .cu)
rm -f build/src/cuda/*.d
touch build/src/cuda/*.o 2>/dev/null
KEEP_BUILD=1 OUT="$OUT/t" timeout 240 sh bench/gpu_check.sh tests >"$OUT/tests_run.log" 2>&1
if grep -q "BUILD FAILED" "$OUT/t/summary.txt"; then # the carried objects did not link: build here
    echo "carried objects failed to build; building from scratch"
    OUT="$OUT/t" timeout 300 sh bench/gpu_check.sh tests >"$OUT/tests_run.log" 2>&1
fi
grep -E "build|tests:|FAIL|check failed" "$OUT/t/summary.txt" | head -20
for i in 1 2; do
    timeout 60 build/glimmer bench --synthetic --out "$OUT/bench$i.md" >/dev/null 2>&1
    grep -E "copy bandwidth|decode @|prefill" "$OUT/bench$i.md"
done
if [ -n "$NCU_TARGETS" ]; then
    OUT="$OUT/ncu" timeout 150 sh bench/ncu_stalls.sh
    for f in "$OUT"/ncu/*_details.txt; do
        echo "== $f"
        grep -E "^    (Duration|Registers Per Thread|Achieved Occupancy|Warp Cycles Per Issued Instruction|Issue Slots Busy|Executed Ipc Active|DRAM Throughput) " "$f" | sort -u
    done
fi
