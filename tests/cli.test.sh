#!/bin/sh
# cli.test.sh BUILD: the behaviour of `glimmer info`, `glimmer run` and `glimmer logits`.
# Without a model: --help of each, and usage errors (exit 2, a message naming the problem).
# With the demo checkpoint (`glimmer demo --write DIR`, skipped when demo has no --write):
# info (text and JSON), run (same seed -> same ids, different seed -> different ids, stop ids end
# the output, out-of-vocabulary ids named with the vocab size), logits (file shape, and its last
# row's argmax is the id greedy `run` picks first). Prints PASS / FAIL / SKIP lines.
build=${1:-build}
B=$build/glimmer
PREFIX=cli
. "$(dirname "$0")/testlib.sh"

# ---- --help: exit 0, usage line, and every flag a user will look for ----------------------------
help_has() { # NAME CMD FLAGS...
    name=$1 cmd=$2
    shift 2
    if ! "$B" "$cmd" --help >"$tmp/help" 2>"$tmp/err"; then
        fail "$name" "glimmer $cmd --help exited non-zero"
        return
    fi
    grep -q "usage: glimmer $cmd" "$tmp/help" || { fail "$name" "no usage line"; return; }
    for f in "$@"; do
        grep -q -e "$f" "$tmp/help" || { fail "$name" "--help does not mention $f"; return; }
    done
    pass "$name"
}
help_has help_info info -m -c --json --backend --threads
help_has help_run run -m --tokens -p -n -c --temp --top-k --top-p --min-p --repeat-penalty \
    --presence-penalty --frequency-penalty --repeat-last-n --seed --threads --backend --ignore-eos
help_has help_logits logits -m --tokens -o -b --backend
if "$B" serve --help 2>&1 | grep -q libmicrohttpd; then
    skip help_serve "this build has no HTTP server (libmicrohttpd-dev missing)"
else
    help_has help_serve serve -m --host --port --api-key --max-body --parallel --max-queue -c --rewind \
        --reasoning --temp --seed --backend /v1/chat/completions /v1/completions
    expect serve_missing_model 2 "missing -m" "$B" serve --port 0
    expect serve_bad_port 2 "--port" "$B" serve -m /nonexistent-glimmer-model --port 70000
    expect serve_bad_reasoning 2 "expected low, medium, high or xhigh" "$B" serve -m /nonexistent-glimmer-model --reasoning max
    expect serve_no_model 1 "cannot open model '/nonexistent-glimmer-model'" "$B" serve -m /nonexistent-glimmer-model --port 0
fi
expect help_short_flag 0 "usage: glimmer run" "$B" run -h
# bench parses its flags only in a build with the CUDA backend (without it, it says so at once)
if "$B" bench --help 2>&1 | grep -q -e "--ctx LIST"; then
    expect bench_ctx_not_number 2 "--ctx: context 2 in '0,4k' is not a whole number" "$B" bench --synthetic --ctx 0,4k
    expect bench_ctx_negative 2 "--ctx: context 1 is -1, outside \[0, 131072\]" "$B" bench --synthetic --ctx -1
    expect bench_ctx_too_many 2 "more than 8 contexts" "$B" bench --synthetic --ctx 1,2,3,4,5,6,7,8,9
    expect bench_ctx_past_model 2 "--ctx 131072 with -n 64 needs 131200 positions" "$B" bench --synthetic --ctx 131072
else
    skip bench_ctx "this build has no CUDA backend"
fi
expect unknown_command 2 "unknown command 'frobnicate'" "$B" frobnicate

