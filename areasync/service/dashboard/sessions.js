// The sessions sidebar: polls GET /api/sessions and lists each session (scenario, state,
// simulated time, events, connected clients). Separate from the session view because it works
// without a WebSocket and must survive switching sessions.

import { fmtOffset, plural } from "./format.js";
import { listedStatus } from "./states.js";

const first = (...values) => values.find((v) => v !== undefined && v !== null);

function count(value) {
  if (Array.isArray(value)) return value.length;
  if (value && typeof value === "object") {
    return Object.values(value).reduce((sum, v) => sum + (Number(v) || 0), 0);
  }
  return Number(value) || 0;
}

/** One entry of /api/sessions, whatever its exact field names, as the fields the list shows. */
export function normalizeSession(s) {
  const clock = s.clock || {};
  const startTime = first(s.start_time, clock.start_time, 0);
  const time = first(s.time, clock.time);
  return {
    id: String(first(s.id, s.session_id, "?")),
    scenario: first(s.scenario, s.scenario_id, ""),
    state: first(s.state, clock.state, "unknown"),
    mode: first(s.mode, clock.mode, ""),
    elapsed: time === undefined ? Number.NaN : time - startTime,
    events: count(first(s.events, s.event_count, s.n_events, 0)),
    clients: count(first(s.clients, s.connections, s.subscribers, 0)),
    waiting: !!s.waiting_for_agent && !s.ended,
    ended: !!s.ended,
    validation: s.validation || null,
    endReason: s.end_reason || null,
    // The simulated time of its next scheduled item; null: nothing is scheduled.
    nextDue: s.next_due === undefined ? undefined : s.next_due,
    agents: Number(s.connections?.agent || 0),
    // The clock as the server last read it (the page shows the later of this and the stream's).
    clock: s.clock || null,
    url: s.url || "",
    // Set by a cluster's router only: the session then opens on its node's own URL (`url`).
    node: s.node || "",
    restartable: s.restartable !== false,
  };
}

export class SessionList {
  constructor({ list, note, counter, base, token, onOpen }) {
    this.list = list;
    this.note = note;
    this.counter = counter;
    this.base = base;
    this.token = token;
    this.onOpen = onOpen;
    this.current = null;
    this.sessions = [];
    this.access = null; // {role, session_id} of our token, as the server reports it
    this.cluster = false; // the page is served by a cluster's router (its list names nodes)
    this.onChange = null;
    this.timer = null;
    this.stopped = false;
    this.filter = ""; // lower case: only sessions whose id or scenario holds it are listed
    this.lastTotal = null; // {events, at}: the events of every session at the previous answer
    this.rate = null; // events per second across sessions, between the last two answers
  }

  /** Poll every `intervalMs`; resolves once the first answer (or failure) is in. */
  start(intervalMs = 2000) {
    this.intervalMs = intervalMs;
    return this.refresh();
  }

  setCurrent(id) {
    this.current = id;
    for (const li of this.list.children) li.classList.toggle("current", li.dataset.id === id);
  }

  async refresh() {
    clearTimeout(this.timer);
    try {
      const url = new URL("api/sessions", this.base);
      // The token goes in a header, never in the URL (history, Referer, logs).
      const headers = this.token ? { Authorization: `Bearer ${this.token}` } : {};
      const response = await fetch(url, { cache: "no-store", headers, referrerPolicy: "no-referrer" });
      if (response.status === 401 || response.status === 403) {
        this._note("This token cannot list sessions.");
        return; // no point polling with a token the server refuses
      }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const body = await response.json();
      const raw = Array.isArray(body) ? body : body.sessions || [];
      this.sessions = raw.map(normalizeSession);
      this.access = body.access || null;
      this.cluster = Array.isArray(body.nodes);
      this._measure();
      this._note("");
      this.render();
      this.onChange?.(this);
    } catch (err) {
      this._note(`Cannot reach the server (${err.message}); retrying…`);
    }
    if (!this.stopped) this.timer = setTimeout(() => this.refresh(), this.intervalMs);
  }

  /** Events per second over every session listed, from the previous answer to this one. */
  _measure() {
    const events = this.sessions.reduce((sum, s) => sum + s.events, 0);
    const at = performance.now();
    const last = this.lastTotal;
    this.rate = last && at > last.at ? Math.max(0, ((events - last.events) * 1000) / (at - last.at)) : null;
    this.lastTotal = { events, at };
  }

  /** How many sessions are in each state (as their pills say), most first. */
  stateCounts() {
    const counts = new Map();
    for (const s of this.sessions) {
      const label = (s.status || listedStatus(s)).label;
      counts.set(label, (counts.get(label) || 0) + 1);
    }
    return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  }

  render() {
    this.counter.textContent = this.sessions.length ? String(this.sessions.length) : "";
    if (this.overview) {
      const parts = this.stateCounts().map(([label, n]) => `${n} ${label}`);
      if (this.rate !== null) parts.push(`${this.rate.toFixed(1)} events/s`);
      this.overview.textContent = parts.join(" · ");
      this.overview.hidden = this.sessions.length < 2;
    }
    const shown = this.sessions.filter(
      (s) => !this.filter || `${s.id} ${s.scenario}`.toLowerCase().includes(this.filter),
    );
    const items = shown.map((s) => {
      const li = document.createElement("li");
      li.dataset.id = s.id;
      li.className = `session-item${s.id === this.current ? " current" : ""}`;
      const button = document.createElement("button");
      button.type = "button";
      button.innerHTML = `
        <span class="si-top"><span class="si-id"></span><span class="state-pill small"></span></span>
        <span class="si-scenario"></span>
        <span class="si-stats"><span class="si-time"></span><span class="si-events"></span><span class="si-clients"></span></span>`;
      button.querySelector(".si-id").textContent = s.id;
      button.querySelector(".si-scenario").textContent =
        s.scenario && s.scenario !== s.id ? `${s.scenario}${s.mode ? ` · ${s.mode}` : ""}` : s.mode;
      button.querySelector(".si-clients").textContent = plural(s.clients, "client");
      button.addEventListener("click", () => this.onOpen(s.id));
      li.appendChild(button);
      this._fill(li, s);
      return li;
    });
    this.list.replaceChildren(...items);
  }

  /** The open session's card follows the live stream between polls (state, time, events). */
  patch(id, fields) {
    const s = this.sessions.find((entry) => entry.id === id);
    if (!s) return;
    Object.assign(s, fields);
    const li = [...this.list.children].find((node) => node.dataset.id === id);
    if (li) this._fill(li, s);
  }

  _fill(li, s) {
    const pill = li.querySelector(".state-pill");
    // The open session's card shows what its header shows (`patch`), the others their listing.
    const status = s.status || listedStatus(s);
    if (pill.dataset.state !== status.label) {
      pill.textContent = status.label;
      pill.dataset.state = status.label;
      pill.title = status.title;
    }
    const time = fmtOffset(s.elapsed, 0);
    const timeEl = li.querySelector(".si-time");
    if (timeEl.textContent !== time) timeEl.textContent = time;
    const events = plural(s.events, "event");
    const eventsEl = li.querySelector(".si-events");
    if (eventsEl.textContent !== events) eventsEl.textContent = events;
  }

  _note(text) {
    this.note.textContent = text;
    this.note.hidden = !text;
  }
}
