#!/bin/sh
# run.sh BUILD [cuda]: runs every test program in BUILD/tests and every tests/*.test.sh script,
# counts the PASS / FAIL / SKIP lines they print, and ends with the summary line
# "N passed, N failed, N skipped". Exits non-zero when anything failed.
# With "cuda" only the GPU test programs (test_cuda_*) run.
build=${1:-build}
only=${2:-}
log=$(mktemp)
status=0
run_one() {
    echo "== $1"
    if ! "$@" >"$log.out" 2>&1; then status=1; fi
    cat "$log.out"
    cat "$log.out" >>"$log"
}
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    case "$t" in *.d|*.o) continue ;; esac
    if [ "$only" = cuda ]; then case "$t" in *test_cuda_*) ;; *) continue ;; esac; fi
    run_one "$t"
done
if [ "$only" != cuda ]; then
    for s in tests/*.test.sh; do
        [ -f "$s" ] || continue
        run_one sh "$s" "$build"
    done
fi
pass=$(grep -c '^PASS ' "$log")
fail=$(grep -c '^FAIL ' "$log")
skip=$(grep -c '^SKIP ' "$log")
rm -f "$log" "$log.out"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$status" -eq 0 ]
