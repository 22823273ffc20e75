// The dashboard's entry point: reads its token (#token= or ?token=) and ?session=&role= from the
// URL, lists the sessions, opens one over WebSocket and wires the stream to the views and the
// controls to the socket.
// Incoming items are queued and applied once per animation frame, so a burst of thousands of
// events costs one layout, and per-item work is O(1) (see store.js and timeline.js).

import { Admin, AdminError, readScenarioFile } from "./admin.js";
import { SessionCharts } from "./charts.js";
import { Controls } from "./controls.js";
import { fmtAbsolute, fmtCount, fmtOffset, plural } from "./format.js";
import { copyable, showDetail, showEnded, toast } from "./panels.js";
import { Connection } from "./protocol.js";
import { SessionList } from "./sessions.js";
import { endedStatus, liveStatus } from "./states.js";
import { EVENT_TYPES, NOTIFICATION, Store } from "./store.js";
import { Timeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const token = takeToken();
const roleParam = params.get("role");
const offline = params.has("offline"); // benches feed frames through __areasync.feed
const base = new URL("/", location.href); // the service serves this page, its API and sockets

/**
 * The token, read once: from the URL's fragment (`#token=`, as `areasync serve` prints it: never
 * sent to the server) or query (`?token=`), else from this tab's sessionStorage (a reload). It
 * is then kept in sessionStorage and taken out of the address bar and history at once, and
 * from here on travels only in an `Authorization` header (sessions.js) and inside the
 * WebSocket hello (protocol.js): never in a URL, so never in history, a Referer or a log.
 */
function takeToken() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const fromUrl = hash.get("token") || params.get("token");
  if (hash.has("token") || params.has("token")) {
    const url = new URL(location.href);
    url.searchParams.delete("token");
    hash.delete("token");
    url.hash = hash.toString();
    history.replaceState(null, "", url);
  }
  let stored = null;
  try {
    if (fromUrl) sessionStorage.setItem("areasync.token", fromUrl);
    stored = sessionStorage.getItem("areasync.token");
  } catch {
    // storage disabled: the token lives in memory only (a reload needs the URL again)
  }
  return fromUrl || stored || "";
}

const store = new Store();
const charts = new SessionCharts({ lanes: $("chart-lanes"), clock: $("chart-clock"), store });
const view = {
  id: null,
  conn: null,
  welcomeSeq: 0,
  restored: false, // welcome.restored: rebuilt from its journal after a server restart
  forkedFrom: null, // welcome.forked_from: the source and seq of a fork
  clock: null,
  clockAt: 0,
  polledTime: Number.NaN, // the latest time /api/sessions reported: the shown time never falls below it
  shownTime: Number.NaN,
  startTime: 0,
  ended: null,
  pending: [],
  selectedSeq: null,
  lastStatus: "",
};

// -- frame loop: everything visible is updated here, at most once per frame ------------------

const MAX_APPLY_PER_FRAME = 4000;
let frameRequested = false;
let fallbackTimer = null;
const debug = { renders: 0, lastRenderAt: 0, applied: 0, maxFrameMs: 0 };

function schedule() {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(frame);
  // Hidden tabs get no animation frames: still drain the queue now and then.
  clearTimeout(fallbackTimer);
  fallbackTimer = setTimeout(() => frameRequested && frame(), 500);
}

/** Apply what arrived and redraw; from an animation frame, or directly after a user's action. */
function frame() {
  const started = performance.now();
  frameRequested = false;
  clearTimeout(fallbackTimer);
  let countsChanged = false;
  if (view.pending.length) {
    // A huge backlog (a replay of tens of thousands) is spread over a few frames.
    const batch = view.pending;
    const take = Math.min(batch.length, MAX_APPLY_PER_FRAME);
    for (let i = 0; i < take; i += 1) applyItem(batch[i]);
    view.pending = take === batch.length ? [] : batch.slice(take);
    debug.applied += take;
    countsChanged = true;
  }
  timeline.startTime = view.startTime;
  timeline.sync();
  timeline.render();
  if (view.clock) charts.sample(currentTime() - view.startTime);
  charts.update(view.startTime);
  if (countsChanged) renderCounts();
  renderClock();
  renderConnection();
  if (view.clock && sessions) {
    const t = Number($("clock-time").dataset.time);
    sessions.patch(view.id, { status: currentStatus(), elapsed: t - view.startTime, events: store.events });
  }
  $("tl-empty").hidden = store.visible.length > 0;
  $("tl-empty").textContent = store.rows.length ? "No rows match the filters." : "Waiting for events…";
  debug.renders += 1;
  debug.lastRenderAt = performance.now();
  debug.maxFrameMs = Math.max(debug.maxFrameMs, debug.lastRenderAt - started);
  if (isFlowing() || view.pending.length) schedule(); // keep the realtime clock moving smoothly
}

