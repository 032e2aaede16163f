#!/bin/sh
# server.test.sh BUILD: tests of `glimmer serve`, the OpenAI-compatible HTTP server, in three parts:
#   server_request_* tests/server/request_fuzz.c, linked with openai.o: the request parser on
#                    valid bodies of every shape and ~9,000 mutated ones (no model needed);
#   server_forced_*  tests/server/forced.c, linked with the server's objects: generations driven
#                    with scripted tokens (reasoning, tool calls, tool_choice "required", stop
#                    strings, chat logprobs chunk by chunk) that a random model never writes;
#   server_*         tests/server/e2e.mjs, end to end over HTTP with the `openai` npm client (the
#                    file says what it checks: /health, /v1/models, chat and text completions
#                    streamed and not, determinism, KV-cache prefix reuse, concurrency, a client
#                    that disconnects, tools, logprobs, every documented error status, the API
#                    key, exit 0 on SIGTERM).
# The model is the tiny random Muse Glimmer checkpoint with the full 202,048-id vocabulary that
# tests/support/chat_model.sh makes (BUILD/tokenizer/chatmodel, shared with tokenizer.test.sh).
# Prints PASS/FAIL/SKIP lines; SKIPs everything (with the reason) when glimmer was built without
# the HTTP server (libmicrohttpd), and the npm part when node, npm or the npm registry is missing.
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
dir="$root/tests/server"
work="$build/server"
g="$build/glimmer"
mkdir -p "$work"
status=0

# SKIP lines for the e2e tests (their names come from e2e.mjs --list when node can say them).
skip_e2e() {
    if command -v node >/dev/null 2>&1 && node "$dir/e2e.mjs" --list >"$work/names" 2>/dev/null; then
        while read -r t; do echo "SKIP $t: $1"; done <"$work/names"
    else
        echo "SKIP server_e2e: $1"
    fi
}
req_ran=0
skip_all() {
    [ $req_ran = 1 ] || echo "SKIP server_request: $1"
    echo "SKIP server_forced: $1"
    skip_e2e "$1"
    exit $status
}

if [ ! -x "$g" ]; then
    echo "FAIL server_binary: $g is not built"
    exit 1
fi
"$g" serve --help >"$work/help.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q libmicrohttpd "$work/help.out"; then
    skip_all "glimmer was built without the HTTP server: $(head -c 200 "$work/help.out" | tr '\n' ' ')"
elif [ $rc -ne 0 ]; then
    echo "FAIL server_help: glimmer serve --help exited $rc: $(head -c 400 "$work/help.out")"
    exit 1
fi

# The C parts are compiled and linked with the Makefile's own flags (the server objects need its
# libraries: CUDA's too when the library was built with it).
mkvar() { make -s --no-print-directory -C "$root" BUILD="$build" --eval 'print-%: ; @echo $($*)' "print-$1" 2>>"$work/make_vars.log"; }
flags_ok=1
if ! flags=$(mkvar CFLAGS) || ! libs=$(mkvar LDLIBS) || ! ldflags=$(mkvar LDFLAGS) || ! fcc=$(mkvar CC); then
    echo "FAIL server_build_flags: cannot read the Makefile's CC / CFLAGS / LDFLAGS / LDLIBS (see $work/make_vars.log)"
    status=1
    flags_ok=0
fi

# ---- request_fuzz.c: the request parser alone --------------------------------------------------------
if [ $flags_ok = 1 ]; then
    if ! (cd "$root" && $fcc $flags $ldflags -o "$work/request_fuzz" "$dir/request_fuzz.c" "$build/server/openai.o" \
            "$build/libglimmer.a" $libs) >"$work/request_fuzz_cc.log" 2>&1; then
        echo "FAIL server_request_build: cannot build tests/server/request_fuzz.c: $(head -c 1500 "$work/request_fuzz_cc.log")"
        status=1
    else
        timeout 120 "$work/request_fuzz" >"$work/request_fuzz.out" 2>&1
        rc=$?
        req_ran=1
        cat "$work/request_fuzz.out"
        if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$work/request_fuzz.out"; then
            echo "FAIL server_request: exited $rc"
        fi
        [ $rc -ne 0 ] && status=1
    fi
fi

# ---- the checkpoint (tests/support/chat_model.sh, shared with tokenizer.test.sh) ------------------
model=$(sh "$root/tests/support/chat_model.sh" "$build" 2>"$work/chatmodel.err")
case $? in
0) ;;
2) skip_all "no test model: $(head -c 300 "$work/chatmodel.err")" ;;
*) echo "FAIL server_model: $(head -c 1000 "$work/chatmodel.err")"; exit 1 ;;
esac

# ---- forced.c: the server's engine and JSON with scripted generations ----------------------------
if [ $flags_ok = 0 ]; then
    :
elif ! (cd "$root" && $fcc $flags $ldflags -o "$work/forced" "$dir/forced.c" "$build/server/engine.o" \
            "$build/server/openai.o" "$build/libglimmer.a" $libs) >"$work/forced_cc.log" 2>&1; then
    echo "FAIL server_forced_build: cannot build tests/server/forced.c (see $work/forced_cc.log)"
    head -c 2000 "$work/forced_cc.log"
    status=1
else
    timeout 120 "$work/forced" "$model" >"$work/forced.out" 2>"$work/forced.err"
    rc=$?
    cat "$work/forced.out"
    if [ $rc -ne 0 ] || grep -q '^FAIL ' "$work/forced.out"; then
        grep -q '^FAIL ' "$work/forced.out" || echo "FAIL server_forced: exited $rc: $(head -c 1000 "$work/forced.err")"
        status=1
    fi
fi

# ---- e2e.mjs: over HTTP with the openai client ------------------------------------------------------
if ! command -v node >/dev/null 2>&1; then
    skip_e2e "node is not installed"
    exit $status
fi
if ! command -v npm >/dev/null 2>&1; then
    skip_e2e "npm is not installed"
    exit $status
fi
if [ ! -d "$dir/node_modules/openai" ]; then
    if ! (cd "$dir" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1); then
        skip_e2e "npm could not install openai (see $work/npm.log)"
        exit $status
    fi
fi
# a control vector for the --steer test (token-id prompts: the chat model's tokenizer is not needed)
printf '5,6,7,8\n9,10,11\n' >"$work/pos.txt"
printf '300,301,302\n303,304,305,306\n' >"$work/neg.txt"
steer=""
if "$g" steer-extract -m "$model" --positive "$work/pos.txt" --negative "$work/neg.txt" -o "$work/cv.gguf" \
        >"$work/steer.log" 2>&1; then
    steer="--steer-file $work/cv.gguf"
fi
# e2e.mjs stops its servers itself; timeout is the last resort (it kills them on SIGTERM too).
timeout 300 node "$dir/e2e.mjs" --glimmer "$g" --model "$model" --work "$work" $steer >"$work/e2e.out" 2>"$work/e2e.err"
rc=$?
cat "$work/e2e.out"
if [ $rc -ne 0 ] || grep -q '^FAIL ' "$work/e2e.out"; then
    grep -q '^FAIL ' "$work/e2e.out" || echo "FAIL server_e2e: node exited $rc: $(head -c 1000 "$work/e2e.err")"
    status=1
fi
[ -s "$work/e2e.err" ] && head -c 2000 "$work/e2e.err"
exit $status