# ---- usage errors: parsed before any model is opened, so no model is needed ---------------------
M=/nonexistent-glimmer-model
expect run_missing_model 2 "missing -m" "$B" run --tokens 1,2
expect run_missing_prompt 2 "missing the prompt" "$B" run -m "$M"
expect run_tokens_not_number 2 "token 2 'x1' is not a token id" "$B" run -m "$M" --tokens 1,x1,3
expect run_tokens_empty 2 "--tokens is empty" "$B" run -m "$M" --tokens ""
expect run_tokens_empty_item 2 "token 2 is empty" "$B" run -m "$M" --tokens 1,,2
expect run_tokens_negative 2 "token 1 is -5, outside" "$B" run -m "$M" --tokens -5
expect run_tokens_huge 2 "outside \[0, 2147483647\]" "$B" run -m "$M" --tokens 1,99999999999
expect run_tokens_float 2 "'1.5' is not a token id" "$B" run -m "$M" --tokens 1.5
expect run_n_negative 2 "-n must be >= 0, got -3" "$B" run -m "$M" --tokens 1 -n -3
expect run_n_not_number 2 "-n expects an integer, got 'ten'" "$B" run -m "$M" --tokens 1 -n ten
expect run_n_missing_value 2 "-n needs a value" "$B" run -m "$M" --tokens 1 -n
expect run_unknown_flag 2 "unknown option '--frob'" "$B" run -m "$M" --tokens 1 --frob
expect run_stray_argument 2 "unexpected argument 'extra'" "$B" run -m "$M" --tokens 1 extra
expect run_top_p_zero 2 "--top-p must be > 0 and <= 1, got 0" "$B" run -m "$M" --tokens 1 --top-p 0
expect run_top_p_big 2 "--top-p must be" "$B" run -m "$M" --tokens 1 --top-p=1.5
expect run_top_k_negative 2 "--top-k must be >= 0" "$B" run -m "$M" --tokens 1 --top-k -1
expect run_temp_nan 2 "--temp must be a finite number" "$B" run -m "$M" --tokens 1 --temp nan
expect run_min_p_range 2 "--min-p must be" "$B" run -m "$M" --tokens 1 --min-p 2
expect run_repeat_penalty_zero 2 "--repeat-penalty must be > 0" "$B" run -m "$M" --tokens 1 \
    --repeat-penalty 0
expect run_seed_bad 2 "--seed expects an integer" "$B" run -m "$M" --tokens 1 --seed x
expect run_backend_bad 2 "--backend must be cpu, cuda or auto" "$B" run -m "$M" --tokens 1 \
    --backend tpu
expect run_text_prompt_no_model 1 "needs the tokenizer of '$M'" "$B" run -m "$M" -p "hello"
expect run_tokens_and_text 2 "either --tokens or -p" "$B" run -m "$M" --tokens 1 -p hi
expect run_model_missing 1 "cannot open model '$M'" "$B" run -m "$M" --tokens 1
expect info_missing_model 2 "missing -m" "$B" info
expect info_bad_ctx 2 "-c must be >= 1, got 0" "$B" info -m "$M" -c 0
expect info_unknown_flag 2 "unknown option '--yaml'" "$B" info -m "$M" --yaml
expect info_model_missing 1 "cannot open model" "$B" info -m "$M"
expect logits_missing_output 2 "missing -o" "$B" logits -m "$M" --tokens 1
expect logits_missing_tokens 2 "missing --tokens" "$B" logits -m "$M" -o "$tmp/x.safetensors"
expect logits_bad_tokens 2 "token 1 'a' is not a token id" "$B" logits -m "$M" --tokens a -o x
expect logits_missing_model 2 "missing -m" "$B" logits --tokens 1 -o "$tmp/x.safetensors"

# ---- with a model: the demo checkpoint ----------------------------------------------------------
if ! "$B" demo --help 2>/dev/null | grep -q -e "--write"; then
    for t in info_text info_json run_same_seed run_other_seed run_speed_report run_ids_in_vocab \
        run_stop_ids run_out_of_vocab run_ctx_too_small run_context_full run_text_prompt \
        run_text_prompt_no_tokenizer run_text_prompt_out_of_vocab logits_run \
        logits_shape logits_argmax_is_greedy; do
        skip "$t" "glimmer demo has no --write to make a checkpoint"
    done
    exit $failed
fi
D=$tmp/model
if ! "$B" demo --write "$D" >"$tmp/out" 2>"$tmp/err"; then
    fail demo_write "glimmer demo --write failed: $(head -c 400 "$tmp/err")"
    exit 1
fi

