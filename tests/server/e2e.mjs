// e2e.mjs: end-to-end test of `glimmer serve`, glimmer's OpenAI-compatible HTTP server.
//
//   node tests/server/e2e.mjs --glimmer BUILD/glimmer --model CHECKPOINT_DIR [--work DIR]
//   node tests/server/e2e.mjs --list          (the test names, one a line)
//
// Starts the server on a tiny random checkpoint (with the full 202,048-id vocabulary, so the chat
// format's special tokens exist) and drives it the way clients do: the `openai` npm client for
// valid requests, plain fetch for error cases and the raw SSE framing. It checks
//   - GET /health, GET /v1/models (the id is the checkpoint directory's name, or --model-name);
//   - POST /v1/chat/completions: response shape and usage, sampling options, determinism (greedy;
//     a fixed seed), streaming == non-streaming (client and raw SSE), stop strings, prefix reuse
//     from the KV cache (B, which continues A's conversation, reuses all of A's prompt, and a fresh
//     server with nothing cached gives B the same answer), concurrent streams == the same requests
//     alone, a client that disconnects mid-stream, tool definitions and tool-call histories,
//     tool_choice "required" (a tool call or an error, never plain content), logprobs (greedy
//     tokens are their position's most likely, the tokens' bytes make the content, streamed ==
//     non-streamed);
//   - POST /v1/completions: prompt_tokens == `glimmer tokenize`, token-id prompts, stop strings,
//     a different seed gives a different text, streaming == non-streaming; logprobs (the greedy
//     token is its position's most likely, the alternatives sorted; streamed == non-streamed; a
//     stop string's tokens are not reported) and echo with max_tokens 0
//     (lm-eval's loglikelihood request): the prompt's scores equal a log-softmax of
//     `glimmer logits`' rows, and a generated token's logprob equals its score when echoed;
//   - every documented error (HTTP status and the {"error": {...}} body), the API key, and that the
//     server still answers afterwards and exits 0 on SIGTERM.
// The model is random, so its words mean nothing, and where a chat answer's text lands (content,
// reasoning_content, or neither) depends on whether its tokens happen to follow the chat format.
// Comparisons therefore use whole messages, and the raw text of /v1/completions where a check
// needs visible tokens (a chat check that needs text SKIPs when the answer has none).
// Prints one "PASS name: detail" / "FAIL name: why" line per test (tests/run.sh counts them) and
// exits 1 when anything failed. Every test listed in TESTS reports exactly once.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";

// ---- the tests, in the order they run ------------------------------------------------------------
const ERROR_CASES = [
  "malformed_json", "missing_messages", "messages_not_array", "messages_empty", "unknown_role",
  "n_2", "max_tokens_negative", "temperature_string", "invalid_utf8", "prompt_over_context",
  "tool_call_id_unknown", "tool_choice_unknown", "tool_choice_required_no_tools", "completion_id_out_of_vocab",
  "chat_top_logprobs_alone", "chat_top_logprobs_range", "echo_stream",
  "max_tokens_zero_without_echo", "unknown_path", "wrong_method",
  "body_too_large", "auth_missing", "auth_wrong",
].map((c) => `server_error_${c}`);

const TESTS = [
  "server_start", "server_health", "server_models", "server_auth_right",
  "server_chat_shape", "server_chat_options", "server_chat_deterministic", "server_seed_changes_output",
  "server_chat_stream", "server_chat_stream_sse", "server_chat_logprobs", "server_chat_logprobs_stream",
  "server_chat_stop", "server_completion_prompt_tokens", "server_completion_stop", "server_completion_stream",
  "server_completion_logprobs", "server_completion_logprobs_stream", "server_completion_echo_scores",
  "server_prefix_reuse", "server_concurrent_streams", "server_client_disconnect",
  "server_tools", "server_tools_required", "server_tools_history",
  ...ERROR_CASES,
  "server_alive_after_errors", "server_sigterm",
  "server_fresh_start", "server_fresh_model_name", "server_fresh_cors", "server_fresh_same_answer", "server_fresh_gone_nonstream",
  "server_fresh_sigterm",
  "server_steer",
];

// ---- results ---------------------------------------------------------------------------------------
const reported = new Set();
let anyFailed = false;
function report(verdict, name, detail) {
  if (!TESTS.includes(name)) throw new Error(`internal: ${name} is not in TESTS`);
  if (reported.has(name)) throw new Error(`internal: ${name} reported twice`);
  reported.add(name);
  if (verdict === "FAIL") anyFailed = true;
  console.log(`${verdict} ${name}: ${String(detail).replace(/\s+/g, " ").slice(0, 600)}`);
}
class Skip extends Error {} // thrown when a test's precondition does not hold (a SKIP line)
// Runs one test: fn returns the PASS detail or throws (FAIL with the message; SKIP for Skip).
// Returns fn's value for later tests, or undefined when it did not pass.
async function test(name, fn) {
  try {
    const out = await fn();
    report("PASS", name, typeof out === "string" ? out : out?.detail ?? "ok");
    return out;
  } catch (e) {
    report(e instanceof Skip ? "SKIP" : "FAIL", name, e?.message ?? e);
    return undefined;
  }
}
function failUnreported(why) {
  for (const t of TESTS) if (!reported.has(t)) report("FAIL", t, why);
}
class Check extends Error {}
function check(cond, msg) {
  if (!cond) throw new Check(msg);
}
const show = (x) => JSON.stringify(x)?.slice(0, 300);
function same(a, b, what) {
  check(JSON.stringify(a) === JSON.stringify(b), `${what} differ: ${show(a)} vs ${show(b)}`);
}
const isInt = (x) => Number.isInteger(x);

// ---- arguments -------------------------------------------------------------------------------------
function parseArgs(argv) {
  const a = { work: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === "--list") a.list = true;
    else if (k === "--glimmer") a.glimmer = resolve(argv[++i]);
    else if (k === "--model") a.model = resolve(argv[++i]);
    else if (k === "--work") a.work = resolve(argv[++i]);
    else if (k === "--steer-file") a.steer = resolve(argv[++i]);
    else throw new Error(`unknown argument ${k}`);
  }
  return a;
}

// ---- server processes --------------------------------------------------------------------------
const children = new Set();
function killChildren() {
  for (const c of children) c.kill("SIGKILL");
}
process.on("exit", killChildren);
for (const s of ["SIGINT", "SIGTERM"]) process.on(s, () => { killChildren(); process.exit(1); });

// Starts `glimmer serve` and waits (up to 30 s) for "listening on http://127.0.0.1:PORT".
function startServer(opts, label, extra) {
  const args = ["serve", "-m", opts.model, "--port", "0", "--date", "01-02-2027", "-c", "512", "-t", "2", ...extra];
  const proc = spawn(opts.glimmer, args, { stdio: ["ignore", "pipe", "pipe"] });
  children.add(proc);
  const server = { proc, label, args, log: "", exited: null };
  const t0 = Date.now();
  proc.stdout.on("data", (d) => { server.log += d; });
  proc.stderr.on("data", (d) => { server.log += d; });
  server.exit = new Promise((res) => proc.on("exit", (code, signal) => {
    children.delete(proc);
    server.exited = { code, signal, at: Date.now() };
    res(server.exited);
  }));
  return new Promise((res, rej) => {
    const fail = (why) => { clearInterval(poll); proc.kill("SIGKILL"); rej(new Check(`${why}; output: ${tail(server.log)}`)); };
    const poll = setInterval(() => {
      const m = /glimmer serve: listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(server.log);
      if (m) {
        clearInterval(poll);
        server.port = Number(m[1]);
        server.url = `http://127.0.0.1:${server.port}`;
        server.startMs = Date.now() - t0;
        res(server);
      } else if (server.exited) fail(`glimmer ${args.join(" ")} exited (${show(server.exited)}) before listening`);
      else if (Date.now() - t0 > 30000) fail(`glimmer ${args.join(" ")} did not say it was listening within 30 s`);
    }, 50);
  });
}
const tail = (s) => s.slice(-1500);

