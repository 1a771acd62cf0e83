// Talaria web page: plain JavaScript, no build step. The token lives in
// sessionStorage; events arrive over fetch-streamed Server-Sent Events
// (EventSource cannot send an Authorization header) and resume with
// Last-Event-ID after any drop.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  token: sessionStorage.getItem("talaria_token") || "",
  session: null,      // current session id
  lastId: 0,          // last event id seen on the current stream
  abort: null,        // aborts the current stream
  running: null,      // id of the running turn
  lastSent: null,     // id of the turn of the message sent last, until it ends
  drafts: {},         // turn id -> draft element
  cards: {},          // call id -> tool card
};

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: "Bearer " + state.token } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  if (resp.status === 401) { signOut("The token was refused."); throw new Error("unauthorized"); }
  const text = await resp.text();
  const data = text ? JSON.parse(text) : {};
  if (!resp.ok) throw new Error((data.error && data.error.message) || resp.statusText);
  return data;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function scrollDown() { const t = $("transcript"); t.scrollTop = t.scrollHeight; }

// On a narrow screen the sessions list is a drawer over the conversation.
function setDrawer(open) {
  $("app-view").classList.toggle("drawer-open", open);
  $("drawer-toggle").setAttribute("aria-expanded", String(open));
}

// ---- sign in ----
async function signIn(token) {
  state.token = token;
  try {
    await api("GET", "/v1/sessions?limit=1");
  } catch (e) {
    $("signin-error").textContent = "Sign-in failed: " + e.message;
    $("signin-error").hidden = false;
    return;
  }
  sessionStorage.setItem("talaria_token", token);
  $("signin-view").hidden = true;
  $("app-view").hidden = false;
  await loadSessions();
  const last = sessionStorage.getItem("talaria_session");
  if (last) openSession(last);
}

function signOut(msg) {
  sessionStorage.removeItem("talaria_token");
  state.token = "";
  if (state.abort) state.abort.abort();
  $("app-view").hidden = true;
  $("signin-view").hidden = false;
  if (msg) { $("signin-error").textContent = msg; $("signin-error").hidden = false; }
}

// ---- sessions ----
async function loadSessions() {
  const data = await api("GET", "/v1/sessions?limit=100");
  const ul = $("sessions");
  ul.textContent = "";
  for (const s of data.sessions) {
    const li = el("li");
    li.dataset.id = s.id;
    li.append(el("span", "", s.title || "(untitled)"), el("small", "", s.id + (s.busy ? " · running" : "")));
    if (s.id === state.session) li.classList.add("active");
    li.addEventListener("click", () => openSession(s.id));
    ul.append(li);
  }
}

async function search(q) {
  if (!q.trim()) return loadSessions();
  const data = await api("GET", "/v1/search?q=" + encodeURIComponent(q));
  const ul = $("sessions");
  ul.textContent = "";
  for (const h of data.hits) {
    const li = el("li");
    li.append(el("span", "", h.snippet), el("small", "", h.session_id));
    li.addEventListener("click", () => openSession(h.session_id));
    ul.append(li);
  }
}

async function newSession() {
  const s = await api("POST", "/v1/sessions", {});
  await loadSessions();
  openSession(s.id);
}

async function openSession(id) {
  setDrawer(false);
  if (state.abort) state.abort.abort();
  state.session = id;
  state.lastId = 0;
  state.drafts = {};
  state.cards = {};
  state.running = null;
  state.failed = {};
  state.ended = {};
  // The previous session's stream is gone: "live" is said again only
  // once this session's stream answers.
  $("conn").textContent = "connecting…";
  sessionStorage.setItem("talaria_session", id);
  $("transcript").textContent = "";
  $("status").textContent = "";
  for (const li of $("sessions").children) li.classList.toggle("active", li.dataset.id === id);
  $("composer").disabled = false;
  $("send").disabled = false;
  try {
    const s = await api("GET", "/v1/sessions/" + id);
    $("session-title").textContent = s.title || s.id;
    showUsage(s.usage);
  } catch (e) {
    $("session-title").textContent = "Session not found";
    return;
  }
  stream(id);
}

