#!/bin/sh
# tokenizer.test.sh BUILD: differential test of glimmer's tokenizer against @huggingface/tokenizers
# (npm) on a 200k-vocabulary tokenizer.json built from js-tiktoken's o200k_base ranks plus Muse
# Glimmer's 2,048 special tokens (tests/tokenizer/make_tokenizer_json.mjs), in two layouts:
#   muse: Split(O200K regex) + ByteLevel, ignore_merges, ["a","b"] merges, BOS template
#   gpt2: ByteLevel(use_regex=true), "a b" merges, no ignore_merges
#   llama3: Split(cl100k-style regex with a top-level (?i:...)) + ByteLevel, "a b" merges,
#           ignore_merges, post-processor Sequence[ByteLevel, TemplateProcessing]
# Ids must be identical on every corpus text (tests/tokenizer/corpus.txt, edge cases, seeded random
# strings, invalid UTF-8), decode(encode(x)) == x, and the streaming decoder must agree.
# Also checks `glimmer tokenize` / `glimmer detokenize` on the same file.
# Prints PASS/FAIL/SKIP lines; SKIPs (with the reason) when node or the npm registry is missing.
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
dir="$root/tests/tokenizer"
work="$build/tokenizer"
mkdir -p "$work"

skip_all() {
    for t in tokenizer_diff[muse] tokenizer_diff[gpt2] tokenizer_diff[llama3] chat_tokens_vs_hf tokenizer_cli chat_cli; do
        echo "SKIP $t: $1"
    done
    exit 0
}

command -v node >/dev/null 2>&1 || skip_all "node is not installed"
command -v npm >/dev/null 2>&1 || skip_all "npm is not installed"
if [ ! -d "$dir/node_modules/@huggingface/tokenizers" ] || [ ! -d "$dir/node_modules/js-tiktoken" ]; then
    if ! (cd "$dir" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1); then
        skip_all "npm could not install @huggingface/tokenizers and js-tiktoken (see $work/npm.log)"
    fi
fi

# The C side: a small driver linked against the library (only the tokenizer objects are pulled).
cc=${CC:-cc}
if ! $cc -std=c11 -D_GNU_SOURCE -O2 -I"$root/include" -I"$root/src" -o "$work/tokdiff" \
        "$dir/tokdiff.c" "$build/libglimmer.a" -ljansson -lpcre2-8 -lm -pthread 2>"$work/cc.log"; then
    echo "FAIL tokenizer_diff: cannot build tests/tokenizer/tokdiff.c (see $work/cc.log)"
    cat "$work/cc.log"
    exit 1
fi

status=0
for variant in muse gpt2 llama3; do
    json="$work/$variant.json"
    # cached: rebuilt only when the generator changed
    if [ ! -s "$json" ] || [ "$dir/make_tokenizer_json.mjs" -nt "$json" ]; then
        if ! node "$dir/make_tokenizer_json.mjs" "$json.tmp" "$variant" 2>"$work/make_$variant.log"; then
            echo "FAIL tokenizer_diff[$variant]: building $json failed"; cat "$work/make_$variant.log"; status=1; continue
        fi
        mv "$json.tmp" "$json"
    fi
    cases="$work/cases_$variant.jsonl"
    if ! node "$dir/reference.mjs" cases "$json" "$variant" "$cases" 2>"$work/ref_$variant.log"; then
        echo "FAIL tokenizer_diff[$variant]: the reference run failed"; cat "$work/ref_$variant.log"; status=1; continue
    fi
    "$work/tokdiff" "$json" "$cases" 2>"$work/diff_$variant.log" || status=1
    head -c 4000 "$work/diff_$variant.log"
done

