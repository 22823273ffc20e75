#!/usr/bin/env node
// A minimal areasync agent in JavaScript: proof that the wire protocol is all a client needs.
//
// It connects to one session with a token, lists the tools, releases its turn until the user
// writes, answers the user with a tool call (AgentUserInterface__send_message_to_user), and
// prints a JSON report on stdout. Every frame it sends is checked against the published JSON
// Schema first (served at GET /api/schema, or a file), so a drift between this agent and the
// protocol fails loudly here instead of as an error from the server.
//
//   node agent.mjs --url ws://127.0.0.1:8765/sessions/scenario_tutorial --token T
//                  [--schema FILE] [--reply TEXT] [--timeout SECONDS]
//
// Exit status: 0 when the reply was delivered, 1 otherwise (the report says why).

import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import WebSocket from "ws";

const { values: opts } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    schema: { type: "string" },
    reply: { type: "string", default: "Hello from the JavaScript agent!" },
    timeout: { type: "string", default: "30" },
  },
});
if (!opts.url || !opts.token) {
  console.error("usage: node agent.mjs --url ws://HOST:PORT/sessions/ID --token T");
  process.exit(2);
}

const REPLY_TOOL = "AgentUserInterface__send_message_to_user";

// -- the published schema ------------------------------------------------------------------

async function loadSchema() {
  if (opts.schema) return JSON.parse(await readFile(opts.schema, "utf8"));
  const http = new URL(opts.url);
  http.protocol = http.protocol === "wss:" ? "https:" : "http:";
  http.pathname = "/api/schema";
  const response = await fetch(http, { headers: { Authorization: `Bearer ${opts.token}` } });
  if (!response.ok) throw new Error(`GET ${http} answered ${response.status}`);
  return response.json();
}

// Enough of JSON Schema for client frames: the frame type exists, required fields are there,
// no field is unknown (the server rejects unknown fields too), and simple types match.
function checkFrame(schema, frame) {
  const mapping = schema.$defs.ClientFrame.discriminator.mapping;
  const ref = mapping[frame.type];
  if (!ref) throw new Error(`frame type ${frame.type} is not in the schema`);
  const def = schema.$defs[ref.split("/").pop()];
  for (const name of def.required ?? []) {
    if (!(name in frame)) throw new Error(`${frame.type}: missing required field ${name}`);
  }
  for (const [name, value] of Object.entries(frame)) {
    const prop = def.properties?.[name];
    if (!prop) {
      if (def.additionalProperties === false) throw new Error(`${frame.type}: unknown ${name}`);
      continue;
    }
    const type = prop.type;
    const ok =
      type === undefined ||
      (type === "string" && typeof value === "string") ||
      (type === "integer" && Number.isInteger(value)) ||
      (type === "number" && typeof value === "number") ||
      (type === "boolean" && typeof value === "boolean") ||
      (type === "object" && value !== null && typeof value === "object");
    if (!ok) throw new Error(`${frame.type}.${name}: expected ${type}`);
  }
}

// -- the connection ------------------------------------------------------------------------

class Session {
  constructor(ws, schema) {
    this.ws = ws;
    this.schema = schema;
    this.nextId = 1;
    this.pending = new Map();
    this.items = [];
    this.waiters = [];
    ws.on("message", (data) => this.onFrame(JSON.parse(data.toString())));
  }

  send(frame) {
    checkFrame(this.schema, frame);
    this.ws.send(JSON.stringify(frame));
  }

  // A request with a fresh id; resolves with result.value, rejects on an error frame.
  request(frame) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ ...frame, id });
    });
  }

  onFrame(frame) {
    if (frame.type === "result" || frame.type === "error" || frame.type === "pong") {
      const pending = this.pending.get(frame.id);
      if (!pending) return;
      this.pending.delete(frame.id);
      if (frame.type === "error") {
        pending.reject(new Error(`${frame.code}: ${frame.message}`));
      } else {
        pending.resolve(frame.value);
      }
      return;
    }
    if (["event", "notification", "clock", "ended"].includes(frame.type)) {
      this.items.push(frame);
      for (const wake of this.waiters.splice(0)) wake();
    }
    // Unknown frame types are ignored, as the protocol asks of every client.
  }

  // The next stream item matching `predicate`, looking at items from index `from` on.
  async next(predicate, from) {
    for (;;) {
      for (let i = from; i < this.items.length; i++) {
        if (predicate(this.items[i])) return { item: this.items[i], index: i };
      }
      from = this.items.length;
      await new Promise((wake) => this.waiters.push(wake));
    }
  }
}

function open(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}

function firstFrame(ws) {
  return new Promise((resolve) => ws.once("message", (data) => resolve(JSON.parse(data))));
}

// -- the agent -----------------------------------------------------------------------------

async function main() {
  const report = { ok: false };
  const schema = await loadSchema();
  const ws = await open(opts.url);
  const welcomed = firstFrame(ws);
  const hello = { type: "hello", id: 0, role: "agent", token: opts.token };
  checkFrame(schema, hello);
  ws.send(JSON.stringify(hello));
  const welcome = await welcomed;
  if (welcome.type !== "welcome") throw new Error(`hello refused: ${JSON.stringify(welcome)}`);
  report.session_id = welcome.session_id;
  report.scenario_id = welcome.scenario_id;
  const session = new Session(ws, schema);

  const tools = await session.request({ type: "list_tools" });
  report.tools = tools.length;
  if (!tools.some((tool) => tool.name === REPLY_TOOL)) {
    throw new Error(`the session has no ${REPLY_TOOL} tool`);
  }

  // Hand the turn back until the user writes: in fast mode the clock then jumps to the next
  // due item, and every notification gives the agent its turn (and the busy lease) back.
  let from = 0;
  for (;;) {
    await session.request({ type: "idle" });
    const { item, index } = await session.next(
      (i) => i.type === "notification" || i.type === "ended",
      from,
    );
    from = index + 1;
    if (item.type === "ended") throw new Error("the session ended before the user wrote");
    if (item.notification.message_type === "USER_MESSAGE") {
      report.user_message = userText(item.notification.message);
      report.user_message_time = item.notification.timestamp;
      break;
    }
  }

  const reply = `${opts.reply} (you wrote ${JSON.stringify(report.user_message)})`;
  report.reply_result = await session.request({
    type: "call_tool",
    tool: REPLY_TOOL,
    args: { content: reply },
  });
  report.reply = reply;
  await session.request({ type: "idle" });
  report.items_seen = session.items.length;
  report.ok = true;
  ws.close(1000);
  return report;
}

// ARE renders a user message's notification as header lines around the content:
//   Received at: ...\nSender: User\nMessage: <content, maybe several lines>\nAlready read: ...
//   \nRead at: ...
// The user's words are from "Message: " up to the trailing headers (which may be absent).
function userText(notification) {
  const start = notification.indexOf("Message: ");
  if (start < 0) return notification.trim();
  const content = notification.slice(start + "Message: ".length);
  return content.replace(/\n(Already read|Read at): [^\n]*/g, "").trim();
}

const timeout = setTimeout(() => {
  console.log(JSON.stringify({ ok: false, error: `timed out after ${opts.timeout} s` }));
  process.exit(1);
}, Number(opts.timeout) * 1000);

main()
  .then((report) => {
    clearTimeout(timeout);
    console.log(JSON.stringify(report));
    process.exit(report.ok ? 0 : 1);
  })
  .catch((error) => {
    clearTimeout(timeout);
    console.log(JSON.stringify({ ok: false, error: String(error.message ?? error) }));
    process.exit(1);
  });