function showUsage(u) {
  if (!u) return;
  let s = u.api_calls + " calls · " + u.input_tokens + " in / " + u.output_tokens + " out tokens";
  if (u.cost_usd > 0) s += " · $" + u.cost_usd.toFixed(4);
  $("usage").textContent = s;
}

async function refreshUsage() {
  try {
    const s = await api("GET", "/v1/sessions/" + state.session);
    $("session-title").textContent = s.title || s.id;
    showUsage(s.usage);
  } catch (e) { /* shown next time */ }
}

// ---- events ----
async function stream(id) {
  const ctrl = new AbortController();
  state.abort = ctrl;
  let delay = 500;
  while (!ctrl.signal.aborted && state.session === id) {
    try {
      const headers = { Authorization: "Bearer " + state.token, Accept: "text/event-stream" };
      if (state.lastId > 0) headers["Last-Event-ID"] = String(state.lastId);
      const resp = await fetch("/v1/sessions/" + id + "/events", { headers, signal: ctrl.signal });
      if (resp.status === 401) { signOut("The token was refused."); return; }
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      $("conn").textContent = "live";
      delay = 500;
      await readEvents(resp.body, (ev) => handle(ev));
    } catch (e) {
      if (ctrl.signal.aborted) return;
    }
    $("conn").textContent = "reconnecting…";
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 8000);
  }
}

async function readEvents(body, fn) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const ev = { id: 0, type: "", data: "" };
      for (const line of block.split("\n")) {
        if (line.startsWith("id: ")) ev.id = Number(line.slice(4));
        else if (line.startsWith("event: ")) ev.type = line.slice(7);
        else if (line.startsWith("data: ")) ev.data += line.slice(6);
      }
      if (ev.type) {
        if (ev.id) state.lastId = ev.id;
        fn({ id: ev.id, type: ev.type, data: JSON.parse(ev.data) });
      }
    }
  }
}

function setRunning(turnID) {
  state.running = turnID;
  $("stop").hidden = !(turnID || state.lastSent);
}

function draft(turn) {
  let d = state.drafts[turn];
  if (!d) {
    d = el("div", "msg assistant draft");
    d.dataset.turn = turn;
    d.text = el("div", "text md");
    d.raw = "";
    d.append(d.text);
    state.drafts[turn] = d;
    $("transcript").append(d);
  }
  return d;
}

// renderDraft re-renders a streaming answer as markdown at most once per
// animation frame, not once per token, and only its still-open tail.
function renderDraft(d) {
  if (d.pending) return;
  d.pending = true;
  requestAnimationFrame(() => {
    d.pending = false;
    mdUpdate(d.text, d.raw);
    scrollDown();
  });
}

function toolCard(id, name, args) {
  let c = state.cards[id];
  if (!c) {
    c = el("details", "tool-card");
    c.dataset.call = id;
    c.summaryEl = el("summary", "", "⚙ " + name);
    c.argsEl = el("pre", "args", args || "");
    c.approvalEl = el("div", "approval");
    c.approvalEl.hidden = true;
    c.resultEl = el("pre", "result", "");
    c.append(c.summaryEl, c.approvalEl, el("div", "", "arguments"), c.argsEl, el("div", "", "result"), c.resultEl);
    state.cards[id] = c;
    $("transcript").append(c);
  }
  return c;
}

function finishCard(c, name, result, isError, ms) {
  c.resultEl.textContent = result;
  c.classList.toggle("error", !!isError);
  c.classList.add("done");
  c.summaryEl.textContent = (isError ? "✗ " : "✓ ") + name + (ms !== undefined ? " · " + ms + " ms" : "");
}