// SIGTERM, then waits up to 10 s for the exit. Returns {code, signal, ms} or throws.
async function stopServer(server, work) {
  const t0 = Date.now();
  if (!server.exited) server.proc.kill("SIGTERM");
  const timer = new Promise((res) => setTimeout(res, 10000, null));
  const ex = await Promise.race([server.exit, timer]);
  if (work) writeFileSync(join(work, `${server.label}.log`), server.log);
  if (!ex) {
    server.proc.kill("SIGKILL");
    throw new Check(`still running 10 s after SIGTERM; output: ${tail(server.log)}`);
  }
  return { ...ex, ms: ex.at - t0 };
}

// ---- HTTP ------------------------------------------------------------------------------------------
// A plain request: body is an object (sent as JSON), a string or a Buffer (sent as is). The
// server's API key (if any) is sent unless auth is false or an Authorization header is given.
async function http(server, method, path, { body, headers = {}, auth = true, timeoutMs = 30000 } = {}) {
  const h = { ...headers };
  if (server.key && auth && !("authorization" in h)) h.authorization = `Bearer ${server.key}`;
  let payload;
  if (body !== undefined) {
    payload = typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    h["content-type"] ??= "application/json";
  }
  const res = await fetch(server.url + path, { method, headers: h, body: payload, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, text, json, headers: res.headers };
}

// A streaming POST read raw: checks the SSE framing (only "data: ..." events, each ended by a blank
// line, the last one "[DONE]") and returns the parsed chunks.
async function sse(server, path, body) {
  const res = await fetch(server.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(server.key ? { authorization: `Bearer ${server.key}` } : {}) },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30000),
  });
  const raw = await res.text();
  check(res.status === 200, `status ${res.status}: ${raw.slice(0, 300)}`);
  const type = res.headers.get("content-type") ?? "";
  check(type.startsWith("text/event-stream"), `content-type is '${type}', not text/event-stream`);
  check(raw.endsWith("\n\n"), `the stream does not end with a blank line: ${show(raw.slice(-80))}`);
  const events = raw.slice(0, -2).split("\n\n");
  for (const e of events) check(e.startsWith("data: ") && !e.includes("\n"), `not a one-line data event: ${show(e)}`);
  const datas = events.map((e) => e.slice(6));
  check(datas.at(-1) === "[DONE]", `the last event is ${show(datas.at(-1))}, not [DONE]`);
  check(datas.indexOf("[DONE]") === datas.length - 1, "[DONE] is sent more than once");
  const chunks = datas.slice(0, -1).map((d) => {
    try { return JSON.parse(d); } catch { throw new Check(`an event is not JSON: ${show(d)}`); }
  });
  return { chunks, raw };
}

// The error body every failed request must carry.
function checkError(r, status, pattern) {
  check(r.status === status, `HTTP ${r.status}, expected ${status}; body ${r.text.slice(0, 300)}`);
  const e = r.json?.error;
  check(e && typeof e === "object", `no {"error": {...}} object in ${show(r.text)}`);
  check(typeof e.message === "string" && e.message.length > 0, `error.message is ${show(e.message)}`);
  for (const k of ["type", "param", "code"]) check(k in e, `error has no '${k}' member: ${show(e)}`);
  if (pattern) check(pattern.test(e.message), `message ${show(e.message)} does not match ${pattern}`);
  return `HTTP ${status}: ${e.message}`;
}

// ---- chat results ----------------------------------------------------------------------------------
// What a choice says, independent of where the random model's text landed.
function messageOf(choice) {
  const m = choice.message;
  return {
    content: m.content ?? "",
    reasoning: m.reasoning_content ?? "",
    tool_calls: (m.tool_calls ?? []).map((c) => ({ name: c.function?.name, arguments: c.function?.arguments })),
  };
}
const describe = (m) => `content ${show(m.content)}, reasoning ${show(m.reasoning)}, ${m.tool_calls.length} tool calls`;

// The non-streaming response shape; returns the message.
function checkChatCompletion(r, { name, maxTokens }) {
  check(typeof r.id === "string" && r.id.startsWith("chatcmpl-"), `id ${show(r.id)}`);
  check(r.object === "chat.completion", `object ${show(r.object)}`);
  check(isInt(r.created) && r.created > 1.6e9, `created ${show(r.created)}`);
  check(r.model === name, `model ${show(r.model)}, expected ${show(name)}`);
  check(Array.isArray(r.choices) && r.choices.length === 1, `choices ${show(r.choices)}`);
  const c = r.choices[0];
  check(c.index === 0, `choices[0].index ${show(c.index)}`);
  const m = c.message;
  check(m && m.role === "assistant", `message.role ${show(m?.role)}`);
  check(m.content === null || typeof m.content === "string", `message.content ${show(m.content)}`);
  check(!("reasoning_content" in m) || typeof m.reasoning_content === "string", `reasoning_content ${show(m.reasoning_content)}`);
  check(["stop", "length", "tool_calls"].includes(c.finish_reason), `finish_reason ${show(c.finish_reason)}`);
  if ("tool_calls" in m) {
    check(Array.isArray(m.tool_calls) && m.tool_calls.length > 0, `tool_calls present but ${show(m.tool_calls)}`);
    for (const t of m.tool_calls) {
      check(typeof t.id === "string" && t.id && t.type === "function", `tool call ${show(t)}`);
      check(typeof t.function?.name === "string" && t.function.name, `tool call name ${show(t)}`);
      let args;
      try { args = JSON.parse(t.function.arguments); } catch { args = undefined; }
      check(args && typeof args === "object", `tool call arguments are not a JSON object: ${show(t.function.arguments)}`);
    }
  }
  check((c.finish_reason === "tool_calls") === ("tool_calls" in m), `finish_reason ${c.finish_reason} with tool_calls ${show(m.tool_calls)}`);
  const u = checkUsage(r.usage, maxTokens);
  check(c.finish_reason !== "length" || u.completion_tokens === maxTokens,
    `finish_reason length after ${u.completion_tokens} of max ${maxTokens} tokens`);
  return messageOf(c);
}

function checkUsage(u, maxTokens) {
  check(u && isInt(u.prompt_tokens) && isInt(u.completion_tokens) && isInt(u.total_tokens), `usage ${show(u)}`);
  check(u.prompt_tokens > 0, `prompt_tokens ${u.prompt_tokens}`);
  check(u.total_tokens === u.prompt_tokens + u.completion_tokens, `total_tokens != prompt + completion: ${show(u)}`);
  check(u.completion_tokens >= 1 && u.completion_tokens <= maxTokens, `completion_tokens ${u.completion_tokens} outside [1, ${maxTokens}]`);
  return u;
}
const cachedOf = (u) => u?.prompt_tokens_details?.cached_tokens;

