#!/bin/sh
# examples.test.sh BUILD: the C example a user starts from (examples/generate.c) builds with the
# link line the README gives (`make -s link-flags`) and, greedy, prints what `glimmer run -p`
# prints for the same prompt on the same model (tests/support/chat_model.sh's checkpoint, with a
# real tokenizer.json). Prints PASS / FAIL / SKIP lines.
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
B=$build/glimmer
PREFIX=examples
. "$(dirname "$0")/testlib.sh"

flags=$(cd "$root" && make -s --no-print-directory BUILD="$build" link-flags 2>"$tmp/flags.err")
if ! ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$root/include" "$root/examples/generate.c" "$build/libglimmer.a" \
        $flags -o "$tmp/generate" 2>"$tmp/cc.err"; then
    fail builds_with_link_flags "cc ... build/libglimmer.a $flags: $(head -c 600 "$tmp/cc.err")"
    exit 1
fi
pass builds_with_link_flags

model=$(sh "$root/tests/support/chat_model.sh" "$build" 2>"$tmp/model.err")
case $? in
0) ;;
2) skip generate_equals_run "no test model: $(head -c 300 "$tmp/model.err")"; exit 0 ;;
*) fail generate_equals_run "no test model: $(head -c 600 "$tmp/model.err")"; exit 1 ;;
esac
prompt="The capital of France is"
"$tmp/generate" "$model" "$prompt" 12 >"$tmp/ex.out" 2>"$tmp/ex.err"
rc=$?
"$B" run -m "$model" -p "$prompt" -n 12 --temp 0 >"$tmp/run.out" 2>"$tmp/run.err"
if [ $rc -ne 0 ]; then
    fail generate_equals_run "generate exited $rc: $(head -c 400 "$tmp/ex.err")"
elif [ ! -s "$tmp/ex.out" ] || ! cmp -s "$tmp/ex.out" "$tmp/run.out"; then
    fail generate_equals_run "generate printed '$(head -c 200 "$tmp/ex.out")', glimmer run '$(head -c 200 "$tmp/run.out")'"
else
    pass generate_equals_run
fi
expect usage 2 "usage: generate DIR PROMPT N" "$tmp/generate"
expect bad_model 1 "generate: (tokenizer|model):" "$tmp/generate" /nonexistent-glimmer-model "x" 4
exit $failed
