// reference.mjs: the @huggingface/tokenizers side of the differential tokenizer test.
//
//   node reference.mjs cases TOKENIZER.json GROUP_PREFIX OUT.jsonl
//     Builds the test corpus (corpus.txt sections and lines, hand-written edge cases, seeded
//     random strings, invalid UTF-8) and writes one JSON line per (text, mode) with the ids
//     @huggingface/tokenizers produces (see tokdiff.c for the line format).
//   node reference.mjs benchtext OUT.txt MEGABYTES
//     Writes the benchmark text (corpus sections and seeded random prose, mixed).
//   node reference.mjs bench TOKENIZER.json TEXT SECONDS
//     Encodes TEXT repeatedly for about SECONDS; prints {"mb_per_s": ..., ...} as JSON.
//
// Hugging Face only takes valid UTF-8, so texts with invalid bytes are referenced piecewise,
// matching what glimmer documents: valid stretches are encoded normally, and each run of bytes
// that starts no valid UTF-8 character goes to the BPE model as one piece (byte-level form).
import { readFileSync, writeFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const here = new URL(".", import.meta.url).pathname;

// ---- corpus ------------------------------------------------------------------------------

function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function corpusSections() {
  const text = readFileSync(here + "corpus.txt", "utf8");
  const out = [];
  for (const part of text.split(/^=== /m).slice(1)) {
    const nl = part.indexOf("\n");
    out.push({ name: part.slice(0, nl), text: part.slice(nl + 1) });
  }
  return out;
}

const POOLS = [
  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
  "0123456789", "0123456789",
  " ", " ", " ", "  ", "\t", "\n", "\r\n", "\r", "\n\n",
  ".,;:!?-_'\"()[]{}<>/\\|@#$%^&*+=~`",
  "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'D",
  "\u00a0\u0085\u2028\u2029\u3000\u200b\u200d\ufeff\u2009\u180e\u000b\u000c",
  "éèêëàâäôöûüçñßøåæœÉÈÀÇÑ",
  "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
  "あいうえおかきくけこアイウエオカキクケコー",
  "가나다라마바사아자차카타파하",
  "абвгдежзийклмнопрстуфхцчшщъыьэюяАБВГД",
  "αβγδεζηθικλμνξοπρστυφχψωΣΩ",
  "مرحبابالعالم", "שלוםעולם", "नमस्तेदुनिया", "สวัสดีชาวโลก",
  "\u0301\u0308\u0303\u0327\u20dd\u093f\u0e31",
  "😀👍🏽🎉🤖🚀✨❤️🇫🇷👨‍👩‍👧",
  "<|eot|>", "<|start|>", "<|message|>", "<|eom|>", "<|reserved_special_token_77|>", "<|",
];

function randomString(rand, maxLen) {
  const len = 1 + Math.floor(rand() * maxLen);
  let s = "";
  while (s.length < len) {
    const pool = POOLS[Math.floor(rand() * POOLS.length)];
    const chars = Array.from(pool);
    const runs = 1 + Math.floor(rand() * 4);
    if (pool.length > 4 && !pool.startsWith("<|") && !pool.startsWith("'")) {
      for (let i = 0; i < runs; i++) s += chars[Math.floor(rand() * chars.length)];
    } else {
      s += pool;
    }
  }
  return s;
}

const INVALID = [
  [0xff], [0xfe, 0xff], [0xc3, 0x28], [0xe4, 0xb8], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80],
  [0xc0, 0xaf], [0x80], [0xbf, 0x80, 0x80], [0xf0, 0x9f, 0x98], [0xe2, 0x82], [0xc2],
];

