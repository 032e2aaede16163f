# testlib.sh: helpers the shell tests share. Set PREFIX (the case-name prefix) and B (the glimmer
# binary) before sourcing; gives a temporary directory $tmp (removed on exit), pass / fail /
# skip lines for tests/run.sh, $failed (1 once anything failed) and expect.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
failed=0

pass() { echo "PASS ${PREFIX}_$1"; }
fail() { echo "FAIL ${PREFIX}_$1: $2"; failed=1; }
skip() { echo "SKIP ${PREFIX}_$1: $2"; }

# expect NAME CODE PATTERN CMD...: CMD must exit with CODE and print PATTERN (grep -E, stdout or
# stderr; empty = no check). Exit codes >= 128 (a signal: a crash) never match.
expect() {
    name=$1 code=$2 pat=$3
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne "$code" ]; then
        fail "$name" "exit $rc, expected $code; stderr: $(head -c 400 "$tmp/err")"
    elif [ -n "$pat" ] && ! cat "$tmp/out" "$tmp/err" | grep -q -E -e "$pat"; then
        fail "$name" "output does not match '$pat': $(head -c 400 "$tmp/err")"
    else
        pass "$name"
    fi
}

if [ ! -x "$B" ]; then
    fail binary "$B not built"
    exit 1
fi
