// The sessions sidebar: polls GET /api/sessions and lists each session (scenario, state,
// simulated time, events, connected clients). Separate from the session view because it works
// without a WebSocket and must survive switching sessions.

import { fmtCount, fmtOffset } from "./format.js";

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
    this.timer = null;
    this.stopped = false;
  }

  start(intervalMs = 2000) {
    this.intervalMs = intervalMs;
    this.refresh();
  }

  setCurrent(id) {
    this.current = id;
    for (const li of this.list.children) li.classList.toggle("current", li.dataset.id === id);
  }

  async refresh() {
    clearTimeout(this.timer);
    try {
      const url = new URL("api/sessions", this.base);
      if (this.token) url.searchParams.set("token", this.token);
      const response = await fetch(url, { cache: "no-store" });
      if (response.status === 401 || response.status === 403) {
        this._note("This token cannot list sessions.");
        return; // no point polling with a token the server refuses
      }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const body = await response.json();
      const raw = Array.isArray(body) ? body : body.sessions || [];
      this.sessions = raw.map(normalizeSession);
      this._note("");
      this.render();
    } catch (err) {
      this._note(`Cannot reach the server (${err.message}); retrying…`);
    }
    if (!this.stopped) this.timer = setTimeout(() => this.refresh(), this.intervalMs);
  }

  render() {
    this.counter.textContent = this.sessions.length ? String(this.sessions.length) : "";
    const items = this.sessions.map((s) => {
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
      const pill = button.querySelector(".state-pill");
      pill.textContent = s.state;
      pill.dataset.state = s.state;
      button.querySelector(".si-scenario").textContent =
        s.scenario && s.scenario !== s.id ? `${s.scenario}${s.mode ? ` · ${s.mode}` : ""}` : s.mode;
      button.querySelector(".si-time").textContent = fmtOffset(s.elapsed, 0);
      button.querySelector(".si-events").textContent = `${fmtCount(s.events)} events`;
      button.querySelector(".si-clients").textContent =
        `${fmtCount(s.clients)} client${s.clients === 1 ? "" : "s"}`;
      button.addEventListener("click", () => this.onOpen(s.id));
      li.appendChild(button);
      return li;
    });
    this.list.replaceChildren(...items);
  }

  _note(text) {
    this.note.textContent = text;
    this.note.hidden = !text;
  }
}
