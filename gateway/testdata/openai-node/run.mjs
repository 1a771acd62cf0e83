// Drives a real `talaria serve` with the official openai Node client and
// prints what it saw as one JSON object; internal/testing/hostile/openai_node_test.go
// checks it. Env: TALARIA_URL (the server's base URL), ALICE and BOB
// (tokens of two principals).
import OpenAI from "openai";

const base = process.env.TALARIA_URL.replace(/\/$/, "") + "/v1";
const client = (apiKey, headers = {}) =>
  new OpenAI({ baseURL: base, apiKey, maxRetries: 0, timeout: 60_000, defaultHeaders: headers });
const alice = client(process.env.ALICE);
const out = {};

// failure records an API error as the client reports it.
const failure = (e) => ({ status: e.status, type: e.type, code: e.code, message: e.message });

async function step(name, fn) {
  try {
    out[name] = await fn();
  } catch (e) {
    out[name] = { thrown: failure(e) };
  }
}

await step("models", async () => {
  const list = [];
  for await (const m of alice.models.list()) list.push(m.id);
  return list;
});

await step("chat", async () => {
  const { data, response } = await alice.chat.completions
    .create({ model: "m", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "kumquat" }] })
    .withResponse();
  return { session: response.headers.get("x-talaria-session"), content: data.choices[0].message.content,
    finish: data.choices[0].finish_reason, usage: data.usage, object: data.object };
});

const session = out.chat.session;

await step("chat_stream", async () => {
  const { data: stream, response } = await client(process.env.ALICE, { "X-Talaria-Session": session }).chat.completions
    .create({ model: "m", stream: true, stream_options: { include_usage: true },
      messages: [{ role: "user", content: "again" }] })
    .withResponse();
  let content = "", usage = null, chunks = 0, finish = null;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      content += c.delta?.content ?? "";
      finish = c.finish_reason ?? finish;
    }
  }
  return { session: response.headers.get("x-talaria-session"), content, usage, chunks, finish };
});

await step("responses", async () => {
  const { data, response } = await alice.responses
    .create({ model: "m", instructions: "Be brief.", input: "fig" })
    .withResponse();
  return { session: response.headers.get("x-talaria-session"), id: data.id, text: data.output_text,
    status: data.status, usage: data.usage };
});

await step("responses_stream", async () => {
  const stream = await alice.responses.create({ model: "m", stream: true, input: "date",
    previous_response_id: out.responses.id });
  const types = [];
  let text = "", final = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.completed") final = ev.response;
  }
  return { types, text, final_text: final?.output_text, usage: final?.usage, id: final?.id };
});

// The stream() helper checks the event sequence as it accumulates it.
await step("responses_helper", async () => {
  const stream = alice.responses.stream({ model: "m", input: "elderberry" });
  const final = await stream.finalResponse();
  return { text: final.output_text, status: final.status };
});

await step("wrong_token", async () => {
  await client("tal_not-a-token").chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
  return { ok: true };
});

await step("other_session", async () => {
  await client(process.env.BOB, { "X-Talaria-Session": session }).chat.completions
    .create({ model: "m", messages: [{ role: "user", content: "hi" }] });
  return { ok: true };
});

await step("other_session_responses", async () => {
  await client(process.env.BOB).responses.create({ model: "m", input: "hi", previous_response_id: out.responses.id });
  return { ok: true };
});

// A client that stops reading and closes the stream mid-answer.
await step("interrupted", async () => {
  const { data: stream, response } = await alice.chat.completions
    .create({ model: "m", stream: true, messages: [{ role: "user", content: "slow" }] })
    .withResponse();
  let first = "";
  for await (const chunk of stream) {
    first += chunk.choices[0]?.delta?.content ?? "";
    if (first) break; // break aborts the request
  }
  return { session: response.headers.get("x-talaria-session"), turn: response.headers.get("x-talaria-turn"), first };
});

console.log(JSON.stringify(out));