// Reads a chat stream's chunks (from the openai client or sse()): checks their shape and order
// and returns the concatenated message, the finish reason and the usage chunk's usage.
function collectChatStream(chunks, { name, includeUsage }) {
  check(chunks.length >= 2, `only ${chunks.length} chunks`);
  const id = chunks[0].id;
  check(typeof id === "string" && id.startsWith("chatcmpl-"), `chunk id ${show(id)}`);
  let content = "", reasoning = "", finish = null, usage = null;
  const calls = [];
  chunks.forEach((ch, i) => {
    check(ch.object === "chat.completion.chunk", `chunk ${i} object ${show(ch.object)}`);
    check(ch.id === id, `chunk ${i} has id ${show(ch.id)}, the first had ${id}`);
    check(ch.model === name, `chunk ${i} model ${show(ch.model)}`);
    check(isInt(ch.created), `chunk ${i} created ${show(ch.created)}`);
    check(Array.isArray(ch.choices), `chunk ${i} choices ${show(ch.choices)}`);
    if (usage) check(false, `chunk ${i} comes after the usage chunk: ${show(ch)}`);
    if (ch.choices.length === 0) {
      check(includeUsage, `a chunk without choices although include_usage was not asked: ${show(ch)}`);
      check(finish !== null, `the usage chunk comes before the finish_reason chunk`);
      usage = ch.usage;
      check(usage && isInt(usage.prompt_tokens), `usage chunk ${show(ch)}`);
      return;
    }
    check(finish === null, `chunk ${i} comes after the finish_reason chunk: ${show(ch)}`);
    check(ch.choices.length === 1 && ch.choices[0].index === 0, `chunk ${i} choices ${show(ch.choices)}`);
    const { delta, finish_reason } = ch.choices[0];
    check(delta && typeof delta === "object", `chunk ${i} has no delta`);
    if (i === 0) check(delta.role === "assistant", `the first delta's role is ${show(delta.role)}`);
    if (typeof delta.content === "string") content += delta.content;
    if (typeof delta.reasoning_content === "string") reasoning += delta.reasoning_content;
    for (const t of delta.tool_calls ?? []) {
      const c = (calls[t.index] ??= { name: "", arguments: "" });
      c.name += t.function?.name ?? "";
      c.arguments += t.function?.arguments ?? "";
    }
    if (finish_reason != null) finish = finish_reason;
  });
  check(finish !== null, "no chunk has a finish_reason");
  if (includeUsage) check(usage, "include_usage was asked but no usage chunk came");
  return { message: { content, reasoning, tool_calls: calls }, finish, usage };
}

// ---- the requests ----------------------------------------------------------------------------------
const SYSTEM = "You are a terse assistant.";
const chatRequest = (name, text, extra = {}) => ({
  model: name,
  messages: [{ role: "system", content: SYSTEM }, { role: "user", content: text }],
  temperature: 0,
  max_tokens: 8,
  ...extra,
});
const WEATHER_TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The current weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string", description: "the city" }, days: { type: "integer" } },
      required: ["city"],
    },
  },
};

const TIME_TOOL = { type: "function", function: { name: "get_time" } };

// A chat logprobs item: {token, logprob, bytes, top_logprobs}; with greedy, the token is its
// position's most likely.
function checkLpItem(t, i, top, greedy) {
  check(typeof t.token === "string" && typeof t.logprob === "number" && t.logprob <= 0, `content[${i}] ${show(t)}`);
  check(Array.isArray(t.bytes) && t.bytes.every((b) => isInt(b) && b >= 0 && b < 256), `content[${i}].bytes ${show(t.bytes)}`);
  const text = Buffer.from(t.bytes).toString("utf8");
  check(text === t.token || t.token.includes("\uFFFD"), `content[${i}]: token ${show(t.token)} but bytes ${show(text)}`);
  check(Array.isArray(t.top_logprobs) && t.top_logprobs.length === top, `content[${i}]: ${t.top_logprobs?.length} alternatives, asked for ${top}`);
  t.top_logprobs.forEach((a, k) => check(typeof a.token === "string" && Array.isArray(a.bytes) && a.logprob <= 0 &&
    (k === 0 || a.logprob <= t.top_logprobs[k - 1].logprob), `content[${i}]: alternatives ${show(t.top_logprobs)} not sorted`));
  if (greedy && top) check(t.top_logprobs[0].token === t.token && t.top_logprobs[0].logprob === t.logprob,
    `content[${i}]: greedy token ${show(t.token)} (${t.logprob}) is not the most likely ${show(t.top_logprobs[0])}`);
}
const bytesOf = (items) => Buffer.concat(items.map((t) => Buffer.from(t.bytes)));

async function streamChat(client, body) {
  const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  const chunks = [];
  for await (const ch of stream) chunks.push(ch);
  return chunks;
}
async function streamCompletion(client, body) {
  const stream = await client.completions.create({ ...body, stream: true });
  let text = "", finish = null;
  for await (const ch of stream) {
    check(ch.object === "text_completion", `completion chunk object ${show(ch.object)}`);
    for (const c of ch.choices ?? []) {
      text += c.text ?? "";
      if (c.finish_reason != null) finish = c.finish_reason;
    }
  }
  return { text, finish };
}
// Two characters from the second half of a text (no spaces at their ends, no U+FFFD) to use as a
// stop string, or null when the text is too short.
function stopPiece(text) {
  const chars = [...text];
  for (let i = Math.max(1, Math.floor(chars.length / 2)); i + 2 <= chars.length; i++) {
    const piece = chars.slice(i, i + 2).join("");
    if (!piece.includes("\uFFFD") && piece.trim() === piece) return piece;
  }
  return null;
}
function checkTextCompletion(r, { name, maxTokens }) {
  check(typeof r.id === "string" && r.id.length > 0, `id ${show(r.id)}`);
  check(r.object === "text_completion", `object ${show(r.object)}`);
  check(r.model === name, `model ${show(r.model)}`);
  check(Array.isArray(r.choices) && r.choices.length === 1 && r.choices[0].index === 0, `choices ${show(r.choices)}`);
  const c = r.choices[0];
  check(typeof c.text === "string", `text ${show(c.text)}`);
  check(["stop", "length"].includes(c.finish_reason), `finish_reason ${show(c.finish_reason)}`);
  checkUsage(r.usage, maxTokens);
  return c;
}

