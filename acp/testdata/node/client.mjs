// Drives `talaria acp` with the official ACP TypeScript SDK as a real client:
// initialize → session/new → a prompt whose tool call needs permission
// (granted) → a second prompt cancelled mid-answer → session/load →
// session/list. Prints what it saw as one JSON document on stdout; the Go
// test judges it.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const bin = process.env.TALARIA_BIN;
const args = JSON.parse(process.env.TALARIA_ARGS);
const cwd = process.env.TALARIA_WS;

const child = spawn(bin, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const seen = { updates: [], permissions: [] };
let firstChunk;
const gotChunk = new Promise((resolve) => (firstChunk = resolve));
let phase = "";

const app = acp
  .client()
  .onRequest("session/request_permission", ({ params }) => {
    seen.permissions.push({ phase, toolCall: params.toolCall, options: params.options.map((o) => o.kind) });
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onNotification("session/update", ({ params }) => {
    seen.updates.push({ phase, update: params.update });
    if (phase === "cancel" && params.update.sessionUpdate === "agent_message_chunk") firstChunk();
  });

try {
  await app.connectWith(stream, async (agent) => {
    phase = "initialize";
    seen.initialize = await agent.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
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

    phase = "cancel";
    const second = agent.request("session/prompt", {
      sessionId: s.sessionId,
      prompt: [{ type: "text", text: "now tell me a long story" }],
    });
    await gotChunk;
    await agent.notify("session/cancel", { sessionId: s.sessionId });
    seen.cancelled = await second;

    phase = "load";
    seen.load = await agent.request("session/load", { sessionId: s.sessionId, cwd, mcpServers: [] });
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
process.stdout.write(JSON.stringify(seen) + "\n");
