// Drives `talaria acp` with the official ACP TypeScript SDK as a real client:
// initialize → session/new → a prompt whose tool call needs permission
// (granted) → a second prompt cancelled mid-answer → session/load →
// session/list. With TALARIA_FS=1 it instead offers the editor file system
// (fs/read_text_file, fs/write_text_file over an in-memory buffer map seeded
// from TALARIA_BUFFERS) and runs one prompt. Prints what it saw as one JSON document on stdout; the Go
// test judges it.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import * as acp from "@agentclientprotocol/sdk";

const bin = process.env.TALARIA_BIN;
const args = JSON.parse(process.env.TALARIA_ARGS);
const cwd = process.env.TALARIA_WS;

const child = spawn(bin, args, { stdio: ["pipe", "pipe", "inherit"] });

const editorFS = process.env.TALARIA_FS === "1";
// Open buffers by absolute path: what the editor shows, saved or not.
const buffers = new Map(Object.entries(JSON.parse(process.env.TALARIA_BUFFERS || "{}")));

const seen = { updates: [], permissions: [], fs: [] };
let firstChunk;
const gotChunk = new Promise((resolve) => (firstChunk = resolve));
let phase = "";
// The SDK resolves a request as soon as its response arrives but runs
// notification handlers asynchronously (schema validation first), so the
// session/update notifications sent before a response (session/load's
// replay) may still be pending when it resolves. settle waits until every
// session/update the agent has written so far (counted on the raw stream,
// which sees a notification before the response that follows it) has
// reached the handler: a condition, not a fixed pause.
let written = 0;
let handled = 0;
const decoder = new StringDecoder("utf8");
let partial = "";
child.stdout.on("data", (chunk) => {
  partial += decoder.write(chunk);
  let nl;
  while ((nl = partial.indexOf("\n")) >= 0) {
    const line = partial.slice(0, nl);
    partial = partial.slice(nl + 1);
    try {
      if (JSON.parse(line).method === "session/update") written++;
    } catch {
      // not JSON: the SDK reports it
    }
  }
});
// An update the SDK refused would never reach the handler: fail loudly
// (seen.error) rather than hang.
const settle = async () => {
  const deadline = Date.now() + 20000;
  while (handled < written) {
    if (Date.now() > deadline) throw new Error(`settle: ${written} session/update written, ${handled} handled`);
    await new Promise((resolve) => setImmediate(resolve));
  }
};
// The SDK's reader comes after the counting tap, so the tap sees each chunk
// first (both in the same 'data' event, before any handler runs).
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const app = acp
  .client()
  .onRequest("session/request_permission", ({ params }) => {
    seen.permissions.push({ phase, toolCall: params.toolCall, options: params.options.map((o) => o.kind) });
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest("fs/read_text_file", ({ params }) => {
    seen.fs.push({ phase, method: "read", path: params.path, sessionId: params.sessionId });
    if (!buffers.has(params.path)) throw acp.RequestError.resourceNotFound(params.path);
    return { content: buffers.get(params.path) };
  })
  .onRequest("fs/write_text_file", ({ params }) => {
    seen.fs.push({ phase, method: "write", path: params.path, sessionId: params.sessionId });
    buffers.set(params.path, params.content);
    return {};
  })
  .onNotification("session/update", ({ params }) => {
    seen.updates.push({ phase, update: params.update });
    handled++;
    if (phase === "cancel" && params.update.sessionUpdate === "agent_message_chunk") firstChunk();
  });

try {
  await app.connectWith(stream, async (agent) => {
    phase = "initialize";
    seen.initialize = await agent.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: editorFS, writeTextFile: editorFS }, terminal: false },
      clientInfo: { name: "talaria-acp-test", version: "1" },
    });
    phase = "new";
    const s = await agent.request("session/new", { cwd, mcpServers: [] });
    seen.sessionId = s.sessionId;

    phase = "prompt";
    seen.prompt = await agent.request("session/prompt", {
      sessionId: s.sessionId,
      prompt: [{ type: "text", text: "write hello.txt please" }],
    });
    await settle();

    if (editorFS) return;

    phase = "cancel";
    const second = agent.request("session/prompt", {
      sessionId: s.sessionId,
      prompt: [{ type: "text", text: "now tell me a long story" }],
    });
    await gotChunk;
    await agent.notify("session/cancel", { sessionId: s.sessionId });
    seen.cancelled = await second;
    await settle();

    phase = "load";
    seen.load = await agent.request("session/load", { sessionId: s.sessionId, cwd, mcpServers: [] });
    await settle();
    phase = "list";
    seen.list = await agent.request("session/list", {});
    phase = "missing";
    try {
      await agent.request("session/load", { sessionId: "no-such-session", cwd, mcpServers: [] });
    } catch (e) {
      seen.missingError = { code: e.code, message: e.message };
    }
  });
} catch (e) {
  seen.error = String(e && e.stack ? e.stack : e);
}
child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", (c) => resolve(c)));
seen.exitCode = code;
seen.buffers = Object.fromEntries(buffers);
process.stdout.write(JSON.stringify(seen) + "\n");