function applyItem(frame) {
  switch (frame.type) {
    case "event":
    case "notification":
      store.add(frame);
      break;
    case "clock":
      // Replayed clock items are history; welcome.clock is already the state at attach.
      if (frame.seq > view.welcomeSeq) setClock(frame.clock);
      break;
    case "ended":
      view.ended = frame;
      showEnded($("ended"), frame);
      addEndedActions(view.id);
      if (view.clock) setClock({ ...view.clock, state: frame.state });
      controls.render();
      break;
    default:
      break;
  }
}

// -- clock --------------------------------------------------------------------------------------

function setClock(clock) {
  if (!clock || typeof clock.time !== "number") return;
  // A clock item published before the server's listing read a later time must not move the
  // shown time back (fast mode publishes no clock item as it steps: the listing is newer).
  if (clock.time < view.polledTime) clock = { ...clock, time: view.polledTime };
  const wasState = view.clock?.state;
  view.clock = clock;
  view.clockAt = performance.now();
  view.startTime = clock.start_time ?? view.startTime;
  if (clock.state !== "running" || wasState !== "running" || !(clock.time <= view.shownTime)) {
    view.shownTime = clock.time;
  }
  if (clock.speed && document.activeElement !== $("speed")) $("speed").value = clock.speed;
  controls.render();
  schedule();
}

function isFlowing() {
  const c = view.clock;
  return !!c && c.state === "running" && c.mode === "realtime" && !view.ended;
}

function currentTime() {
  const c = view.clock;
  if (!c) return Number.NaN;
  if (!isFlowing()) return c.time;
  // Between clock items (published ~4 per second) interpolate, never backwards, at most 1 s.
  const elapsed = Math.min((performance.now() - view.clockAt) / 1000, 1);
  const t = c.time + c.speed * elapsed;
  view.shownTime = Number.isFinite(view.shownTime) ? Math.max(view.shownTime, t) : t;
  return view.shownTime;
}

/** The open session's entry in the sidebar's latest listing, if any. */
function listedEntry() {
  return sessions?.sessions.find((s) => s.id === view.id) || null;
}

/** What the open session's state is called (states.js): the pill, the sidebar's card, the banners. */
function currentStatus() {
  if (view.ended) return endedStatus(view.ended);
  const c = view.clock;
  if (!c) return { label: "connecting", kind: "", idle: false, title: "" };
  const listed = listedEntry();
  const facts = { state: c.state, mode: c.mode, waiting: view.waiting, nextDue: listed?.nextDue, agents: listed?.agents };
  return { kind: "", ...liveStatus(facts) };
}