// renderTodo shows the model's plan (a stored row of kind "todo", its
// items as JSON) as a checklist, each time it changes.
function renderTodo(text) {
  let items = [];
  try { items = JSON.parse(text) || []; } catch (e) { return; }
  const marks = { pending: "☐", in_progress: "▶", done: "☑" };
  const box = el("div", "msg todo");
  const done = items.filter((it) => it.status === "done").length;
  box.append(el("div", "todo-head", "plan " + done + "/" + items.length + " done"));
  for (const it of items) {
    box.append(el("div", "todo-item " + it.status, (marks[it.status] || "☐") + " " + it.text));
  }
  $("transcript").append(box);
}

function renderMessage(m) {
  const t = $("transcript");
  if (m.role === "tool") {
    const c = state.cards[m.tool_call_id] || toolCard(m.tool_call_id, "tool", "");
    const name = c.summaryEl.textContent.replace(/^[^ ]+ /, "").replace(/ ·.*$/, "");
    finishCard(c, name, m.text, m.is_error, c.ms);
    return;
  }
  if (m.kind === "todo") { renderTodo(m.text); return; }
  if (m.role === "user") {
    const d = el("div", "msg user" + (m.kind === "unsent" ? " unsent" : ""), m.text);
    t.append(d);
    return;
  }
  // assistant: the stored row replaces the streamed draft of its turn.
  const d = state.drafts[m.turn_id];
  let box;
  if (d && d.isConnected) {
    box = d;
    box.className = "msg assistant";
    delete state.drafts[m.turn_id];
  } else {
    box = el("div", "msg assistant");
    t.append(box);
  }
  box.textContent = "";
  if (m.reasoning) {
    const r = el("details", "reasoning");
    r.append(el("summary", "", "reasoning"), el("div", "", m.reasoning));
    box.append(r);
  }
  if (m.kind === "failure") {
    box.classList.add("failure");
    // turn_finished then adds no second failure box for this turn.
    if (state.failed) state.failed[m.turn_id] = true;
  }
  if (m.kind === "failure") {
    box.append(el("div", "text", m.text));
  } else {
    const text = el("div", "text md");
    text.append(mdRender(m.text || ""));
    box.append(text);
  }
  if (!m.text && !m.reasoning) box.remove();
  for (const c of m.tool_calls || []) {
    const card = toolCard(c.id, c.name, c.arguments);
    t.append(card);
  }
}

