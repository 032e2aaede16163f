#!/bin/sh
# hooks.test.sh BUILD: `glimmer steer-extract` end to end on the demo checkpoint (token-id
# prompt files -> control-vector GGUF and safetensors), its usage and runtime errors, and, once
# run/logits carry the hook flags (cli/hook_flags.h), --steer scale=0 leaving generation unchanged
# and --capture writing a file. Prints PASS / FAIL / SKIP lines.
build=${1:-build}
B=$build/glimmer
PREFIX=hooks
. "$(dirname "$0")/testlib.sh"

expect help 0 "direction\.N" "$B" steer-extract --help
expect missing_negative 2 "missing --positive FILE or --negative FILE" "$B" steer-extract -m x --positive a -o o.gguf
expect bad_layers 2 "not a list" "$B" steer-extract -m x --positive a --negative b -o o.gguf --layers 3-1

if ! "$B" demo --write "$tmp/model" >/dev/null 2>&1; then
    skip extract "glimmer demo --write is not available"
    exit 0
fi
printf '5,6,7,8\n9, 10, 11\n\n12,13,14,15,16\n' >"$tmp/pos.txt"
printf '300,301,302\n303,304,305,306\n' >"$tmp/neg.txt"
expect extract_gguf 0 "wrote .*cv.gguf: 5 directions" \
    "$B" steer-extract -m "$tmp/model" --positive "$tmp/pos.txt" --negative "$tmp/neg.txt" -o "$tmp/cv.gguf"
if [ -f "$tmp/cv.gguf" ] && [ "$(head -c 4 "$tmp/cv.gguf")" = GGUF ]; then pass gguf_magic; else fail gguf_magic "no GGUF written"; fi
expect extract_st_layer0 0 "layer   0: \|direction\| 1$" \
    "$B" steer-extract -m "$tmp/model" --positive "$tmp/pos.txt" --negative "$tmp/neg.txt" -o "$tmp/cv.safetensors" --layers 0-1 --unit
expect extract_far_layer 1 "names layer 9; the model has layers 0..5" \
    "$B" steer-extract -m "$tmp/model" --positive "$tmp/pos.txt" --negative "$tmp/neg.txt" -o "$tmp/x.gguf" --layers 9
printf 'hello there\n' >"$tmp/text.txt"
expect extract_text_needs_tokenizer 1 "text, which needs the tokenizer" \
    "$B" steer-extract -m "$tmp/model" --positive "$tmp/text.txt" --negative "$tmp/neg.txt" -o "$tmp/x.gguf"
expect extract_missing_file 1 "cannot open" \
    "$B" steer-extract -m "$tmp/model" --positive "$tmp/nope.txt" --negative "$tmp/neg.txt" -o "$tmp/x.gguf"
printf '1,2,99999\n' >"$tmp/oov.txt"
expect extract_oov 2 "99999" \
    "$B" steer-extract -m "$tmp/model" --positive "$tmp/oov.txt" --negative "$tmp/neg.txt" -o "$tmp/x.gguf"

# Text prompt lines go through the checkpoint's tokenizer (BOS added): with a tiny byte-level
# BPE tokenizer.json (tests/support/tiny_tokenizer.json, shared with cli.test.sh), "hi hi" is 1,5,7
# and "hi" is 1,5, so text and id files give the same file.
mkdir -p "$tmp/tm" && cp "$tmp/model"/* "$tmp/tm/"
cp "$(dirname "$0")/support/tiny_tokenizer.json" "$tmp/tm/tokenizer.json"
printf 'hi hi\nhi\n' >"$tmp/ptext.txt"
printf '1,5,7\n1,5\n' >"$tmp/pids.txt"
"$B" steer-extract -m "$tmp/tm" --positive "$tmp/ptext.txt" --negative "$tmp/neg.txt" -o "$tmp/t1.gguf" >/dev/null 2>"$tmp/t1.err"
"$B" steer-extract -m "$tmp/tm" --positive "$tmp/pids.txt" --negative "$tmp/neg.txt" -o "$tmp/t2.gguf" >/dev/null 2>&1
if [ -s "$tmp/t1.gguf" ] && cmp -s "$tmp/t1.gguf" "$tmp/t2.gguf"; then pass extract_text_prompts
else fail extract_text_prompts "text and id prompt files gave different files: $(head -c 300 "$tmp/t1.err")"; fi

# glimmer capture: one model load, every prompt, rows streamed to one file.
cat "$tmp/pos.txt" "$tmp/neg.txt" >"$tmp/all.txt"
expect capture_corpus 0 "wrote .*cap.safetensors: residual F32 \[5, 2, [0-9]+\]" \
    "$B" capture -m "$tmp/model" --prompts "$tmp/all.txt" -o "$tmp/cap.safetensors" --capture-layers 1,3 \
    --steer "$tmp/cv.gguf,scale=0" --census "$tmp/census.json"
if grep -q '"decode_tokens":5' "$tmp/census.json" 2>/dev/null; then pass capture_census; else fail capture_census "census.json lacks decode_tokens 5"; fi
expect capture_needs_output 2 "missing -o" "$B" capture -m "$tmp/model" --prompts "$tmp/all.txt"
expect capture_bad_steer_option 2 "unknown option 'frob'" "$B" capture -m x --prompts y -o z --steer "a.gguf,frob=1"
expect capture_bad_layer 1 "layer 9 is outside" "$B" capture -m "$tmp/model" --prompts "$tmp/all.txt" -o "$tmp/c2.safetensors" --capture-layers 9

# The hook flags on run, once its owner has added them.
if ! "$B" run --help 2>/dev/null | grep -q -e "--steer"; then
    skip run_steer "glimmer run does not take the hook flags yet (cli/hook_flags.h)"
    exit 0
fi
"$B" run -m "$tmp/model" --tokens 1,2,3 -n 8 --temp 0 --backend cpu >"$tmp/plain" 2>/dev/null
"$B" run -m "$tmp/model" --tokens 1,2,3 -n 8 --temp 0 --backend cpu --steer "$tmp/cv.gguf,scale=0" \
    --capture "$tmp/cap.safetensors" --capture-positions all >"$tmp/zero" 2>"$tmp/err"
if cmp -s "$tmp/plain" "$tmp/zero" && [ -s "$tmp/plain" ]; then pass run_steer_scale0; else fail run_steer_scale0 "ids differ: $(cat "$tmp/plain") vs $(cat "$tmp/zero")"; fi
if [ -s "$tmp/cap.safetensors" ]; then pass run_capture; else fail run_capture "no capture file: $(head -c 300 "$tmp/err")"; fi
expect run_steer_bad_file 1 "cannot open" "$B" run -m "$tmp/model" --tokens 1 -n 1 --steer "$tmp/nope.gguf"