function renderClock() {
  const c = view.clock;
  const stateEl = $("state");
  const status = currentStatus();
  if (stateEl.dataset.state !== status.label) {
    stateEl.dataset.state = status.label;
    stateEl.textContent = status.label;
    stateEl.title = status.title;
  }
  if (view.idle !== !!status.idle) {
    view.idle = !!status.idle;
    fillWaiting();
    controls.render();
  }
  if (!c) return;
  const t = currentTime();
  const text = fmtOffset(t - view.startTime);
  const timeEl = $("clock-time");
  if (timeEl.textContent !== text) {
    timeEl.textContent = text;
    timeEl.dataset.time = String(t);
  }
  // ARE's loop ticks are not seconds: a jump (or fast mode) moves time without ticking.
  const parts = [c.mode === "realtime" ? `realtime ×${c.speed}` : c.mode, `${plural(c.tick, "loop tick")}`];
  if (c.lag > 0.5) parts.push(`lag ${c.lag.toFixed(1)} s`);
  // A realtime session restored after a restart comes back paused: say why, and what to do.
  // welcome.restored is true for a fork too; the page tells the forks it made itself apart.
  if (view.forkedFrom) parts.push(`forked from ${view.forkedFrom.session_id} at #${view.forkedFrom.seq}`);
  else if (forkedFrom.has(view.id)) parts.push(`forked from ${forkedFrom.get(view.id)}`);
  else if (view.restored) parts.push(c.state === "paused" ? "restored after a restart: paused, Resume goes on" : "restored after a restart");
  // A scenario that sets no start date counts from 0: a 1970 date would only mislead.
  if (view.startTime > 0) parts.push(fmtAbsolute(t));
  const sub = parts.join(" · ");
  if ($("clock-sub").textContent !== sub) $("clock-sub").textContent = sub;
  const hasDuration = c.duration > 0;
  $("progress").hidden = !hasDuration;
  if (hasDuration) {
    const fraction = Math.min(1, Math.max(0, (t - view.startTime) / c.duration));
    $("progress-bar").style.width = `${(fraction * 100).toFixed(2)}%`;
    $("progress").title = `${fmtOffset(t - view.startTime, 0)} of ${fmtOffset(c.duration, 0)}`;
  }
}

// -- counts and filters ---------------------------------------------------------------------------

const chips = new Map();

function buildChips() {
  const container = $("type-chips");
  for (const type of [...EVENT_TYPES, NOTIFICATION]) {
    const chip = document.createElement("button");
    chip.type = "button";
    chip.className = `chip t-${type}`;
    chip.dataset.type = type;
    chip.setAttribute("aria-pressed", "true");
    chip.innerHTML = `<span class="swatch"></span><span class="label"></span><span class="n">0</span>`;
    chip.querySelector(".label").textContent = type === NOTIFICATION ? "Notifications" : type;
    chip.title = `Show or hide ${type === NOTIFICATION ? "notifications" : `${type} events`}`;
    chip.addEventListener("click", () => {
      const visible = chip.getAttribute("aria-pressed") !== "true";
      chip.setAttribute("aria-pressed", String(visible));
      store.setTypeVisible(type, visible);
      refiltered();
    });
    chips.set(type, chip);
    container.append(chip);
  }
  $("app-filter").addEventListener("change", (ev) => {
    store.setApp(ev.target.value);
    refiltered();
  });
  $("text-filter").addEventListener("input", (ev) => {
    store.setText(ev.target.value);
    refiltered();
  });
  $("btn-download").addEventListener("click", downloadTrace);
}

/** Save the open session's events and notifications as a JSON Lines file, as the stream gave
 *  them (one item a line: its seq, type and record). */