function handle(ev) {
  const d = ev.data;
  const t = $("transcript");
  switch (ev.type) {
    case "message": renderMessage(d.message); break;
    case "turn_queued": $("status").textContent = d.position > 0 ? "queued behind " + d.position + " message(s)" : ""; break;
    case "turn_started": setRunning(d.turn_id); $("status").textContent = "working…"; break;
    case "text_delta": { const x = draft(d.turn_id); x.raw += d.text; renderDraft(x); break; }
    case "reasoning_delta": {
      const x = draft(d.turn_id);
      if (!x.reasoning) { x.reasoning = el("details", "reasoning"); x.reasoning.body = el("div"); x.reasoning.append(el("summary", "", "reasoning"), x.reasoning.body); x.prepend(x.reasoning); }
      x.reasoning.body.textContent += d.text; break;
    }
    case "discard": { const x = state.drafts[d.turn_id]; if (x) { x.raw = ""; x.text.textContent = ""; x.text.mdState = null; } break; }
    case "tool_started": { const c = toolCard(d.call_id, d.name, d.arguments); c.summaryEl.textContent = "⏳ " + d.name; break; }
    case "tool_finished": { const c = toolCard(d.call_id, d.name, d.arguments); c.ms = d.duration_ms; finishCard(c, d.name, d.result, d.is_error, d.duration_ms); break; }
    case "approval_required": {
      const c = toolCard(d.call_id, d.name, d.arguments);
      c.open = true;
      c.approvalEl.textContent = "";
      c.approvalEl.hidden = false;
      c.approvalEl.append(el("span", "", d.name + " wants to run. "));
      for (const [label, cls, decision] of [["Approve", "approve", "allow"], ["Deny", "deny", "deny"], ["Always (this session)", "always", "always"]]) {
        const b = el("button", cls, label);
        b.type = "button";
        b.addEventListener("click", () => api("POST", "/v1/turns/" + d.turn_id + "/approvals/" + encodeURIComponent(d.call_id), { decision }).catch((e) => { $("status").textContent = e.message; }));
        c.approvalEl.append(b);
      }
      break;
    }
    case "approval_resolved": { const c = state.cards[d.call_id]; if (c) { c.approvalEl.hidden = true; c.approvalEl.textContent = ""; } break; }
    case "status": t.append(el("div", "status-line", "· " + d.line)); break;
    case "turn_finished": {
      const r = d.result || {};
      if (state.running === d.turn_id) setRunning(null);
      if (state.lastSent === d.turn_id) state.lastSent = null;
      if (state.ended) state.ended[d.turn_id] = true;
      $("stop").hidden = !(state.running || state.lastSent);
      const x = state.drafts[d.turn_id];
      if (x && !x.raw) x.remove();
      $("status").textContent = r.exit === "completed" ? "" : "turn ended: " + r.exit;
      if (r.exit !== "completed" && r.explanation && !(state.failed && state.failed[d.turn_id])) {
        const box = el("div", "msg failure");
        box.append(el("div", "", "Turn " + r.exit + (r.failure ? " (" + (r.failure.class || r.failure.outcome) + (r.failure.store ? ": " + r.failure.store : "") + (r.failure.failure_retryable ? ", retryable" : "") + ")" : "")));
        box.append(el("div", "explain", r.explanation));
        t.append(box);
      }
      refreshUsage();
      loadSessions().catch(() => {}); // titles are set by the first turn
      break;
    }
    default: break; // newer event types are ignored
  }
  scrollDown();
}

// ---- sending and stopping ----
async function send() {
  const text = $("composer").value;
  if (!text.trim() || !state.session) return;
  $("composer").value = "";
  try {
    const r = await api("POST", "/v1/sessions/" + state.session + "/messages", { text });
    // A short turn can end before this answer arrives: then there is
    // nothing to stop.
    if (!(state.ended && state.ended[r.turn_id])) {
      state.lastSent = r.turn_id;
      $("stop").hidden = false;
    }
  } catch (e) {
    $("status").textContent = "Not sent: " + e.message;
    $("composer").value = text;
  }
}

// stop interrupts the running turn, or cancels the message just sent when
// its turn has not started yet.
async function stop() {
  const id = state.running || state.lastSent;
  if (!id) return;
  try { await api("POST", "/v1/turns/" + id + "/interrupt"); } catch (e) { $("status").textContent = e.message; }
}

document.addEventListener("DOMContentLoaded", () => {
  $("signin-form").addEventListener("submit", (e) => { e.preventDefault(); signIn($("token").value.trim()); });
  $("signout").addEventListener("click", () => signOut());
  $("new-session").addEventListener("click", () => newSession().catch((e) => { $("status").textContent = e.message; }));
  let searchTimer;
  $("search").addEventListener("input", (e) => { clearTimeout(searchTimer); searchTimer = setTimeout(() => search(e.target.value).catch(() => {}), 250); });
  $("composer-form").addEventListener("submit", (e) => { e.preventDefault(); send(); });
  $("composer").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    if ($("app-view").classList.contains("drawer-open")) setDrawer(false);
    else stop();
  });
  $("drawer-toggle").addEventListener("click", () => setDrawer(!$("app-view").classList.contains("drawer-open")));
  $("scrim").addEventListener("click", () => setDrawer(false));
  $("stop").addEventListener("click", stop);
  if (state.token) signIn(state.token);
});
