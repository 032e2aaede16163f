#!/bin/sh
# chat_model.sh BUILD: makes (once) the tiny random Muse Glimmer checkpoint with the full
# 202,048-id vocabulary and the Muse tokenizer.json that the chat-level tests run on
# (tokenizer.test.sh's `glimmer chat` check, server.test.sh), in BUILD/tokenizer/chatmodel, and
# prints its path. The tokenizer.json comes from js-tiktoken's o200k_base ranks
# (tests/tokenizer/make_tokenizer_json.mjs, npm), the weights from tokdiff --write-chat-model.
# Exit 0 with the path; 2 when node / npm / the npm registry is missing (a reason on stderr: the
# caller SKIPs); 1 when building failed (the reason on stderr).
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
tokdir="$root/tests/tokenizer"
work="$build/tokenizer"
model="$work/chatmodel"
mkdir -p "$work"
if [ -s "$model/model.safetensors" ] && [ -s "$model/tokenizer.json" ]; then
    echo "$model"
    exit 0
fi
muse="$work/muse.json"
if [ ! -s "$muse" ] || [ "$tokdir/make_tokenizer_json.mjs" -nt "$muse" ]; then
    command -v node >/dev/null 2>&1 || { echo "node is not installed (it builds the Muse tokenizer.json)" >&2; exit 2; }
    command -v npm >/dev/null 2>&1 || { echo "npm is not installed (it builds the Muse tokenizer.json)" >&2; exit 2; }
    if [ ! -d "$tokdir/node_modules/js-tiktoken" ] || [ ! -d "$tokdir/node_modules/@huggingface/tokenizers" ]; then
        if ! (cd "$tokdir" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1); then
            echo "npm could not install @huggingface/tokenizers and js-tiktoken (see $work/npm.log)" >&2
            exit 2
        fi
    fi
    if ! node "$tokdir/make_tokenizer_json.mjs" "$muse.tmp" muse 2>"$work/make_muse.log"; then
        echo "building $muse failed: $(head -c 600 "$work/make_muse.log")" >&2
        exit 1
    fi
    mv "$muse.tmp" "$muse"
fi
tokdiff="$work/tokdiff"
if [ ! -x "$tokdiff" ] || [ "$tokdir/tokdiff.c" -nt "$tokdiff" ] || [ "$build/libglimmer.a" -nt "$tokdiff" ]; then
    if ! ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I"$root/include" -I"$root/src" -o "$tokdiff" "$tokdir/tokdiff.c" \
            "$build/libglimmer.a" -ljansson -lpcre2-8 -lm -pthread 2>"$work/cc.log"; then
        echo "cannot build tests/tokenizer/tokdiff.c: $(head -c 600 "$work/cc.log")" >&2
        exit 1
    fi
fi
rm -rf "$model"
if ! "$tokdiff" --write-chat-model "$model" >"$work/chatmodel.log" 2>&1 || ! cp "$muse" "$model/tokenizer.json"; then
    echo "writing the chat model into $model failed: $(head -c 600 "$work/chatmodel.log")" >&2
    rm -rf "$model"
    exit 1
fi
echo "$model"