function downloadTrace() {
  const lines = store.rows.map((row) =>
    JSON.stringify({ seq: row.seq, type: row.kind, [row.kind === "event" ? "event" : "notification"]: row.record }),
  );
  const blob = new Blob([lines.join("\n") + (lines.length ? "\n" : "")], { type: "application/x-ndjson" });
  const link = Object.assign(document.createElement("a"), {
    href: URL.createObjectURL(blob),
    download: `${view.id || "session"}.jsonl`,
  });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

function refiltered() {
  timeline.invalidate();
  timeline.sync();
  if (view.selectedSeq !== null) timeline.reveal(view.selectedSeq);
  renderCounts();
  frame(); // a user's click: show its effect in the very next paint, not one frame later
}

function renderCounts() {
  for (const [type, chip] of chips) {
    const n = store.typeCounts.get(type) || 0;
    const text = fmtCount(n);
    const label = chip.querySelector(".n");
    if (label.textContent !== text) label.textContent = text;
    chip.classList.toggle("zero", n === 0);
  }
  if (store.newApps) {
    store.newApps = false;
    const select = $("app-filter");
    const current = select.value;
    const options = [...store.appCounts.keys()].sort().map((app) => new Option(app, app));
    select.replaceChildren(new Option("All apps", ""), ...options);
    select.value = current;
  }
  const parts = [plural(store.events, "event"), plural(store.notifications, "notification")];
  if (store.visible.length !== store.rows.length) parts.push(`showing ${fmtCount(store.visible.length)}`);
  const stats = $("stats");
  stats.textContent = parts.join(" · ");
  if (store.failures) {
    const bad = Object.assign(document.createElement("span"), { className: "bad" });
    bad.textContent = `${fmtCount(store.failures)} failed`;
    stats.append(" · ", bad);
  }
}

// -- connection ---------------------------------------------------------------------------------

const STATUS_TEXT = {
  connecting: "connecting…",
  live: "live",
  reconnecting: "reconnecting…",
  ended: "session ended",
  failed: "disconnected",
  closed: "not connected",
};

function renderConnection() {
  const conn = view.conn;
  const state = conn ? conn.state : "closed";
  const detail = view.connDetail || "";
  const seq = conn && conn.lastSeq ? ` · seq ${fmtCount(conn.lastSeq)}` : "";
  const text = `${STATUS_TEXT[state] || state}${detail ? ` (${detail})` : ""}${state === "live" ? seq : ""}`;
  if (text === view.lastStatus) return;
  const wasLive = $("conn").dataset.state === "live";
  view.lastStatus = text;
  $("conn").dataset.state = state;
  $("conn-label").textContent = text;
  // Away from a live stream, say so where the user is looking, and hold the controls.
  const stale = !!view.id && (state === "connecting" || state === "reconnecting" || state === "failed");
  $("session").classList.toggle("stale", stale && !!view.clock);
  const banner = $("conn-banner");
  banner.hidden = !stale || !view.clock;
  banner.dataset.state = state;
  if (stale) {
    const since = conn?.lastSeq ? ` The timeline resumes after item ${fmtCount(conn.lastSeq)}, with nothing missed.` : "";
    banner.textContent =
      state === "failed" ? `Disconnected: ${detail}` : `Connection lost, reconnecting${detail ? ` (${detail})` : ""}.${since}`;
  }
  if (wasLive !== (state === "live")) controls.render();
}

/** Roles to try in hello, best first: ?role= if given, else what the token can be. */
function rolesFor(tokenRole) {
  if (roleParam) return [roleParam];
  if (tokenRole === "observer") return ["observer"];
  return ["controller", "observer"];
}

function openSession(id) {
  if (view.conn) view.conn.stop();
  view.conn = null;
  view.id = id;
  view.welcomeSeq = 0;
  view.restored = false;
  view.forkedFrom = null;
  view.clock = null;
  view.shownTime = Number.NaN;
  view.polledTime = Number.NaN;
  view.idle = false;
  view.ended = null;
  view.pending = [];
  view.connDetail = "";
  view.waiting = !!sessions?.sessions.find((s) => s.id === id)?.waiting;
  $("last-action").textContent = ""; // it was about the session shown before
  fillWaiting(); // nor may its banner show the session shown before's command
  store.clear();
  charts.reset();
  closeDetail();
  timeline.invalidate();
  $("ended").hidden = true;
  $("empty").hidden = true;
  $("session").hidden = false;
  $("session-title").textContent = id;
  $("session-scenario").textContent = "";
  $("crumb").textContent = id;
  document.title = `${id} · areasync`;
  sessions?.setCurrent(id);
  const url = new URL(location.href);
  url.searchParams.set("session", id);
  history.replaceState(null, "", url);

  // Through a cluster's router, straight to the session's node: a browser's WebSocket cannot
  // follow the router's redirect. A session not in the list (a session token, which may not
  // list a cluster's sessions, or ?session= opened before the list came) is looked up first.
  const listed = sessions?.sessions.find((s) => s.id === id);
  const wsUrl = new URL(`sessions/${encodeURIComponent(id)}`, base);
  wsUrl.protocol = wsUrl.protocol === "https:" ? "wss:" : "ws:";
  if (listed?.node && listed.url) wsUrl.href = listed.url;
  if (listed || offline) connectSession(id, wsUrl.href);
  else nodeUrl(id).then((url) => view.id === id && !view.conn && connectSession(id, url || wsUrl.href));
}

/** The WebSocket URL of session `id` on its node, from a cluster router's lookup route
 *  (`/api/sessions/<id>/url`); null where there is none (a one-machine server: dial it). */
async function nodeUrl(id) {
  try {
    const response = await fetch(new URL(`api/sessions/${encodeURIComponent(id)}/url`, base), {
      cache: "no-store",
      headers: token ? { Authorization: `Bearer ${token}` } : {},
      referrerPolicy: "no-referrer",
    });
    if (!response.ok) return null;
    return (await response.json()).url || null;
  } catch {
    return null;
  }
}

/** The role badge: what the page's token is (the admin's token drives as a controller, but it
 *  is the admin's: it may also create, fork and restart). */
function showRole(connected) {
  const role = $("role");
  if (!connected) return;
  const admin = sessions?.access?.role === "admin";
  const name = admin ? "admin" : connected;
  role.dataset.role = name;
  role.textContent = name === "observer" ? "observer · read-only" : name;
  role.title = admin
    ? "The admin token: every session and role; it may create, fork and restart sessions"
    : connected === "observer"
      ? "Watches and inspects; moving the clock needs a controller's token"
      : `This session's ${connected} token`;
}

function connectSession(id, url) {
  const roles = rolesFor(sessions?.access?.role);
  const conn = new Connection({
    url,
    token,
    roles,
    offline,
    batch: params.get("batch") !== "0", // ?batch=0: one message per frame (for comparisons)
    handlers: {
      status: (state, detail) => {
        view.connDetail = detail;
        if (state === "failed") toast($("toasts"), { title: "Disconnected", message: detail, kind: "error" });
        schedule();
      },
      welcome: (w) => {
        view.welcomeSeq = w.seq;
        view.restored = !!w.restored;
        view.forkedFrom = w.forked_from || null; // welcome.forked_from: {session_id, seq} of a fork
        $("session-title").textContent = w.session_id || id;
        $("session-scenario").textContent = w.scenario_id && w.scenario_id !== w.session_id ? w.scenario_id : "";
        const role = $("role");
        showRole(w.role);
        setClock(w.clock);
        controls.render(); // the role decides which controls are shown
        fillWaiting();
      },
      reset: () => {
        view.pending = [];
        view.ended = null;
        $("ended").hidden = true;
        store.clear();
        charts.reset();
        closeDetail();
        timeline.invalidate();
        toast($("toasts"), { title: "Stream reset", message: "The server restarted the stream; rebuilding." });
        schedule();
      },
      item: (frame) => {
        view.pending.push(frame);
        schedule();
      },
      error: (frame) => {
        toast($("toasts"), { title: `Server error: ${frame.code}`, message: frame.message, kind: "error" });
      },
    },
  });
  view.conn = conn;
  conn.start();
  controls.render();
  schedule();
}

// -- waiting for an agent ---------------------------------------------------------------------------

const agentTokens = new Map(); // session id -> its agent token as the admin read it (null: none)

/** The open session's agent token if this page may know it: the sessions it created, or any
 *  session for the admin (asked once, then the banner is filled again); else null. */
function knownAgentToken(id) {
  const made = created.get(id)?.agent;
  if (made) return made;
  if (!admin) return null;
  if (!agentTokens.has(id)) {
    agentTokens.set(id, null);
    admin.agent(id).then(
      (answer) => {
        agentTokens.set(id, answer.token || null);
        if (view.id === id) fillWaiting();
      },
      () => {}, // a restored session keeps no token: the placeholder and its note stay
    );
  }
  return agentTokens.get(id);
}

/** The command that runs the scenario's own oracle as the session's agent. */
function agentCommand(id) {
  const url = listedEntry()?.url || `ws://HOST:PORT/sessions/${id}`;
  const token = knownAgentToken(id);
  return { command: `areasync agent oracle --url ${url} --token ${token || "AGENT_TOKEN"}`, real: !!token };
}

/** What the scenario last sent its agent and has no answer to yet, as a short quote. */
function lastMessageToAgent() {
  for (let i = store.rows.length - 1; i >= 0 && i >= store.rows.length - 200; i -= 1) {
    const row = store.rows[i];
    if (row.app === "AgentUserInterface" && row.fn === "send_message_to_agent") {
      const content = String(row.record.args?.content ?? "").replace(/\s+/g, " ");
      const clipped = content.length > 90 ? `${content.slice(0, 89)}…` : content;
      return `the user's message at ${fmtOffset(row.time - view.startTime, 0)} ("${clipped}")`;
    }
    if (row.type === "AGENT") break; // the agent acted after it
  }
  return "its next action";
}

/** The banner of a session that cannot move on its own: held for an agent ("waiting"), or with
 *  nothing scheduled and no agent ("idle"). Says why time stands still and what to do, with
 *  the agent command (the real token where this page may see it) and a Copy button. */
function fillWaiting() {
  const box = $("waiting");
  const kind = view.ended ? "" : view.waiting ? "waiting" : view.idle ? "idle" : "";
  box.dataset.kind = kind;
  if (!kind) return; // hidden by controls.render
  const drives = ["controller", "admin"].includes(view.conn?.role);
  const { command, real } = agentCommand(view.id);
  const said = kind === "idle" ? lastMessageToAgent() : "";
  const key = [kind, command, drives, said].join("|");
  if (box.dataset.key === key) return; // unchanged: keep its Copy button as it is
  box.dataset.key = key;
  const text = (t) => document.createTextNode(t);
  const nodes =
    kind === "waiting"
      ? [text("Waiting for an agent: time stands still until one connects. Run the scenario's oracle as its agent:")]
      : [
          text(
            `Idle: nothing is scheduled and no agent is connected, so time stands still. The scenario waits for an agent to answer ${said}. Connect one:`,
          ),
        ];
  nodes.push(copyable(command));
  const notes = [];
  if (!real) notes.push("AGENT_TOKEN: this session's agent token, printed by areasync serve when it was made (the admin's page shows it).");
  notes.push("Your own agent connects with the same URL and token.");
  if (drives && kind === "waiting") notes.push("Or press Start to run it without one, or Next event to step through it.");
  if (drives && kind === "idle") notes.push("Or Stop to end it and see its checks.");
  nodes.push(Object.assign(document.createElement("span"), { className: "waiting-notes", textContent: notes.join(" ") }));
  box.replaceChildren(...nodes);
}

// -- admin: new session, restart, fork -------------------------------------------------------------

let admin = null; // an Admin once the server says our token is the admin's
const created = new Map(); // session id -> tokens, for sessions this page created
const forkedFrom = new Map(); // session id -> its source's id, for the forks this page made

/** A new session from `fields` (create_session's): remember its tokens, list it, open it. */
async function createAndOpen(fields, label) {
  return openCreated(await admin.create(fields, view.id), label);
}

/** A session the admin just made (create_session's or fork_session's result): list it, open it. */
async function openCreated(result, label) {
  created.set(result.session_id, result.tokens || {});
  toast($("toasts"), { title: `${label}: ${result.session_id}`, message: `Session ${result.session_id} is ready.` });
  await sessions.refresh();
  openSession(result.session_id);
  return result;
}

/** Fork the open session where its stream had reached `atSeq` (null: as it is now), and open the
 *  fork as Restart opens its new session. */
async function forkAndOpen(button, atSeq) {
  button.disabled = true;
  const source = view.id;
  try {
    const result = await admin.fork(source, atSeq);
    forkedFrom.set(result.session_id, atSeq === null ? source : `${source} at #${atSeq}`);
    await openCreated(result, "Forked");
  } catch (err) {
    if (!(err instanceof AdminError)) throw err;
    toast($("toasts"), { title: "Fork failed", message: err.message, kind: "error", ms: 12000 });
  } finally {
    button.disabled = false;
    controls.render(); // the controls' own rule decides whether its button is usable now
  }
}

/** Restart (the same source and options: a new session waiting for the same kind of agent,
 *  whose command the new session's banner shows with its real token), Restart with the oracle
 *  (the server runs the scenario's own oracle: no agent needed), or a new session. */
function addEndedActions(id) {
  if (!admin) return;
  const s = sessions?.sessions.find((entry) => entry.id === id);
  const row = Object.assign(document.createElement("div"), { className: "ended-actions" });
  const button = (id, text, title, className = "") => Object.assign(document.createElement("button"), { type: "button", id, textContent: text, title, className });
  const restart = button("btn-restart", "Restart", "A new session from the same scenario, with the same clock and options: connect the same agent again with the command it shows", "primary");
  const oracle = button("btn-restart-oracle", "Restart with the oracle", "A new session from the same scenario whose oracle the server runs: no agent needed");
  const fresh = button("", "New session…", "A new session from any scenario");
  fresh.addEventListener("click", openNewDialog);
  const restartWith = (clicked, extra) => async () => {
    restart.disabled = oracle.disabled = true;
    try {
      await createAndOpen({ ...(await admin.source(id)), ...extra }, "Restarted");
    } catch (err) {
      if (!(err instanceof AdminError)) throw err;
      restart.disabled = oracle.disabled = false;
      toast($("toasts"), { title: "Restart failed", message: err.message, kind: "error", ms: 12000 });
    }
  };
  restart.addEventListener("click", restartWith(restart, {}));
  oracle.addEventListener("click", restartWith(oracle, { oracle: true }));
  if (s && s.restartable === false) {
    for (const b of [restart, oracle]) {
      b.disabled = true;
      b.title = "The server kept no source for this session: create a new one from its JSON";
    }
  }
  row.append(restart, oracle, fresh);
  $("ended").append(row);
}

let maxScenarioBytes = 0;

async function openNewDialog() {
  const dialog = $("new-dialog");
  $("new-error").hidden = true;
  $("new-create").disabled = false;
  if (!dialog.open) dialog.showModal();
  try {
    const listed = await admin.scenarios();
    maxScenarioBytes = listed.max_scenario_bytes || 0;
    const select = $("new-scenario");
    const current = select.value || "scenario_tutorial";
    select.replaceChildren(...listed.scenarios.map((id) => new Option(id, id)));
    if (listed.scenarios.includes(current)) select.value = current;
  } catch (err) {
    if (!(err instanceof AdminError)) throw err;
    showNewError(err.message);
  }
}

function showNewError(message) {
  $("new-error").textContent = message;
  $("new-error").hidden = false;
}

async function submitNew(ev) {
  ev.preventDefault();
  const button = $("new-create");
  button.disabled = true;
  $("new-error").hidden = true;
  try {
    const file = $("new-file").files[0];
    const source = file ? { scenario_json: await readScenarioFile(file, maxScenarioBytes) } : { scenario: $("new-scenario").value };
    if (!file && !source.scenario) throw new AdminError("Pick a scenario from the list, or upload an ARE JSON file.");
    const speed = Number($("new-speed").value);
    if (!(speed > 0)) throw new AdminError("Speed must be a number above 0 (1 is real time).");
    const fields = { ...source, mode: $("new-mode").value, speed, oracle: $("new-oracle").checked };
    await createAndOpen(fields, "Created");
    $("new-dialog").close();
    $("new-file").value = "";
  } catch (err) {
    if (!(err instanceof AdminError)) throw err;
    showNewError(err.message);
  } finally {
    button.disabled = false;
  }
}

$("btn-new").addEventListener("click", openNewDialog);
$("btn-fork").addEventListener("click", () => forkAndOpen($("btn-fork"), null));
$("detail-fork").addEventListener("click", () => forkAndOpen($("detail-fork"), view.selectedSeq));
$("new-form").addEventListener("submit", submitNew);
$("new-close").addEventListener("click", () => $("new-dialog").close());

// -- detail pane ----------------------------------------------------------------------------------

function selectRow(row) {
  view.selectedSeq = row.seq;
  timeline.select(row.seq);
  $("detail-fork").textContent = `Fork after row ${row.n}`;
  showDetail({ pane: $("detail"), badge: $("detail-type"), title: $("detail-title"), body: $("detail-body") }, row, view.startTime);
  frame();
}

function closeDetail() {
  view.selectedSeq = null;
  timeline?.select(null);
  $("detail").hidden = true;
  schedule();
}

// -- start ----------------------------------------------------------------------------------------

const timeline = new Timeline({
  viewport: $("viewport"),
  store,
  onSelect: selectRow,
  onFollowChange: (follow) => {
    $("to-latest").hidden = follow;
  },
});
timeline.requestRender = schedule;
$("to-latest").addEventListener("click", () => {
  timeline.setFollow(true);
  schedule();
});
$("detail-close").addEventListener("click", closeDetail);
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && !$("detail").hidden && !$("state-dialog").open) closeDetail();
});
buildChips();
// The controls report back through these: a control's result is the clock to show at once.
const controls = new Controls({
  view,
  onClock: setClock,
  redraw: frame,
  elapsed: () => currentTime() - view.startTime,
});