# The chat renderer's tokens (template specials as ids, text as text, one BOS) must equal
# Hugging Face's encode(rendered text, add_special_tokens=false).
if "$work/tokdiff" --chat-tokens "$work/muse.json" >"$work/chat_tokens.json" 2>"$work/chat_tokens.log" &&
    (cd "$dir" && node --input-type=module -e '
import { Tokenizer } from "@huggingface/tokenizers";
import { readFileSync } from "node:fs";
const t = new Tokenizer(JSON.parse(readFileSync(process.argv[1], "utf8")), { clean_up_tokenization_spaces: false });
const c = JSON.parse(readFileSync(process.argv[2], "utf8"));
const want = t.encode(c.text, { add_special_tokens: false }).ids;
const same = want.length === c.ids.length && want.every((x, i) => x === c.ids[i]);
const bos = c.ids.filter((x) => x === 200000).length;
console.log(same && bos === 1 ? `PASS chat_tokens_vs_hf: ${c.ids.length} ids of a rendered tool conversation identical, one BOS`
  : `FAIL chat_tokens_vs_hf: ours ${c.ids.length} ids, hf ${want.length}, BOS count ${bos}`);
process.exit(same && bos === 1 ? 0 : 1);' "$work/muse.json" "$work/chat_tokens.json"); then :; else
    echo "FAIL chat_tokens_vs_hf: see $work/chat_tokens.log"; status=1
fi

# CLI: glimmer tokenize / detokenize against the reference ids of one text.
g="$build/glimmer"
if [ ! -x "$g" ]; then
    echo "SKIP tokenizer_cli: $g is not built"
else
    text="Hello <|eot|> wörld 😀  12345
  x"
    want=$(cd "$dir" && node --input-type=module -e '
import { Tokenizer } from "@huggingface/tokenizers";
import { readFileSync } from "node:fs";
const t = new Tokenizer(JSON.parse(readFileSync(process.argv[1], "utf8")), { clean_up_tokenization_spaces: false });
console.log(JSON.stringify(t.encode(process.argv[2]).ids));' "$work/muse.json" "$text")
    got=$("$g" tokenize -m "$work/muse.json" --special --text "$text" | tr -d ' ')
    back=$(printf '%s' "$got" | "$g" detokenize -m "$work/muse.json")
    nobos=$(printf '%s' "$text" | "$g" tokenize -m "$work/muse.json" --no-bos | tr -d ' ')
    if [ "$got" = "$want" ] && [ "$back" = "<|begin_of_text|>$text" ] && [ "${nobos#\[200000}" = "$nobos" ] \
        && [ "$nobos" != "$got" ]; then
        echo "PASS tokenizer_cli: tokenize --special matches the reference, detokenize round-trips, --no-bos has no BOS"
    else
        echo "FAIL tokenizer_cli: got $got want $want; detokenized '$back'; no-bos $nobos"
        status=1
    fi
fi
# glimmer chat on a tiny random model with the full vocabulary: turn 2 must evaluate only its own
# tokens (history stays in the KV cache): new = ids of "<|start|>user<|message|>...<|eot|><|start|>assistant"
# and cache after = cache before + new + generated (+1 for the closing <|eot|> when cut by -n).
if [ -x "$g" ]; then
    model=$(sh "$root/tests/support/chat_model.sh" "$build" 2>"$work/chatmodel.err") || model="$work/chatmodel"
    printf 'Hello there\nsecond turn\n' | "$g" chat -m "$model" -n 5 --temp 0 --date 01-02-2027 -t 2 \
        >"$work/chat.out" 2>"$work/chat.err"
    rc=$?
    want_new=$("$g" tokenize -m "$work/muse.json" --special --no-bos \
        --text "<|start|>user<|message|>second turn<|eot|><|start|>assistant" | tr -cd ',' | wc -c)
    want_new=$((want_new + 1))
    set -- $(sed -n 's/^\[turn [0-9]*: \([0-9]*\) new prompt tokens.*, \([0-9]*\) generated .*, \([0-9]*\) in cache.*/\1 \2 \3/p' "$work/chat.err" | tr '\n' ' ')
    if [ $rc -eq 0 ] && [ $# -eq 6 ] && [ "$4" -eq "$want_new" ] && [ $(($6 - $3 - $4 - $5)) -ge 0 ] && [ $(($6 - $3 - $4 - $5)) -le 1 ]; then
        echo "PASS chat_cli: turn 1 evaluated $1 tokens, turn 2 only its $4 new ones (cache $3 -> $6)"
    else
        echo "FAIL chat_cli: rc $rc, turns: $*; want $want_new new tokens in turn 2 (see $work/chat.err)"
        cat "$work/chat.err"
        status=1
    fi
else
    echo "SKIP chat_cli: $g is not built"
fi
exit $status
