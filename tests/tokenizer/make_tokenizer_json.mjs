// make_tokenizer_json.mjs OUT.json [muse|gpt2|llama3]
//
// Builds a realistic Hugging Face tokenizer.json from the o200k_base ranks that js-tiktoken
// ships, shaped like Muse Glimmer's (MODEL.md section 4):
//   muse: BPE(ignore_merges=true, merges as ["a","b"] pairs), pre-tokenizer
//         Sequence[Split(Regex(O200K_PATTERN), isolated), ByteLevel(use_regex=false)],
//         2,048 special added tokens at ids 200000+i, TemplateProcessing that prepends
//         <|begin_of_text|>, ByteLevel decoder.
//   gpt2: the same vocabulary with the GPT-2 layout instead: merges as "a b" strings,
//         ignore_merges=false, pre-tokenizer ByteLevel(use_regex=true).
//   llama3: the same vocabulary in Llama 3's layout: Split with the cl100k-style pattern that
//         starts with a top-level (?i:'s|...), "a b" merges, ignore_merges=true, post-processor
//         Sequence[ByteLevel, TemplateProcessing].
// o200k_base has ranks 0..199997; ids 199998 and 199999 stay unassigned (a hole in the vocab,
// which every consumer must tolerate). Merges are reconstructed from the ranks the way the
// tiktoken -> tokenizers conversion does: for every token, each split into two tokens that both
// exist, ordered by the ranks of (left, right); all merges ordered by the rank of the result.
import { writeFileSync } from "node:fs";
import o200k from "js-tiktoken/ranks/o200k_base";

const O200K_PATTERN =
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?" +
  "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?" +
  "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Named Muse Glimmer special tokens: index i -> name (id 200000 + i).
const NAMED = {
  0: "<|begin_of_text|>", 1: "<|end_of_text|>", 7: "<|eom|>", 8: "<|eot|>",
  18: "<|finetune_right_pad|>", 22: "<|start|>", 23: "<|message|>", 80: "<|image_start|>",
  81: "<|image_end|>", 82: "<|vid_start|>", 83: "<|vid_end|>", 87: "<|vid_frame_separator|>",
  90: "<|image|>", 91: "<|video|>", 92: "<|patch|>",
};

// GPT-2's reversible byte -> printable character map.
function byteToChar() {
  const map = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    map[b] = String.fromCodePoint(printable ? b : 256 + extra++);
  }
  return map;
}

function loadRanks() {
  const ranks = new Map(); // latin1 string of the bytes -> rank
  for (const line of o200k.bpe_ranks.split("\n")) {
    if (!line) continue;
    const [, offset, ...tokens] = line.split(" ");
    tokens.forEach((b64, i) => ranks.set(Buffer.from(b64, "base64").toString("latin1"), Number(offset) + i));
  }
  return ranks;
}

function build(variant) {
  const b2c = byteToChar();
  const enc = (latin1) => Array.from(latin1, (c) => b2c[c.charCodeAt(0)]).join("");
  const ranks = loadRanks();
  const byRank = [...ranks.entries()].sort((a, b) => a[1] - b[1]);
  const vocab = {};
  const merges = [];
  for (const [tok, rank] of byRank) {
    vocab[enc(tok)] = rank;
    if (tok.length < 2) continue;
    const local = [];
    for (let i = 1; i < tok.length; i++) {
      const l = tok.slice(0, i), r = tok.slice(i);
      if (ranks.has(l) && ranks.has(r)) local.push([l, r]);
    }
    local.sort((a, b) => ranks.get(a[0]) - ranks.get(b[0]) || ranks.get(a[1]) - ranks.get(b[1]));
    for (const [l, r] of local) merges.push(variant === "muse" ? [enc(l), enc(r)] : `${enc(l)} ${enc(r)}`);
  }
  const added = [];
  for (let i = 0; i < 2048; i++) {
    added.push({
      id: 200000 + i, content: NAMED[i] ?? `<|reserved_special_token_${i}|>`,
      single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    });
  }
  const split = (pattern) => ({
    type: "Sequence",
    pretokenizers: [
      { type: "Split", pattern: { Regex: pattern }, behavior: "Isolated", invert: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  });
  const preTokenizer = variant === "gpt2"
    ? { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }
    : split(variant === "llama3" ? LLAMA3_PATTERN : O200K_PATTERN);
  const template = {
    type: "TemplateProcessing",
    single: [{ SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
    pair: [
      { SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
      { SpecialToken: { id: "<|begin_of_text|>", type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } },
    ],
    special_tokens: { "<|begin_of_text|>": { id: "<|begin_of_text|>", ids: [200000], tokens: ["<|begin_of_text|>"] } },
  };
  const postProcessor = variant === "llama3"
    ? { type: "Sequence", processors: [{ type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true }, template] }
    : template;
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: preTokenizer,
    post_processor: postProcessor,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false,
      ignore_merges: variant !== "gpt2", vocab, merges,
    },
  };
}

const [out, variant = "muse"] = process.argv.slice(2);
if (!out || !["muse", "gpt2", "llama3"].includes(variant)) {
  console.error("usage: node make_tokenizer_json.mjs OUT.json [muse|gpt2|llama3]");
  process.exit(2);
}
const json = build(variant);
writeFileSync(out, JSON.stringify(json));
console.error(`wrote ${out}: ${Object.keys(json.model.vocab).length} vocab, ${json.model.merges.length} merges, ` +
  `${json.added_tokens.length} added tokens`);