const wanted = params.get("session");
let sessions = null;
let autoOpened = !!wanted;
if (offline) {
  document.querySelector(".sidebar").hidden = true;
} else {
  sessions = new SessionList({
    list: $("sessions"),
    note: $("sessions-note"),
    counter: $("sessions-count"),
    base,
    token,
    onOpen: openSession,
  });
  sessions.overview = $("overview"); // states and events per second across every session
  $("sessions-filter").addEventListener("input", (ev) => {
    sessions.filter = ev.target.value.trim().toLowerCase();
    sessions.render();
  });
  sessions.onChange = (list) => {
    // The common case, one session (make serve, or a session token): open it without asking.
    if (!autoOpened && !view.id && list.sessions.length === 1) openSession(list.sessions[0].id);
    autoOpened = true;
    const listed = list.sessions.find((s) => s.id === view.id);
    const waiting = !!listed?.waiting;
    if (waiting !== !!view.waiting) {
      view.waiting = waiting;
      controls.render();
    }
    // The listing's clock is the server's latest reading: never show an older one.
    const polled = listed?.clock?.time;
    if (typeof polled === "number" && view.clock && !view.ended && !isFlowing() && polled > view.clock.time) {
      view.polledTime = polled;
      setClock({ ...view.clock, time: polled, tick: listed.clock.tick });
    }
    showRole(view.conn?.role);
    schedule(); // the open session's card and pill follow the new facts
    if (!admin && list.access?.role === "admin") admin = new Admin({ base, token, sessions });
    $("sessions-filter").hidden = list.sessions.length < 6 && !list.filter; // worth it for a long list
    $("btn-new").hidden = !admin;
    $("btn-fork").hidden = !admin;
    $("detail-fork").hidden = !admin;
    if (admin && view.ended && !$("btn-restart")) addEndedActions(view.id);
    fillWaiting();
  };
}
if (!token && !offline) {
  $("empty-text").textContent = "This page needs a token: open the URL printed by `areasync serve`.";
}
if (sessions) {
  // Open ?session= once the server said what our token is (observer tokens skip controller).
  sessions.start(2000).then(() => wanted && !view.id && openSession(wanted));
} else if (wanted) {
  openSession(wanted);
}

// A small API for tests and benchmarks (and curious humans in the console).
window.__areasync = {
  store,
  timeline,
  charts,
  debug,
  get conn() {
    return view.conn;
  },
  get clock() {
    return view.clock;
  },
  openSession,
  rows: () => store.rows.map((r) => ({ seq: r.seq, kind: r.kind, type: r.type, id: r.record.event_id ?? null })),
  lastSeq: () => view.conn?.lastSeq ?? 0,
  drop: () => view.conn?.drop(),
  /** Hand server frames (objects or JSON strings) to the connection as if they came from the socket. */
  feed: (frames) => {
    for (const f of frames) view.conn.receive(typeof f === "string" ? JSON.parse(f) : f);
  },
  /** Resolves after the next frame that has applied everything received so far. */
  settled: () =>
    new Promise((resolve) => {
      const start = debug.renders;
      const check = () => {
        if (view.pending.length || debug.renders === start) requestAnimationFrame(check);
        else resolve(debug.lastRenderAt);
      };
      schedule();
      requestAnimationFrame(check);
    }),
};
