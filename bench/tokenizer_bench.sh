#!/bin/sh
# tokenizer_bench.sh [BUILD] [SECONDS]: encode throughput of glimmer's tokenizer beside
# @huggingface/tokenizers (npm) on the same text in the same run, for the 200k-vocabulary
# tokenizer.json files of tests/tokenizer.test.sh (muse: Split(O200K) + ignore_merges; gpt2:
# ByteLevel regex, no ignore_merges). Writes bench/TOKENIZER.md. Needs node/npm (installs the two
# packages into tests/tokenizer/node_modules when missing) and a built library (make).
set -e
build=${1:-build}
secs=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
dir="$root/tests/tokenizer"
work="$build/tokenizer"
mkdir -p "$work"
[ -d "$dir/node_modules/@huggingface/tokenizers" ] || (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I"$root/include" -I"$root/src" -o "$work/tokdiff" "$dir/tokdiff.c" \
    "$build/libglimmer.a" -ljansson -lpcre2-8 -lm -pthread
[ -s "$work/bench.txt" ] || node "$dir/reference.mjs" benchtext "$work/bench.txt" 2

out="$root/bench/TOKENIZER.md"
tmp="$work/bench_rows.md"
: >"$tmp"
for variant in muse gpt2; do
    json="$work/$variant.json"
    [ -s "$json" ] || node "$dir/make_tokenizer_json.mjs" "$json" "$variant"
    ours=$("$work/tokdiff" --bench "$json" "$work/bench.txt" "$secs")
    ref=$(cd "$dir" && node reference.mjs bench "$json" "$work/bench.txt" "$secs")
    echo "$variant ours: $ours" >&2
    echo "$variant @huggingface/tokenizers: $ref" >&2
    node --input-type=module -e '
const [variant, o, r] = process.argv.slice(1);
const a = JSON.parse(o), b = JSON.parse(r);
const same = a.tokens === b.tokens ? "yes" : `NO (${a.tokens} vs ${b.tokens})`;
console.log(`| ${variant} | ${b.mb_per_s.toFixed(2)} | ${a.mb_per_s.toFixed(2)} | ${(a.mb_per_s / b.mb_per_s).toFixed(1)}x | ${a.tokens} | ${same} | ${b.load_seconds.toFixed(2)} | ${a.load_seconds.toFixed(2)} |`);
' "$variant" "$ours" "$ref" >>"$tmp"
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
hfver=$(node -e 'console.log(require(process.argv[1]).version)' "$dir/node_modules/@huggingface/tokenizers/package.json")
{
    echo "# Tokenizer encode throughput"
    echo
    echo "Written by \`bench/tokenizer_bench.sh\` on $(date -u +%Y-%m-%d) ($cpu, $(nproc) cores; one thread each;"
    echo "node $(node --version), @huggingface/tokenizers $hfver)."
    echo
    echo "Text: \`$(basename "$work/bench.txt")\`, $(wc -c <"$work/bench.txt") bytes (corpus sections of"
    echo "tests/tokenizer/corpus.txt in many scripts, code, emoji, special-token strings, mixed with seeded"
    echo "random prose; \`node tests/tokenizer/reference.mjs benchtext\`). Each side encodes the whole text"
    echo "with BOS and special tokens parsed, repeatedly for ${secs} s, in the same run; MB/s = 10^6 bytes/s."
    echo "Load = reading and building the 200k-vocabulary tokenizer.json (about 12 MB)."
    echo
    echo "| tokenizer.json layout | @huggingface/tokenizers MB/s | glimmer MB/s | speed-up | tokens | same count | load s (npm) | load s (glimmer) |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    cat "$tmp"
    echo
    echo "The npm package is Hugging Face's pure-JavaScript implementation (tokenizers.js), the reference"
    echo 'the tests compare ids with; the Rust library behind Python'"'"'s `tokenizers` is faster than it.'
    echo
    echo "muse: Split(O200K regex, isolated) + ByteLevel, ignore_merges, [\"a\",\"b\"] merges (Muse Glimmer's shape)."
    echo "gpt2: ByteLevel(use_regex) with the GPT-2 regex, \"a b\" merges, no ignore_merges (every piece goes"
    echo "through BPE). Ids are compared token for token by tests/tokenizer.test.sh; here only the counts."
    echo
    echo "Where glimmer's time goes (perf, muse layout): hash probes of the vocabulary and the merge table"
    echo "(cache misses on 200k / 450k-entry tables), PCRE2 JIT matching, UTF-8 validation. Long texts"
    echo "reuse BPE results through a per-call cache; short pieces found whole in the vocabulary skip BPE."
} >"$out"
echo "wrote $out" >&2
cat "$out"