expect info_text 0 "^vocab +[0-9]+" "$B" info -m "$D" -c 64
grep -q "session memory" "$tmp/out" || fail info_text_session "no session memory line"
expect info_json 0 '"vocab_size": [0-9]+' "$B" info -m "$D" --json
V=$(sed -n 's/.*"vocab_size": \([0-9]*\).*/\1/p' "$tmp/out")
STOPS=$(tr -d ' \n' <"$tmp/out" | sed -n 's/.*"stop_ids":\[\([0-9,]*\)\].*/\1/p' | tr ',' ' ')
if [ -z "$V" ]; then
    fail info_json_vocab "no vocab_size in: $(head -c 300 "$tmp/out")"
    exit 1
fi
for k in layout quantization n_full_layers n_sliding_layers n_tensors n_text_tensors \
    file_bytes text_weight_bytes session stop_ids backend; do
    grep -q "\"$k\"" "$tmp/out" || fail "info_json_$k" "JSON lacks \"$k\""
done

P=1,5,7,11
SAMPLE="--temp 1.5 --top-k 0 --top-p 1 --min-p 0 --ignore-eos"
"$B" run -m "$D" --tokens $P -n 24 -s 1234 $SAMPLE >"$tmp/a" 2>"$tmp/a.err"
ra=$?
"$B" run -m "$D" --tokens $P -n 24 -s 1234 $SAMPLE >"$tmp/b" 2>/dev/null
rb=$?
"$B" run -m "$D" --tokens $P -n 24 -s 99 $SAMPLE >"$tmp/c" 2>/dev/null
if [ $ra -ne 0 ] || [ $rb -ne 0 ]; then
    fail run_same_seed "exit $ra / $rb: $(head -c 400 "$tmp/a.err")"
elif ! cmp -s "$tmp/a" "$tmp/b"; then
    fail run_same_seed "same seed, different ids: $(cat "$tmp/a") vs $(cat "$tmp/b")"
elif [ "$(wc -w <"$tmp/a")" -ne 24 ]; then
    fail run_same_seed "expected 24 ids with --ignore-eos, got: $(cat "$tmp/a")"
else
    pass run_same_seed
fi
# 24 draws at temperature 1.5 over the whole vocabulary: two seeds agreeing on all is hopeless
if cmp -s "$tmp/a" "$tmp/c"; then fail run_other_seed "seeds 1234 and 99 gave the same ids"
else pass run_other_seed; fi
if grep -q -E "^prompt: 4 tokens in [0-9.]+ s, [0-9.]+ tokens/s" "$tmp/a.err" &&
    grep -q -E "^decode: 23 tokens in [0-9.]+ s, [0-9.]+ tokens/s" "$tmp/a.err"; then
    pass run_speed_report
else
    fail run_speed_report "stderr: $(cat "$tmp/a.err")"
fi
bad=""
for id in $(cat "$tmp/a"); do
    case $id in *[!0-9]*) bad="$bad $id" ;; *) [ "$id" -lt "$V" ] || bad="$bad $id" ;; esac
done
if [ -z "$bad" ]; then pass run_ids_in_vocab; else fail run_ids_in_vocab "bad ids:$bad"; fi

# greedy, long: a stop id may only be the last id printed
expect run_stop_ids 0 "" "$B" run -m "$D" --tokens $P -n 200 --temp 0
n=$(wc -w <"$tmp/out")
i=0
early=""
for id in $(cat "$tmp/out"); do
    i=$((i + 1))
    for s in $STOPS; do [ "$id" = "$s" ] && [ $i -lt "$n" ] && early="$id at $i of $n"; done
done
if [ -n "$early" ]; then fail run_stop_ids_last "stop id printed before the end: $early"
else pass run_stop_ids_last; fi

expect run_out_of_vocab 2 "token id $V .*vocab size is $V" "$B" run -m "$D" --tokens 1,$V,2
expect run_ctx_too_small 2 "the prompt has 4 tokens; the context is 2" "$B" run -m "$D" \
    --tokens $P -c 2
expect run_context_full 0 "stopped: context full" "$B" run -m "$D" --tokens $P -n 10 -c 6 \
    --ignore-eos