function corpus() {
  const cases = []; // {name, bytes: Buffer}
  const add = (name, x) => cases.push({ name, bytes: Buffer.isBuffer(x) ? x : Buffer.from(x, "utf8") });
  const sections = corpusSections();
  for (const s of sections) {
    add(s.name, s.text);
    s.text.split("\n").forEach((line, i) => { if (line) add(`${s.name}:${i + 1}`, line); });
  }
  add("all_sections", sections.map((s) => s.text).join("\n"));
  const edge = {
    empty: "", space: " ", two_spaces: "  ", newline: "\n", crlf: "a\r\nb\r\n\r\nc", cr_only: "a\rb\r\r",
    spaces_then_word: "      word", word_then_spaces: "word      ", spaces_newline: "a   \n   b",
    tabs_newlines: "\t\t\n\n\t \n", only_newlines: "\n\n\n\n\n", nbsp: "a\u00a0b\u00a0\u00a0c",
    nel: "a\u0085b \u0085 c\u0085", line_sep: "a\u2028b\u2029c", ideographic_space: "日本\u3000語 \u3000",
    bom: "\ufeffhello \ufeff world", zwj: "a\u200db\u200bc", combining: "e\u0301 a\u0308 n\u0303 \u0301x",
    long_s: "'ſ 'ſt IT'ſ", kelvin: "'\u212a 5\u212a", long_number: "1234567890".repeat(20),
    long_word: "supercalifragilisticexpialidocious".repeat(30), long_punct: "=".repeat(3000),
    long_spaces: " ".repeat(5000) + "x", long_newlines: "\n".repeat(3000), dots: ".".repeat(257),
    mixed_long: "ab1 ".repeat(2000), apostrophes: "''''''s'''S'''", digits_letters: "abc123def4567ghi89",
    unicode_digits: "٣٤٥ ৩৪৫ ३४५ 123٤٥", specials_glued: "x<|eot|>y<|eot|><|eot|>z", partial_special: "<|eot|",
    bos_text: "<|begin_of_text|>Hello", reserved_out_of_range: "<|reserved_special_token_9999|>",
    surrogate_pairs: "𝒜𝒷𝒸 𠀀𠀁 🀄", private_use: "\ue000\uf8ff", noncharacter: "\ufffe\uffff", replacement: "\ufffd\ufffd",
    control: "\u0000\u0001\u0007\u001b[31mred\u001b[0m\u007f",
  };
  for (const [name, text] of Object.entries(edge)) add(name, text);
  // a long text (the benchmark's mix) so the encoder's per-call cache is exercised too
  add("long_mixed_text", benchText(0.25));
  const rand = mulberry32(20260401);
  for (let i = 0; i < 400; i++) add(`random${i}`, randomString(rand, i < 300 ? 40 : 400));
  // invalid UTF-8: inserted into text, alone, and at the edges
  INVALID.forEach((bad, i) => {
    const b = Buffer.from(bad);
    add(`invalid${i}_alone`, b);
    add(`invalid${i}_mid`, Buffer.concat([Buffer.from("hello "), b, Buffer.from(" world 日本")]));
    add(`invalid${i}_glued`, Buffer.concat([Buffer.from("abc"), b, Buffer.from("def  \n"), b, b]));
    add(`invalid${i}_special`, Buffer.concat([Buffer.from("<|eot|>"), b, Buffer.from("<|start|>x")]));
  });
  for (let i = 0; i < 60; i++) {
    const parts = [];
    for (let k = 0; k < 6; k++) {
      parts.push(Buffer.from(randomString(rand, 20)));
      const n = 1 + Math.floor(rand() * 4);
      parts.push(Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256))));
    }
    add(`random_bytes${i}`, Buffer.concat(parts));
  }
  return cases;
}

// ---- reference encoding --------------------------------------------------------------------

function byteToChar() {
  const map = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    map[b] = String.fromCodePoint(printable ? b : 256 + extra++);
  }
  return map;
}
const B2C = byteToChar();