// ---- the test run ----------------------------------------------------------------------------------
async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.list) {
    console.log(TESTS.join("\n"));
    return;
  }
  if (!opts.glimmer || !opts.model) throw new Error("usage: e2e.mjs --glimmer BIN --model DIR [--work DIR]");
  const work = opts.work ?? resolve("build/server");
  mkdirSync(work, { recursive: true });
  const { default: OpenAI } = await import("openai");
  const name = basename(opts.model);
  const KEY = "glimmer-test-key";
  const FRESH_NAME = "fresh-model"; // the second server's --model-name
  const CORS = "http://localhost:3000"; // and its --cors

  const server = await test("server_start", async () => {
    const s = await startServer(opts, "server", ["--parallel", "2", "--api-key", KEY, "--max-body", "200000"]);
    s.key = KEY;
    return { detail: `listening on port ${s.port} after ${s.startMs} ms`, s };
  }).then((r) => r?.s);
  if (!server) return failUnreported("the server did not start (see server_start)");
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 30000 });

  await test("server_health", async () => {
    const r = await http(server, "GET", "/health");
    check(r.status === 200, `HTTP ${r.status}: ${r.text}`);
    check(!r.headers.has("access-control-allow-origin"), "CORS headers without --cors");
    same(r.json, { status: "ok" }, "body");
    return r.text;
  });

  await test("server_models", async () => {
    const r = await http(server, "GET", "/v1/models");
    check(r.status === 200, `HTTP ${r.status}: ${r.text}`);
    check(r.json?.object === "list" && Array.isArray(r.json.data), `body ${show(r.json)}`);
    const models = [];
    for await (const m of client.models.list()) models.push(m);
    const m = models.find((x) => x.id === name);
    check(m, `no model with id ${show(name)} in ${show(models)}`);
    check(m.object === "model" && m.owned_by === "glimmer" && isInt(m.created), `model entry ${show(m)}`);
    return `${models.length} model(s), id ${m.id}`;
  });

  await test("server_auth_right", async () => {
    const r = await http(server, "GET", "/v1/models", { headers: { authorization: `Bearer ${KEY}` } });
    check(r.status === 200, `HTTP ${r.status} with the right key: ${r.text}`);
    return "the right Bearer key -> 200";
  });

  // Greedy chat: shape, usage, and the baseline for the determinism / streaming checks.
  const greedy = chatRequest(name, "Hello! Tell me about the sea.");
  const base = await test("server_chat_shape", async () => {
    const r = await client.chat.completions.create(greedy);
    const message = checkChatCompletion(r, { name, maxTokens: 8 });
    return { detail: `${describe(message)}, finish ${r.choices[0].finish_reason}, usage ${show(r.usage)}`, r, message };
  });

  await test("server_chat_options", async () => {
    const r = await client.chat.completions.create({
      ...chatRequest(name, "Options, please."),
      max_tokens: undefined, max_completion_tokens: 3, temperature: 0.8, top_p: 0.9, seed: 3,
      stop: ["\n\n", "END"], frequency_penalty: 0.5, presence_penalty: 0.25, reasoning_effort: "medium", n: 1,
    });
    checkChatCompletion(r, { name, maxTokens: 3 });
    return `max_completion_tokens 3 honoured (${r.usage.completion_tokens} tokens), sampling options accepted`;
  });

  await test("server_chat_deterministic", async () => {
    check(base, "needs server_chat_shape");
    const again = checkChatCompletion(await client.chat.completions.create(greedy), { name, maxTokens: 8 });
    same(again, base.message, "two greedy answers");
    const seeded = { ...greedy, temperature: 1, seed: 7, max_tokens: 12 };
    const a = await client.chat.completions.create(seeded);
    const b = await client.chat.completions.create(seeded);
    same(messageOf(b.choices[0]), checkChatCompletion(a, { name, maxTokens: 12 }), "two seed-7 answers");
    same(b.usage, a.usage, "two seed-7 usages");
    return `greedy twice and seed 7 twice give the same messages (${describe(messageOf(a.choices[0]))})`;
  });

  // A different seed must change the sample. Chat answers of a random model are usually empty (it
  // never opens a message), so the visible tokens of /v1/completions carry this check; the chat
  // answers must differ too whenever either of them has text.
  await test("server_seed_changes_output", async () => {
    const text = async (seed) => {
      const r = await client.completions.create({ model: name, prompt: "Once upon a time", max_tokens: 12, temperature: 1, seed });
      return checkTextCompletion(r, { name, maxTokens: 12 }).text;
    };
    const [t7, t7b, t8] = [await text(7), await text(7), await text(8)];
    check(t7 === t7b, `seed 7 twice: ${show(t7)} vs ${show(t7b)}`);
    check(t7 !== t8, `seeds 7 and 8 give the same text ${show(t7)}`);
    const chat = async (seed) => messageOf((await client.chat.completions.create({ ...greedy, temperature: 1, seed, max_tokens: 12 })).choices[0]);
    const [c7, c8] = [await chat(7), await chat(8)];
    const empty = (m) => !m.content && !m.reasoning && !m.tool_calls.length;
    if (!empty(c7) || !empty(c8)) check(JSON.stringify(c7) !== JSON.stringify(c8), `chat seeds 7 and 8 give the same message: ${describe(c7)}`);
    return `completion seed 7: ${show(t7)}, seed 8: ${show(t8)}; chat ${empty(c7) && empty(c8) ? "answers both empty" : "answers differ"}`;
  });

  await test("server_chat_stream", async () => {
    check(base, "needs server_chat_shape");
    const s = collectChatStream(await streamChat(client, greedy), { name, includeUsage: true });
    same(s.message, base.message, "streamed and non-streamed messages");
    check(s.finish === base.r.choices[0].finish_reason, `finish_reason ${s.finish} vs ${base.r.choices[0].finish_reason}`);
    same([s.usage.prompt_tokens, s.usage.completion_tokens], [base.r.usage.prompt_tokens, base.r.usage.completion_tokens], "streamed and non-streamed usage");
    return `same message, finish ${s.finish}, usage ${show(s.usage)}`;
  });

  await test("server_chat_stream_sse", async () => {
    check(base, "needs server_chat_shape");
    const { chunks } = await sse(server, "/v1/chat/completions", { ...greedy, stream: true, stream_options: { include_usage: true } });
    const s = collectChatStream(chunks, { name, includeUsage: true });
    same(s.message, base.message, "raw-streamed and non-streamed messages");
    const plain = collectChatStream((await sse(server, "/v1/chat/completions", { ...greedy, stream: true })).chunks, { name, includeUsage: false });
    same(plain.message, base.message, "streamed (no usage) and non-streamed messages");
    return `${chunks.length} data events then [DONE], same message; without include_usage no usage chunk`;
  });

  // Chat logprobs: they change nothing in the answer; they cover its tokens (their bytes make the
  // content), each the most likely at its position (greedy), with sorted alternatives.
  const chatLp = await test("server_chat_logprobs", async () => {
    check(base, "needs server_chat_shape");
    const r = await client.chat.completions.create({ ...greedy, logprobs: true, top_logprobs: 3 });
    const m = checkChatCompletion(r, { name, maxTokens: 8 });
    same(m, base.message, "the greedy messages with and without logprobs");
    const items = r.choices[0].logprobs?.content;
    check(Array.isArray(items), `logprobs ${show(r.choices[0].logprobs)}`);
    items.forEach((t, i) => checkLpItem(t, i, 3, true));
    check(items.length <= r.usage.completion_tokens, `${items.length} tokens reported, ${r.usage.completion_tokens} generated`);
    if (!m.content.includes("\uFFFD")) check(bytesOf(items).toString("utf8") === m.content,
      `the tokens' bytes make ${show(bytesOf(items).toString("utf8"))}, the content is ${show(m.content)}`);
    const plain = await client.chat.completions.create({ ...greedy, logprobs: true });
    const p = plain.choices[0].logprobs.content;
    same(p.map((t) => [t.token, t.logprob, t.top_logprobs]), items.map((t) => [t.token, t.logprob, []]), "logprobs without top_logprobs");
    return { detail: `${items.length} tokens ${show(items.map((t) => t.token))} for content ${show(m.content)}`, items };
  });

  // Streamed, each chunk carries the tokens its text completes: the tokens so far are whole in the
  // content so far, and all together they are the non-streamed logprobs.
  await test("server_chat_logprobs_stream", async () => {
    check(chatLp, "needs server_chat_logprobs");
    const { chunks } = await sse(server, "/v1/chat/completions", { ...greedy, logprobs: true, top_logprobs: 3, stream: true });
    const s = collectChatStream(chunks, { name, includeUsage: false });
    same(s.message, base.message, "streamed with logprobs and non-streamed messages");
    let content = Buffer.alloc(0);
    const items = [];
    chunks.forEach((ch, i) => {
      const c = ch.choices[0], d = c.delta ?? {};
      if (d.content) content = Buffer.concat([content, Buffer.from(d.content)]);
      if (d.content) check(c.logprobs && Array.isArray(c.logprobs.content), `chunk ${i} has content but logprobs ${show(c.logprobs)}`);
      if (c.logprobs) items.push(...c.logprobs.content);
      const reported = bytesOf(items);
      if (!s.message.content.includes("\uFFFD"))
        check(content.subarray(0, reported.length).equals(reported), `after chunk ${i}, the tokens reported are not within the content sent`);
    });
    same(items, chatLp.items, "streamed and non-streamed logprobs");
    return `${chunks.length} chunks carry the ${items.length} tokens of the non-streamed logprobs`;
  });

  // A stop string cut from the middle of the greedy answer: the answer must end just before it.
  await test("server_chat_stop", async () => {
    check(base, "needs server_chat_shape");
    const full = base.message.content;
    const stop = stopPiece(full);
    if (!stop) throw new Skip(`the greedy answer ${show(full)} has no text to cut (the random model's text is elsewhere)`);
    const want = full.slice(0, full.indexOf(stop));
    const r = await client.chat.completions.create({ ...greedy, stop });
    const m = checkChatCompletion(r, { name, maxTokens: 8 });
    check(m.content === want, `with stop ${show(stop)}: ${show(m.content)}, expected ${show(want)}`);
    check(r.choices[0].finish_reason === "stop", `finish_reason ${r.choices[0].finish_reason} at a stop string`);
    const s = collectChatStream(await streamChat(client, { ...greedy, stop: [stop] }), { name, includeUsage: true });
    check(s.message.content === want, `streamed with stop ${show(stop)}: ${show(s.message.content)}, expected ${show(want)}`);
    check(s.finish === "stop", `streamed finish_reason ${s.finish} at a stop string`);
    return `stop ${show(stop)} cuts ${show(full)} to ${show(want)}, streamed too`;
  });

  await test("server_completion_prompt_tokens", async () => {
    const prompt = "The quick brown fox jumps over the lazy dog. Ünïcödé 😀 12345";
    const ids = JSON.parse(execFileSync(opts.glimmer, ["tokenize", "-m", opts.model, "--text", prompt], { encoding: "utf8" }));
    check(Array.isArray(ids) && ids.length > 1, `glimmer tokenize printed ${show(ids)}`);
    const r = await client.completions.create({ model: name, prompt, max_tokens: 4, temperature: 0 });
    checkTextCompletion(r, { name, maxTokens: 4 });
    check(r.usage.prompt_tokens === ids.length, `prompt_tokens ${r.usage.prompt_tokens}, glimmer tokenize gives ${ids.length}`);
    const r2 = await client.completions.create({ model: name, prompt: ids, max_tokens: 4, temperature: 0 });
    checkTextCompletion(r2, { name, maxTokens: 4 });
    check(r2.usage.prompt_tokens === ids.length, `an id prompt of ${ids.length} ids gives prompt_tokens ${r2.usage.prompt_tokens}`);
    same(r2.choices[0].text, r.choices[0].text, "greedy texts of the string prompt and of its ids");
    return `${ids.length} prompt tokens, as glimmer tokenize; the ids as prompt give the same text`;
  });

  // Greedy text, then the same request stopped at a piece of that text: the answer must end just
  // before the stop string's first occurrence.
  await test("server_completion_stop", async () => {
    const req = { model: name, prompt: "Stop here:", max_tokens: 16, temperature: 0 };
    const full = checkTextCompletion(await client.completions.create(req), { name, maxTokens: 16 }).text;
    const stop = stopPiece(full);
    check(stop, `the greedy text ${show(full)} is too short to cut`);
    const want = full.slice(0, full.indexOf(stop));
    const r = checkTextCompletion(await client.completions.create({ ...req, stop: [stop, "zq-never-zq"] }), { name, maxTokens: 16 });
    check(r.text === want, `with stop ${show(stop)}: ${show(r.text)}, expected ${show(want)}`);
    check(r.finish_reason === "stop", `finish_reason ${r.finish_reason} at a stop string`);
    const one = checkTextCompletion(await client.completions.create({ ...req, stop }), { name, maxTokens: 16 });
    check(one.text === want, `with stop as a string: ${show(one.text)}, expected ${show(want)}`);
    return `stop ${show(stop)} cuts ${show(full)} to ${show(want)}`;
  });

  const story = await test("server_completion_stream", async () => {
    const req = { model: name, prompt: "A short story:", max_tokens: 10, temperature: 0 };
    const r = checkTextCompletion(await client.completions.create(req), { name, maxTokens: 10 });
    const s = await streamCompletion(client, req);
    check(s.text === r.text, `streamed ${show(s.text)}, non-streamed ${show(r.text)}`);
    check(s.finish === r.finish_reason, `streamed finish ${s.finish}, non-streamed ${r.finish_reason}`);
    const raw = await sse(server, "/v1/completions", { ...req, stream: true });
    const rawText = raw.chunks.map((c) => c.choices?.map((x) => x.text ?? "").join("") ?? "").join("");
    check(rawText === r.text, `raw-streamed ${show(rawText)}, non-streamed ${show(r.text)}`);
    return { detail: `${show(r.text)} both ways, finish ${s.finish}`, req, text: r.text };
  });

  // Logprobs of a greedy generation: each token is its position's most likely one, the
  // alternatives come sorted, and the probabilities are probabilities.
  const tokenIds = (lp) => lp.tokens.map((t) => { check(/^token_id:\d+$/.test(t), `token ${show(t)}`); return Number(t.slice(9)); });
  const scorePrompt = JSON.parse(execFileSync(opts.glimmer, ["tokenize", "-m", opts.model, "--text", "Scores of a short prompt"], { encoding: "utf8" }));
  const greedyLp = await test("server_completion_logprobs", async () => {
    const r = await http(server, "POST", "/v1/completions", {
      body: { model: name, prompt: scorePrompt, max_tokens: 3, temperature: 0, logprobs: 4, return_tokens_as_token_ids: true },
    });
    check(r.status === 200, `HTTP ${r.status}: ${r.text}`);
    const lp = r.json.choices[0].logprobs;
    check(lp && lp.tokens.length === 3 && lp.token_logprobs.length === 3 && lp.top_logprobs.length === 3 && lp.text_offset.length === 3,
      `logprobs ${show(lp)}`);
    for (let i = 0; i < 3; i++) {
      const top = Object.entries(lp.top_logprobs[i]);
      check(top.length === 4, `position ${i}: ${top.length} alternatives, asked for 4`);
      check(top.every(([, v], k) => v <= 0 && (k === 0 || v <= top[k - 1][1])), `position ${i}: alternatives ${show(top)} not sorted log probabilities`);
      check(top[0][0] === lp.tokens[i] && top[0][1] === lp.token_logprobs[i], `position ${i}: greedy token ${lp.tokens[i]} (${lp.token_logprobs[i]}) is not the most likely ${show(top[0])}`);
      const mass = top.reduce((a, [, v]) => a + Math.exp(v), 0);
      check(mass > 0 && mass <= 1 + 1e-6, `position ${i}: the alternatives' probabilities sum to ${mass}`);
    }
    check(lp.text_offset[0] === 0 && lp.text_offset[1] > 0, `text_offset ${show(lp.text_offset)}`);
    return { detail: `3 greedy tokens ${show(lp.tokens)}, logprobs ${show(lp.token_logprobs.map((x) => x.toFixed(3)))}`, lp };
  });

  // Completion logprobs streamed: the chunks' logprobs joined are the non-streamed ones (text_offset
  // included). With a stop string, only the tokens whose text is whole before it are reported.
  await test("server_completion_logprobs_stream", async () => {
    const req = { model: name, prompt: "A short story:", max_tokens: 10, temperature: 0, logprobs: 2 };
    const joined = async (body) => {
      const { chunks } = await sse(server, "/v1/completions", { ...body, stream: true });
      const lp = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
      let text = "";
      for (const ch of chunks) {
        const c = ch.choices[0];
        text += c.text;
        if (c.text) check(c.logprobs, `a chunk with text ${show(c.text)} but no logprobs`);
        if (c.logprobs) for (const k of Object.keys(lp)) lp[k].push(...c.logprobs[k]);
      }
      return { text, lp };
    };
    const post = async (body) => {
      const r = await http(server, "POST", "/v1/completions", { body });
      check(r.status === 200, `HTTP ${r.status}: ${r.text}`);
      return r.json.choices[0];
    };
    const full = await post(req);
    const s = await joined(req);
    check(s.text === full.text, `streamed ${show(s.text)}, non-streamed ${show(full.text)}`);
    same(s.lp, full.logprobs, "streamed and non-streamed logprobs");
    const stop = stopPiece(full.text);
    if (!stop || full.text.includes("\uFFFD")) throw new Skip(`the greedy text ${show(full.text)} has no clean piece to stop at`);
    const want = full.text.slice(0, full.text.indexOf(stop)), wantBytes = Buffer.byteLength(want);
    const cut = await post({ ...req, stop });
    check(cut.text === want, `with stop ${show(stop)}: ${show(cut.text)}, expected ${show(want)}`);
    const off = full.logprobs.text_offset, ends = off.map((o, i) => off[i + 1] ?? Buffer.byteLength(full.text));
    const whole = ends.filter((e) => e <= wantBytes).length;
    same(cut.logprobs.tokens, full.logprobs.tokens.slice(0, whole), `the tokens before stop ${show(stop)}`);
    same((await joined({ ...req, stop })).lp, cut.logprobs, "streamed and non-streamed logprobs with a stop string");
    return `${full.logprobs.tokens.length} tokens both ways; stop ${show(stop)} keeps the ${whole} whole before it`;
  });

  // echo + max_tokens 0 scores a text: row t of `glimmer logits` gives token t+1's logprob, and a
  // token generated after the prompt scores what it scored when it was generated.
  await test("server_completion_echo_scores", async () => {
    check(greedyLp, "needs server_completion_logprobs");
    const first = tokenIds(greedyLp.lp)[0];
    const ids = [...scorePrompt, first];
    const r = await http(server, "POST", "/v1/completions", {
      body: { model: name, prompt: ids, max_tokens: 0, echo: true, logprobs: 1, return_tokens_as_token_ids: true },
    });
    check(r.status === 200, `HTTP ${r.status}: ${r.text}`);
    const c = r.json.choices[0], lp = c.logprobs;
    same(tokenIds(lp), ids, "the echoed tokens");
    check(lp.token_logprobs[0] === null && lp.top_logprobs[0] === null, `the first token's score ${show(lp.token_logprobs[0])}`);
    check(r.json.usage.completion_tokens === 0 && c.finish_reason === "length", `usage ${show(r.json.usage)}, finish ${c.finish_reason}`);
    const last = lp.token_logprobs[ids.length - 1];
    check(last === greedyLp.lp.token_logprobs[0], `the generated token scores ${last} echoed, ${greedyLp.lp.token_logprobs[0]} when generated`);
    // an independent reading: glimmer logits' rows, log-softmax in double here
    const out = join(work, "scores.safetensors");
    execFileSync(opts.glimmer, ["logits", "-m", opts.model, "--backend", "cpu", "-t", "2", "--tokens", ids.join(","), "-o", out]);
    const buf = readFileSync(out), hl = Number(buf.readBigUInt64LE(0)), hdr = JSON.parse(buf.subarray(8, 8 + hl).toString());
    const [T, V] = hdr.logits.shape, [b0] = hdr.logits.data_offsets;
    check(hdr.logits.dtype === "F32" && T === ids.length, `logits ${show(hdr.logits)}`);
    const rows = new Float32Array(buf.buffer.slice(buf.byteOffset + 8 + hl + b0, buf.byteOffset + 8 + hl + b0 + T * V * 4));
    let worst = 0;
    for (let t = 0; t + 1 < T; t++) {
      const row = rows.subarray(t * V, (t + 1) * V);
      let mx = -Infinity;
      for (const x of row) mx = Math.max(mx, x);
      let sum = 0;
      for (const x of row) sum += Math.exp(x - mx);
      const want = row[ids[t + 1]] - mx - Math.log(sum);
      worst = Math.max(worst, Math.abs(want - lp.token_logprobs[t + 1]));
    }
    check(worst < 1e-4, `echoed scores differ from glimmer logits' log-softmax by up to ${worst}`);
    return `${ids.length} tokens scored; within ${worst.toExponential(1)} of glimmer logits' log-softmax; the generated token scores the same both ways`;
  });

  // Prefix reuse: B continues A's conversation, so the slot that served A holds B's prefix.
  const prefix = await test("server_prefix_reuse", async () => {
    const a = await client.chat.completions.create(chatRequest(name, "Name three rivers.", { max_tokens: 6 }));
    const am = checkChatCompletion(a, { name, maxTokens: 6 });
    const reqB = chatRequest(name, "", { max_tokens: 6 });
    reqB.messages = [...chatRequest(name, "Name three rivers.").messages,
      { role: "assistant", content: a.choices[0].message.content ?? "" }, { role: "user", content: "and more?" }];
    const b = await client.chat.completions.create(reqB);
    const bm = checkChatCompletion(b, { name, maxTokens: 6 });
    const cached = cachedOf(b.usage);
    check(isInt(cached) && cached > 0, `B's cached_tokens ${show(cached)} (usage ${show(b.usage)})`);
    // every chat shares the system block with earlier requests; B must reuse all of A's prompt
    check(cached >= a.usage.prompt_tokens, `B reused ${cached} tokens, less than A's prompt of ${a.usage.prompt_tokens} (B's prefix)`);
    check(cached < b.usage.prompt_tokens, `cached_tokens ${cached} >= prompt_tokens ${b.usage.prompt_tokens}`);
    return { detail: `A ${describe(am)}; B reused ${cached} of ${b.usage.prompt_tokens} prompt tokens (A's prompt: ${a.usage.prompt_tokens})`, reqB, b, bm };
  });

  // Three different streams at once on two slots, then each alone: the same answers.
  await test("server_concurrent_streams", async () => {
    const chats = [
      chatRequest(name, "First question?", { max_tokens: 10 }),
      chatRequest(name, "Second, longer question about the weather today?", { max_tokens: 10, temperature: 1, seed: 11 }),
    ];
    const comp = { model: name, prompt: "Third: a completion that runs beside the chats", max_tokens: 12, temperature: 0 };
    const run = () => Promise.all([
      ...chats.map(async (c) => collectChatStream(await streamChat(client, c), { name, includeUsage: true })),
      streamCompletion(client, comp),
    ]);
    const t0 = Date.now();
    const together = await run();
    const ms = Date.now() - t0;
    const alone = [];
    for (const c of chats) alone.push(collectChatStream(await streamChat(client, c), { name, includeUsage: true }));
    alone.push(await streamCompletion(client, comp));
    for (let i = 0; i < 2; i++) {
      same(together[i].message, alone[i].message, `chat ${i + 1} concurrent and alone messages`);
      const counts = (s) => [s.finish, s.usage.prompt_tokens, s.usage.completion_tokens];
      same(counts(together[i]), counts(alone[i]), `chat ${i + 1} concurrent and alone finish / token counts`);
    }
    same(together[2], alone[2], "the concurrent and the lone completion");
    return `2 chat streams (greedy; seed 11) + 1 completion stream together in ${ms} ms equal each alone: ${alone.map((a) => show(a.text ?? a.message.content)).join(", ")}`;
  });

  await test("server_client_disconnect", async () => {
    const ac = new AbortController();
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify(chatRequest(name, "Write a very long essay.", { max_tokens: 200, temperature: 1, seed: 1, stream: true })),
      signal: ac.signal,
    });
    check(res.status === 200, `HTTP ${res.status}`);
    const reader = res.body.getReader();
    const first = await reader.read();
    check(!first.done && first.value.length > 0, "no first chunk");
    ac.abort();
    await reader.cancel().catch(() => {});
    const t0 = Date.now();
    const r = await client.chat.completions.create(chatRequest(name, "Still there?", { max_tokens: 4 }), { timeout: 30000 });
    checkChatCompletion(r, { name, maxTokens: 4 });
    const after = await client.completions.create({ model: name, prompt: "and again", max_tokens: 4, temperature: 0 }, { timeout: 30000 });
    checkTextCompletion(after, { name, maxTokens: 4 });
    check(!server.exited, `the server exited: ${show(server.exited)}`);
    return `aborted after the first chunk; the next requests took ${Date.now() - t0} ms`;
  });

  await test("server_tools", async () => {
    const r = await client.chat.completions.create({
      ...chatRequest(name, "What's the weather in Paris?"),
      tools: [WEATHER_TOOL], tool_choice: "auto", reasoning_effort: "low",
    });
    const m = checkChatCompletion(r, { name, maxTokens: 8 });
    const plain = await client.chat.completions.create(chatRequest(name, "What's the weather in Paris?"));
    check(r.usage.prompt_tokens > plain.usage.prompt_tokens + 10,
      `the tool definition adds no prompt tokens (${r.usage.prompt_tokens} vs ${plain.usage.prompt_tokens} without)`);
    // a named tool_choice opens the reply as that call: its header tokens join the prompt
    const forced = await client.chat.completions.create({
      ...chatRequest(name, "What's the weather in Paris?"),
      tools: [WEATHER_TOOL], tool_choice: { type: "function", function: { name: WEATHER_TOOL.function.name } }, reasoning_effort: "low",
    });
    checkChatCompletion(forced, { name, maxTokens: 8 });
    check(forced.usage.prompt_tokens > r.usage.prompt_tokens + 2,
      `a forced call adds no opening to the prompt (${forced.usage.prompt_tokens} vs ${r.usage.prompt_tokens})`);
    return `${describe(m)}, finish ${r.choices[0].finish_reason}; prompt ${r.usage.prompt_tokens} tokens (${plain.usage.prompt_tokens} without tools, ${forced.usage.prompt_tokens} with the call forced)`;
  });

  // tool_choice "required": the server forces the opening of a call up to the name; a reply that
  // still is no call to one of the tools is an error (the random model rarely writes a call), never
  // plain content, streamed or not.
  await test("server_tools_required", async () => {
    const body = { ...chatRequest(name, "What's the weather in Paris?"), tools: [WEATHER_TOOL, TIME_TOOL], tool_choice: "required",
      reasoning_effort: "low", temperature: 1 };
    const seen = [];
    for (const seed of [1, 2, 3]) {
      const r = await http(server, "POST", "/v1/chat/completions", { body: { ...body, seed } });
      if (r.status === 200) {
        const m = checkChatCompletion(r.json, { name, maxTokens: 8 });
        check(m.tool_calls.length > 0, `seed ${seed}: "required" answered without a tool call: ${describe(m)}`);
        seen.push("call");
      } else {
        checkError(r, 500, /tool_choice.*required/);
        seen.push("error");
      }
      const { chunks } = await sse(server, "/v1/chat/completions", { ...body, seed, stream: true });
      const bad = chunks.findIndex((c) => c.error);
      if (bad >= 0) {
        check(/tool_choice.*required/.test(chunks[bad].error.message), `stream error ${show(chunks[bad])}`);
        check(chunks.slice(0, bad).every((c) => !c.choices?.[0]?.delta?.content), `content streamed before the error: ${show(chunks)}`);
        check(seen.at(-1) === "error", `seed ${seed}: the stream failed, the request without streaming did not`);
      } else {
        const st = collectChatStream(chunks, { name, includeUsage: false });
        check(st.message.tool_calls.length > 0, `seed ${seed}: the stream answered without a tool call: ${describe(st.message)}`);
      }
    }
    return `3 seeds, non-streamed and streamed: ${seen.join(", ")}`;
  });

  await test("server_tools_history", async () => {
    const messages = [
      { role: "user", content: "What's the weather in Paris?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","days":2}' } }] },
      { role: "tool", tool_call_id: "call_1", content: '{"temperature_c": 21, "sky": "clear"}' },
    ];
    // no `tools` here: their definition alone takes ~360 of the 512 context tokens
    const r = await client.chat.completions.create({ model: name, messages, temperature: 0, max_tokens: 8 });
    const m = checkChatCompletion(r, { name, maxTokens: 8 });
    const without = await client.chat.completions.create({ model: name, messages: messages.slice(0, 1), temperature: 0, max_tokens: 8 });
    check(r.usage.prompt_tokens > without.usage.prompt_tokens + 10,
      `the call and its result add too few prompt tokens (${r.usage.prompt_tokens} vs ${without.usage.prompt_tokens})`);
    return `${describe(m)}; prompt ${r.usage.prompt_tokens} tokens (${without.usage.prompt_tokens} before the call)`;
  });

  // ---- errors ----
  const chatPost = (body, extra) => http(server, "POST", "/v1/chat/completions", { body, ...extra });
  const user = [{ role: "user", content: "hi" }];
  const errorCase = (c, fn) => test(`server_error_${c}`, fn);
  await errorCase("malformed_json", async () => checkError(await chatPost('{"messages": [{"role": "user", "content": "hi"}'), 400, /json/i));
  await errorCase("missing_messages", async () => checkError(await chatPost({ model: name, max_tokens: 4 }), 400, /messages/));
  await errorCase("messages_not_array", async () => checkError(await chatPost({ messages: "hi" }), 400, /messages/));
  await errorCase("messages_empty", async () => checkError(await chatPost({ messages: [] }), 400, /messages/));
  await errorCase("unknown_role", async () => checkError(await chatPost({ messages: [{ role: "wizard", content: "hi" }] }), 400, /role|wizard/));
  await errorCase("n_2", async () => checkError(await chatPost({ messages: user, n: 2 }), 400, /\bn\b/));
  await errorCase("max_tokens_negative", async () => checkError(await chatPost({ messages: user, max_tokens: -1 }), 400, /max_tokens/));
  await errorCase("temperature_string", async () => checkError(await chatPost({ messages: user, temperature: "hot" }), 400, /temperature/));
  await errorCase("invalid_utf8", async () => {
    const body = Buffer.concat([Buffer.from('{"messages": [{"role": "user", "content": "caf'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]);
    return checkError(await chatPost(body), 400, /utf-?8/i);
  });
  await errorCase("prompt_over_context", async () => {
    const words = Array.from({ length: 3000 }, (_, i) => `word${i % 97}`).join(" ");
    return checkError(await chatPost({ messages: [{ role: "user", content: words }], max_tokens: 4 }), 400, /context/i);
  });
  await errorCase("tool_call_id_unknown", async () => checkError(await chatPost({
    messages: [
      { role: "user", content: "weather?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_9", content: "sunny" },
    ],
  }), 400, /call_9|tool_call_id/));
  await errorCase("completion_id_out_of_vocab", async () =>
    checkError(await http(server, "POST", "/v1/completions", { body: { prompt: [200000, 1000, 202048], max_tokens: 2 } }), 400, /202048/));
  await errorCase("tool_choice_unknown", async () =>
    checkError(await chatPost({ messages: user, max_tokens: 2, tools: [WEATHER_TOOL], tool_choice: { type: "function", function: { name: "nope" } } }), 400, /nope/));
  await errorCase("tool_choice_required_no_tools", async () =>
    checkError(await chatPost({ messages: user, max_tokens: 2, tool_choice: "required" }), 400, /required.*tools/));
  await errorCase("chat_top_logprobs_alone", async () =>
    checkError(await chatPost({ messages: user, max_tokens: 2, top_logprobs: 2 }), 400, /top_logprobs.*logprobs/));
  await errorCase("chat_top_logprobs_range", async () =>
    checkError(await chatPost({ messages: user, max_tokens: 2, logprobs: true, top_logprobs: 21 }), 400, /top_logprobs/));
  await errorCase("echo_stream", async () =>
    checkError(await http(server, "POST", "/v1/completions", { body: { prompt: "x", max_tokens: 2, logprobs: 1, echo: true, stream: true } }), 400, /echo.*stream/));
  await errorCase("max_tokens_zero_without_echo", async () =>
    checkError(await http(server, "POST", "/v1/completions", { body: { prompt: "x", max_tokens: 0 } }), 400, /max_tokens/));
  await errorCase("unknown_path", async () => checkError(await http(server, "GET", "/v1/no-such-thing"), 404));
  await errorCase("wrong_method", async () => checkError(await http(server, "GET", "/v1/chat/completions"), 405));
  await errorCase("body_too_large", async () => {
    const big = { messages: [{ role: "user", content: "x".repeat(300000) }] };
    return checkError(await chatPost(big), 413);
  });
  await errorCase("auth_missing", async () => checkError(await chatPost({ messages: user, max_tokens: 2 }, { auth: false }), 401));
  await errorCase("auth_wrong", async () => checkError(await http(server, "GET", "/v1/models", { headers: { authorization: "Bearer wrong-key" } }), 401));

  await test("server_alive_after_errors", async () => {
    check(!server.exited, `the server exited: ${show(server.exited)}`);
    const r = await client.chat.completions.create(greedy);
    const m = checkChatCompletion(r, { name, maxTokens: 8 });
    if (base) same(m, base.message, "the greedy answer after the errors and the first one");
    return "a greedy chat request after all the errors gives the first answer again";
  });

  await test("server_sigterm", async () => {
    const ex = await stopServer(server, work);
    check(ex.code === 0 && ex.signal === null, `exit code ${ex.code}, signal ${ex.signal}; output: ${tail(server.log)}`);
    return `exit 0 ${ex.ms} ms after SIGTERM`;
  });

  // A fresh server that has nothing cached must give B the same answer.
  const fresh = await test("server_fresh_start", async () => {
    const s = await startServer(opts, "fresh", ["--parallel", "1", "--model-name", FRESH_NAME, "-c", "4096", "--cors", CORS]);
    return { detail: `--parallel 1, listening on port ${s.port} after ${s.startMs} ms`, s };
  }).then((r) => r?.s);
  if (!fresh) return failUnreported("the second server did not start (see server_fresh_start)");
  const c2 = new OpenAI({ baseURL: `${fresh.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30000 });
  await test("server_fresh_model_name", async () => {
    const ids = [];
    for await (const m of c2.models.list()) ids.push(m.id);
    same(ids, [FRESH_NAME], "--model-name: the model ids");
    return `--model-name ${FRESH_NAME}: /v1/models lists ${show(ids)}`;
  });
  // --cors: a browser's preflight is answered (no key needed), and responses name the origin.
  await test("server_fresh_cors", async () => {
    const pre = await http(fresh, "OPTIONS", "/v1/chat/completions", {
      headers: { origin: CORS, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
    });
    check(pre.status === 204, `preflight: HTTP ${pre.status}: ${pre.text}`);
    check(pre.headers.get("access-control-allow-origin") === CORS, `preflight allows origin ${show(pre.headers.get("access-control-allow-origin"))}`);
    check(/POST/.test(pre.headers.get("access-control-allow-methods") ?? "") && /authorization/i.test(pre.headers.get("access-control-allow-headers") ?? ""),
      `preflight methods ${show(pre.headers.get("access-control-allow-methods"))}, headers ${show(pre.headers.get("access-control-allow-headers"))}`);
    const r = await http(fresh, "GET", "/v1/models", { headers: { origin: CORS } });
    check(r.status === 200 && r.headers.get("access-control-allow-origin") === CORS, `GET /v1/models: HTTP ${r.status}, origin ${show(r.headers.get("access-control-allow-origin"))}`);
    return `--cors ${CORS}: preflight 204, responses carry the origin`;
  });
  await test("server_fresh_same_answer", async () => {
    check(prefix, "needs server_prefix_reuse");
    const b = await c2.chat.completions.create(prefix.reqB);
    const bm = checkChatCompletion(b, { name: FRESH_NAME, maxTokens: 6 });
    same(bm, prefix.bm, "B's message on the fresh server and with the cached prefix");
    same([b.usage.prompt_tokens, b.usage.completion_tokens], [prefix.b.usage.prompt_tokens, prefix.b.usage.completion_tokens], "B's token counts");
    check(cachedOf(b.usage) === 0, `cached_tokens ${show(cachedOf(b.usage))} on a fresh server`);
    return `same message (${describe(bm)}) and usage, 0 cached tokens`;
  });
  // A non-streamed request whose client gives up must free the only slot at once, not generate
  // its ~4000 tokens (tens of seconds here) for nobody.
  await test("server_fresh_gone_nonstream", async () => {
    const ac = new AbortController();
    const slow = fetch(`${fresh.url}/v1/completions`, {
      method: "POST", headers: { "content-type": "application/json" }, signal: ac.signal,
      body: JSON.stringify({ model: FRESH_NAME, prompt: "Go on and on:", max_tokens: 4000, temperature: 1, seed: 5 }),
    }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 500));
    ac.abort();
    await slow;
    const t0 = Date.now();
    const r = await c2.completions.create({ model: FRESH_NAME, prompt: "Then:", max_tokens: 3, temperature: 0 });
    const ms = Date.now() - t0;
    checkTextCompletion(r, { name: FRESH_NAME, maxTokens: 3 });
    check(ms < 5000, `the next request on the one slot took ${ms} ms: the abandoned one kept generating`);
    check(/ 499: .*finish client gone/.test(fresh.log), `no "499 ... client gone" log line: ${tail(fresh.log)}`);
    return `aborted after 500 ms; the next request on the only slot took ${ms} ms`;
  });
  await test("server_fresh_sigterm", async () => {
    const ex = await stopServer(fresh, work);
    check(ex.code === 0 && ex.signal === null, `exit code ${ex.code}, signal ${ex.signal}; output: ${tail(fresh.log)}`);
    return `exit 0 ${ex.ms} ms after SIGTERM`;
  });

  // --steer applies a control vector to every slot: the greedy story changes, the same way twice.
  await test("server_steer", async () => {
    if (!opts.steer) throw new Skip("no --steer-file given (server.test.sh makes one with glimmer steer-extract)");
    check(story, "needs server_completion_stream's greedy story");
    const s = await startServer(opts, "steered", ["--steer", `${opts.steer},scale=24`]);
    try {
      const c3 = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30000 });
      const a = checkTextCompletion(await c3.completions.create(story.req), { name, maxTokens: 10 }).text;
      const b = checkTextCompletion(await c3.completions.create(story.req), { name, maxTokens: 10 }).text;
      check(a !== story.text, `steered text ${show(a)} is the unsteered one`);
      check(a === b, `steered greedy texts differ: ${show(a)}, then ${show(b)}`);
      return `steered: ${show(a)}; unsteered: ${show(story.text)}`;
    } finally {
      const ex = await stopServer(s, work);
      check(ex.code === 0, `the steered server exited ${show(ex)}`);
    }
  });
}

try {
  await main();
} catch (e) {
  failUnreported(`the test program failed: ${e?.stack ?? e}`);
}
killChildren();
process.exit(anyFailed ? 1 : 0);
