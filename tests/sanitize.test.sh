#!/bin/sh
# sanitize.test.sh BUILD: the tests of what reads untrusted input (safetensors files with their
# fuzz loop, GGUF, config and model binding errors, the tokenizer, the chat format and its parser,
# the sampler, and the server's request parser with tests/server/request_fuzz.c) built again with
# AddressSanitizer and UndefinedBehaviorSanitizer (CPU only, -O1,
# every finding fatal) into BUILD/asan and run there: an out-of-bounds read, a use after free, a
# leak or undefined behaviour on a lying file fails the test even where the result came out right.
# The other tests and the server ran clean under the same sanitizers when this was added
# (session 20); these are the ones cheap enough to repeat on every run (~40 s with the build).
# A compiler without the sanitizer runtimes makes the cases SKIP, not FAIL.
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
B=$build/glimmer
PREFIX=sanitize
. "$(dirname "$0")/testlib.sh"
cd "$root" || exit 1

progs="test_safetensors test_gguf test_model_errors test_tokenizer test_chat test_sampler"
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
targets="$build/asan/server/openai.o"
for p in $progs; do targets="$targets $build/asan/tests/$p"; done
if ! make --no-print-directory -j"$(nproc 2>/dev/null || echo 2)" CUDA=0 BUILD="$build/asan" OPT="-O1 $san" \
        LDFLAGS="$san" $targets >"$tmp/build.log" 2>&1; then
    if grep -q -E "cannot find -l(asan|ubsan)|libasan|libubsan|unrecognized.*sanitize" "$tmp/build.log"; then
        for p in $progs; do skip "$p" "no sanitizer runtime for $(${CC:-cc} --version | head -1)"; done
        exit 0
    fi
    fail build "the sanitized build failed: $(tail -c 600 "$tmp/build.log")"
    exit 1
fi
# the request parser's fuzz test links the server's openai.o (no HTTP library needed)
libs=$(make -s --no-print-directory CUDA=0 BUILD="$build/asan" --eval 'print-%: ; @echo $($*)' print-LDLIBS 2>/dev/null)
if ${CC:-cc} -std=c11 -D_GNU_SOURCE -O1 $san -Iinclude -Isrc -Iserver -o "$build/asan/tests/request_fuzz" \
        tests/server/request_fuzz.c "$build/asan/server/openai.o" "$build/asan/libglimmer.a" $libs \
        >"$tmp/request_fuzz_cc.log" 2>&1; then
    progs="$progs request_fuzz"
else
    fail request_fuzz "cannot build tests/server/request_fuzz.c sanitized: $(head -c 600 "$tmp/request_fuzz_cc.log")"
fi
for p in $progs; do
    # leaks too; where ptrace is not allowed LeakSanitizer cannot run: then without it, said so
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$build/asan/tests/$p" >"$tmp/$p.out" 2>&1
    rc=$?
    note=
    if grep -q "LeakSanitizer has encountered a fatal error" "$tmp/$p.out"; then
        ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 "$build/asan/tests/$p" >"$tmp/$p.out" 2>&1
        rc=$?
        note=" (leak check unavailable here)"
    fi
    cases=$(grep -c '^PASS ' "$tmp/$p.out")
    finding=$(grep -m1 -E "ERROR: (Address|Leak)Sanitizer|runtime error" "$tmp/$p.out")
    if [ -n "$finding" ]; then
        fail "$p" "$finding"
    elif [ "$rc" -ne 0 ] || grep -q '^FAIL ' "$tmp/$p.out"; then
        fail "$p" "exit $rc under the sanitizers: $(grep -m1 '^FAIL ' "$tmp/$p.out" || tail -c 300 "$tmp/$p.out")"
    else
        pass "$p: $cases cases, no sanitizer finding$note"
    fi
done
exit $failed