// Length of the valid UTF-8 sequence at b[i] (1..4) or 0: the same rule as tokenizer.c.
function seqLen(b, i) {
  const c = b[i], n = b.length - i;
  const cont = (k) => (b[i + k] & 0xc0) === 0x80;
  if (c < 0x80) return 1;
  if (c < 0xc2) return 0;
  if (c < 0xe0) return n >= 2 && cont(1) ? 2 : 0;
  if (c < 0xf0) {
    if (n < 3 || !cont(1) || !cont(2)) return 0;
    if (c === 0xe0 && b[i + 1] < 0xa0) return 0;
    if (c === 0xed && b[i + 1] >= 0xa0) return 0;
    return 3;
  }
  if (c < 0xf5) {
    if (n < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
    if (c === 0xf0 && b[i + 1] < 0x90) return 0;
    if (c === 0xf4 && b[i + 1] >= 0x90) return 0;
    return 4;
  }
  return 0;
}

function loadTokenizers(path) {
  const json = JSON.parse(readFileSync(path, "utf8"));
  const config = { clean_up_tokenization_spaces: false };
  const full = new Tokenizer(json, config);
  // "Special tokens are text": the same tokenizer without its special added tokens.
  const plainJson = { ...json, added_tokens: json.added_tokens.filter((t) => !t.special), post_processor: null };
  const plain = new Tokenizer(plainJson, config);
  // @huggingface/tokenizers 0.2.0 translates \s to Unicode White_Space (Oniguruma's meaning, as
  // the Rust library has it) in Split patterns, but its ByteLevel(use_regex) hard-codes the GPT-2
  // pattern as a JavaScript regex, where \s also matches U+FEFF and misses U+0085. We correct
  // that one pattern to the meaning Rust gives it; GLIM_TOKDIFF_RAW_BYTELEVEL=1 keeps it as is.
  if (!process.env.GLIM_TOKDIFF_RAW_BYTELEVEL) {
    for (const t of [full, plain]) patchByteLevel(t.pre_tokenizer);
  }
  return { full, plain, bos: json.added_tokens.find((t) => t.content === "<|begin_of_text|>")?.id };
}

const GPT2_WHITE_SPACE = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+/gu;

function patchByteLevel(pt) {
  if (!pt) return;
  if (pt.pattern instanceof RegExp && pt.use_regex !== undefined) pt.pattern = GPT2_WHITE_SPACE;
  for (const sub of pt.tokenizers ?? pt.pre_tokenizers ?? []) patchByteLevel(sub);
}

function encodeBytes(tk, bytes, special, bos) {
  const tok = special ? tk.full : tk.plain;
  const ids = [];
  if (bos) ids.push(tk.bos);
  let i = 0;
  while (i < bytes.length) {
    let j = i;
    while (j < bytes.length) { const k = seqLen(bytes, j); if (!k) break; j += k; }
    if (j > i) ids.push(...tok.encode(bytes.subarray(i, j).toString("utf8"), { add_special_tokens: false }).ids);
    let k = j;
    while (k < bytes.length && seqLen(bytes, k) === 0) k++;
    if (k > j) {
      const piece = Array.from(bytes.subarray(j, k), (b) => B2C[b]).join("");
      for (const t of tok.model([piece])) ids.push(tok.model.tokens_to_ids.get(t));
    }
    i = k;
  }
  return ids;
}

function isValidUtf8(bytes) {
  for (let i = 0; i < bytes.length;) { const k = seqLen(bytes, i); if (!k) return false; i += k; }
  return true;
}

function writeCases(tokPath, prefix, out) {
  const tk = loadTokenizers(tokPath);
  const modes = prefix === "muse"
    ? [{ group: "muse/plain+bos", special: false, bos: true }, { group: "muse/special", special: true, bos: false }]
    : [{ group: `${prefix}/plain+bos`, special: false, bos: true }];
  const lines = [];
  for (const c of corpus()) {
    for (const m of modes) {
      const ids = encodeBytes(tk, c.bytes, m.special, m.bos);
      const decoded = isValidUtf8(c.bytes) && ids.length
        ? Buffer.from(tk.full.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }), "utf8").toString("base64")
        : null;
      lines.push(JSON.stringify({ group: m.group, name: c.name, b64: c.bytes.toString("base64"), special: m.special, bos: m.bos, ids, decoded_b64: decoded }));
    }
  }
  writeFileSync(out, lines.join("\n") + "\n");
  console.error(`wrote ${lines.length} cases to ${out}`);
}

// ---- benchmark -----------------------------------------------------------------------------

function writeBenchText(out, megabytes) {
  writeFileSync(out, benchText(megabytes));
}

function benchText(megabytes) {
  const sections = corpusSections().map((s) => s.text);
  const rand = mulberry32(7);
  const words = sections.join(" ").split(/\s+/).filter(Boolean);
  let parts = [], size = 0;
  while (size < megabytes * 1e6) {
    let p;
    if (rand() < 0.3) p = sections[Math.floor(rand() * sections.length)];
    else {
      const n = 20 + Math.floor(rand() * 200);
      p = Array.from({ length: n }, () => words[Math.floor(rand() * words.length)]).join(" ") + ".\n\n";
    }
    parts.push(p);
    size += Buffer.byteLength(p);
  }
  return parts.join("");
}

function bench(tokPath, textPath, seconds) {
  const t0 = performance.now();
  const tk = loadTokenizers(tokPath);
  const load = (performance.now() - t0) / 1e3;
  const text = readFileSync(textPath, "utf8");
  const bytes = Buffer.byteLength(text);
  let reps = 0, tokens = 0;
  const t1 = performance.now();
  let el;
  do {
    tokens = tk.full.encode(text).ids.length;
    reps++;
    el = (performance.now() - t1) / 1e3;
  } while (el < seconds);
  console.log(JSON.stringify({ bytes, tokens, reps, seconds: +el.toFixed(3), mb_per_s: +(bytes * reps / el / 1e6).toFixed(2), load_seconds: +load.toFixed(3) }));
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === "cases" && args.length === 3) writeCases(args[0], args[1], args[2]);
else if (cmd === "benchtext" && args.length === 2) writeBenchText(args[0], Number(args[1]));
else if (cmd === "bench" && args.length === 3) bench(args[0], args[1], Number(args[2]));
else {
  console.error("usage: node reference.mjs cases TOK.json PREFIX OUT.jsonl | benchtext OUT.txt MB | bench TOK.json TEXT SECONDS");
  process.exit(2);
}