# -p: the demo checkpoint has no tokenizer.json (an error that says so); with a tiny byte-level
# BPE tokenizer.json added (tests/support/tiny_tokenizer.json), "hi hi" is BOS 1, "hi" 5, " hi" 7,
# and must generate exactly what --tokens 1,5,7 does; "hix" holds id 600, outside the demo
# vocabulary
expect run_text_prompt_no_tokenizer 1 "has no tokenizer.json" "$B" run -m "$D" -p "hi"
cp "$(dirname "$0")/support/tiny_tokenizer.json" "$D/tokenizer.json"
"$B" run -m "$D" -p "hi hi" --ids -n 6 --temp 0 --ignore-eos >"$tmp/p1" 2>"$tmp/p1.err"
rp=$?
"$B" run -m "$D" --tokens 1,5,7 -n 6 --temp 0 --ignore-eos >"$tmp/p2" 2>/dev/null
if [ $rp -ne 0 ]; then fail run_text_prompt "exit $rp: $(head -c 400 "$tmp/p1.err")"
elif ! cmp -s "$tmp/p1" "$tmp/p2"; then
    fail run_text_prompt "-p 'hi hi' gave $(cat "$tmp/p1"), --tokens 1,5,7 gave $(cat "$tmp/p2")"
elif ! grep -q "^prompt: 3 tokens" "$tmp/p1.err"; then
    fail run_text_prompt "prompt was not 3 tokens: $(cat "$tmp/p1.err")"
else pass run_text_prompt; fi
expect run_text_prompt_out_of_vocab 2 "token id 600 \(token 3 of the prompt\).*vocab size is $V" \
    "$B" run -m "$D" -p "hix"
rm -f "$D/tokenizer.json"

expect logits_out_of_vocab 2 "token id $V .*vocab size is $V" "$B" logits -m "$D" \
    --tokens $V -o "$tmp/l.safetensors"

# logits: shape from the header, size from the file, and the last row's argmax = greedy's pick
T=5
L=$tmp/l.safetensors
expect logits_run 0 "wrote" "$B" logits -m "$D" --tokens 1,5,7,11,13 -o "$L"
if [ -f "$L" ]; then
    hl=$(od -An -tu8 -N8 "$L" | tr -d ' ')
    hdr=$(dd if="$L" bs=1 skip=8 count="$hl" 2>/dev/null | tr -d ' \n')
    size=$(wc -c <"$L")
    want=$((8 + hl + T * V * 4 + T * 4))
    if ! echo "$hdr" | grep -q "\"logits\":{\"dtype\":\"F32\",\"shape\":\[$T,$V\]"; then
        fail logits_shape "header: $hdr"
    elif ! echo "$hdr" | grep -q "\"tokens\":{\"dtype\":\"I32\",\"shape\":\[$T\]"; then
        fail logits_shape "no tokens I32 [$T] in header: $hdr"
    elif [ "$size" -ne "$want" ]; then
        fail logits_shape "file is $size bytes, expected $want"
    else
        pass logits_shape
    fi
    # row T-1 as text (od prints 8 significant digits; a tie at that precision makes the check
    # meaningless, so it skips then)
    off=$(echo "$hdr" | sed -n 's/.*"logits":{[^}]*"data_offsets":\[\([0-9]*\),.*/\1/p')
    od -An -v -tf4 -j $((8 + hl + off + (T - 1) * V * 4)) -N $((V * 4)) "$L" |
        tr -s ' ' '\n' | sed '/^$/d' >"$tmp/row"
    top=$(awk 'NR==1||$1>m{m=$1;i=NR-1} END{print i" "m}' "$tmp/row")
    ties=$(awk -v m="${top#* }" '$1==m' "$tmp/row" | wc -l)
    g=$("$B" run -m "$D" --tokens 1,5,7,11,13 -n 1 --temp 0 2>/dev/null)
    if [ "$(wc -l <"$tmp/row")" -ne "$V" ]; then fail logits_argmax_is_greedy "row has $(wc -l <"$tmp/row") values"
    elif [ "$ties" -ne 1 ]; then skip logits_argmax_is_greedy "top logit tied at 8 digits"
    elif [ "$g" != "${top% *}" ]; then
        fail logits_argmax_is_greedy "argmax of the last row is ${top% *}, greedy run picked $g"
    else pass logits_argmax_is_greedy; fi
else
    fail logits_shape "no file written"
fi
exit $failed
