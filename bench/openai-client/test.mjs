// Drives `rigscope serve --model synthetic:tiny` with the openai npm client
// (the one editors and agents use): models, completions and chat, whole and
// streamed, stop strings, errors, and a stream the client aborts. Greedy
// output through the API must equal `rigscope generate` for the same prompt.
//
//   npm ci && node test.mjs        (RIGSCOPE_BIN=path skips the go build)
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import OpenAI from "openai";

const root = resolve(import.meta.dirname, "../..");
const tmp = mkdtempSync(join(tmpdir(), "rigscope-openai-"));
const bin = process.env.RIGSCOPE_BIN || join(tmp, "rigscope");
const MODEL = "synthetic:tiny";
const KEY = "test-key";
const N = 24;

let server;
let failures = 0;
function check(name, ok, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? ": " + detail : ""}`);
  if (!ok) failures++;
}

function generate(prompt) {
  const out = execFileSync(bin, ["generate", "--model", MODEL, "--prompt", prompt, "--max-tokens", String(N), "--temperature", "0", "--json"]);
  return JSON.parse(out).text;
}

// startServer runs `rigscope serve` on a free loopback port and resolves
// with the address it prints.
function startServer() {
  return new Promise((ok, fail) => {
    server = spawn(bin, ["serve", "--model", MODEL, "--addr", "127.0.0.1:0", "--api-key", KEY, "--chat-template", "chatml"], { stdio: ["ignore", "inherit", "pipe"] });
    let log = "";
    server.stderr.on("data", (b) => {
      log += b;
      const m = /at http:\/\/([0-9.:]+)\/v1/.exec(log);
      if (m) ok(m[1]);
    });
    server.on("exit", (code) => fail(new Error(`rigscope serve exited ${code}:\n${log}`)));
  });
}

async function collect(stream, field) {
  let text = "", finish = null, usage = null, chunks = 0;
  for await (const c of stream) {
    chunks++;
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      text += field(ch) ?? "";
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  return { text, finish, usage, chunks };
}

async function expectError(name, status, fn) {
  try {
    await fn();
    check(name, false, "no error");
  } catch (e) {
    check(name, e instanceof OpenAI.APIError && e.status === status && typeof e.message === "string", `${e.status} ${e.message}`);
  }
}

async function main() {
  if (!process.env.RIGSCOPE_BIN) {
    execFileSync("go", ["build", "-tags", "headless", "-o", bin, "."], { cwd: root, stdio: "inherit" });
  }
  const addr = await startServer();
  const client = new OpenAI({ baseURL: `http://${addr}/v1`, apiKey: KEY, maxRetries: 0 });

  const prompt = "Once upon a time";
  const want = generate(prompt);
  const chatPrompt = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n";
  const wantChat = generate(chatPrompt);
  const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: prompt }];
  const greedy = { model: MODEL, max_tokens: N, temperature: 0 };

  const models = await client.models.list();
  check("models.list names the model", models.data.length === 1 && models.data[0].id === MODEL, JSON.stringify(models.data));

  const c = await client.completions.create({ ...greedy, prompt });
  check("completions = rigscope generate", c.choices[0].text === want, JSON.stringify(c.choices[0].text));
  check("completions usage", c.usage.completion_tokens === N && c.usage.total_tokens === c.usage.prompt_tokens + N && c.choices[0].finish_reason === "length", JSON.stringify(c.usage));

  const cs = await collect(await client.completions.create({ ...greedy, prompt, stream: true }), (ch) => ch.text);
  check("completions stream = rigscope generate", cs.text === want && cs.finish === "length", `${cs.chunks} chunks`);

  const chat = await client.chat.completions.create({ ...greedy, messages });
  check("chat = rigscope generate (ChatML prompt)", chat.choices[0].message.content === wantChat && chat.choices[0].message.role === "assistant", JSON.stringify(chat.choices[0].message.content));

  const chs = await collect(await client.chat.completions.create({ ...greedy, messages, stream: true, stream_options: { include_usage: true } }), (ch) => ch.delta.content);
  check("chat stream = rigscope generate", chs.text === wantChat, `${chs.chunks} chunks`);
  check("chat stream usage", chs.usage && chs.usage.completion_tokens === N, JSON.stringify(chs.usage));

  const stop = want.slice(5, 8);
  const cut = want.slice(0, want.indexOf(stop));
  const st = await client.completions.create({ ...greedy, prompt, stop: [stop] });
  check(`stop ${JSON.stringify(stop)} cuts the text`, st.choices[0].text === cut && st.choices[0].finish_reason === "stop", JSON.stringify(st.choices[0].text));
  const sts = await collect(await client.chat.completions.create({ ...greedy, messages, stop: wantChat.slice(4, 6), stream: true }), (ch) => ch.delta.content);
  check("stop in a chat stream", sts.text === wantChat.slice(0, wantChat.indexOf(wantChat.slice(4, 6))) && sts.finish === "stop", JSON.stringify(sts.text));

  await expectError("wrong API key is 401", 401, () => new OpenAI({ baseURL: `http://${addr}/v1`, apiKey: "wrong", maxRetries: 0 }).models.list());
  await expectError("max_tokens 0 is 400", 400, () => client.completions.create({ ...greedy, prompt, max_tokens: 0 }));
  await expectError("unknown model is 404", 404, () => client.chat.completions.create({ ...greedy, model: "gpt-4o", messages }));
  await expectError("a prompt over the context is 400", 400, () => client.completions.create({ ...greedy, prompt: "x".repeat(5000) }));

  const ac = new AbortController();
  const long = await client.completions.create({ model: MODEL, prompt, max_tokens: 3000, ignore_eos: true, stream: true }, { signal: ac.signal });
  let got = 0;
  try {
    for await (const _ of long) {
      if (++got === 2) {
        ac.abort(); // chunks already buffered by the client would still arrive: stop reading
        break;
      }
    }
  } catch (e) {
    if (!(e instanceof OpenAI.APIUserAbortError) && e.name !== "AbortError") throw e;
  }
  const after = await client.completions.create({ ...greedy, prompt });
  check("an aborted stream frees the engine", got === 2 && after.choices[0].text === want, `${got} chunks read before the abort`);
}

try {
  await main();
} catch (e) {
  console.error(e);
  failures++;
} finally {
  if (server) server.kill("SIGINT");
  rmSync(tmp, { recursive: true, force: true });
}
console.log(failures ? `${failures} check(s) failed` : "all checks passed");
process.exit(failures ? 1 : 0);
