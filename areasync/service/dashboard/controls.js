// The controller's buttons (pause/resume, next event, jump by, tick, speed, stop) and the
// app-state inspector (get_state). Each click sends one request and shows its outcome where the
// user looks: "✓", or "refused"/"failed" with the server's error code, plus a toast.

import { AdminError } from "./admin.js";
import { fmtOffset } from "./format.js";
import { toast } from "./panels.js";
import { StateView } from "./state-view.js";

const $ = (id) => document.getElementById(id);

function numberFrom(id, fallback) {
  const value = Number($(id).value);
  return Number.isFinite(value) ? value : fallback;
}

// Roles the server lets drive the clock (areasync/service/gate/roles.py: CLOCK_CONTROLS).
const DRIVING_ROLES = new Set(["controller", "admin"]);

export class Controls {
  /**
   * @param view     the app's session state (conn, clock, ended, waiting)
   * @param onClock  called with a control's result when it is a clock state
   * @param redraw   redraws the page now (the effect of a click is shown in the next paint)
   * @param elapsed  simulated seconds since the scenario start, for the inspector's header
   * @param rowAt    the timeline's number of the last row at or before a seq
   * @param admin    the page's Admin, or null (it reads a fork's source's state)
   */
  constructor({ view, onClock, redraw, elapsed, rowAt, admin }) {
    this.view = view;
    this.onClock = onClock;
    this.redraw = redraw;
    this.elapsed = elapsed;
    this.rowAt = rowAt;
    this.admin = admin;
    this.stopArmed = null;
    this.stateView = new StateView($("state-body"));
    this.lastState = null; // {id, value}: the last read, for "changed since"
    this._bind();
  }

  /** Show only what can act: the clock controls for a role that may use them (an observer's
   *  would answer "forbidden") and while the session runs (once ended they are gone, not
   *  greyed), the speed only for a realtime clock; while disconnected, they stay, disabled. */
  render() {
    const view = this.view;
    const role = view.conn?.role;
    const drives = DRIVING_ROLES.has(role);
    const over = !!view.ended;
    for (const node of $("controls").querySelectorAll("[data-needs=controller]")) node.hidden = (!!role && !drives) || over;
    $("form-speed").hidden ||= view.clock?.mode !== "realtime";
    $("readonly-note").hidden = !role || drives || over;
    const paused = view.clock?.state === "paused";
    const toggle = $("btn-toggle");
    // A fast session without agents is held until a controller resumes it: offer to start it.
    const held = view.waiting && !paused;
    toggle.textContent = paused ? "Resume" : held ? "Start" : "Pause";
    toggle.dataset.action = paused || held ? "resume" : "pause";
    $("waiting").hidden = !view.banner || over;
    const offline = view.conn?.state !== "live" && !over;
    for (const node of $("controls").querySelectorAll("button, input")) {
      // Reading the apps and forking (over the admin's own socket) still make sense once ended.
      node.disabled = node.id === "btn-state" || node.id === "btn-fork" ? offline : over || offline;
    }
  }

  async send(label, request) {
    const conn = this.view.conn;
    if (!conn) return;
    this._lastAction(`${label}…`, "pending");
    try {
      const value = await conn.request(request);
      if (value && typeof value === "object" && typeof value.time === "number" && value.state) {
        this.onClock(value); // the result is the clock after the control: show it right away
      }
      this._lastAction(`${label} ✓`, "ok");
      this.redraw();
    } catch (err) {
      if (!err.code) throw err; // a bug of ours, not an answer from the server
      const refused = err.code === "forbidden" ? "refused" : "failed";
      this._lastAction(`${label} ${refused}: ${err.code}`, "error");
      toast($("toasts"), { title: `${label} ${refused}`, message: `${err.code}: ${err.message}`, kind: "error" });
    }
  }

  async openState() {
    const dialog = $("state-dialog");
    this._offerComparisons();
    if (!dialog.open) dialog.showModal();
    await this.loadState();
  }

  /** What the state can be compared with here: the last read always; the state after the
   *  selected row; for a fork, the state at its cut (its source's then) and, for the admin,
   *  its source's now. */
  _offerComparisons() {
    const view = this.view;
    const select = $("state-compare");
    const option = (value) => select.querySelector(`option[value="${value}"]`);
    const row = view.selectedSeq === null ? 0 : this.rowAt(view.selectedSeq);
    option("row").disabled = !row;
    option("row").textContent = row ? `the state after row ${row} (selected)` : "the state after a row (select one)";
    const from = view.forkedFrom;
    option("cut").hidden = option("cut").disabled = !from;
    option("source").hidden = option("source").disabled = !from || !this.admin();
    if (from) {
      option("cut").textContent = `the fork's cut: ${from.session_id} after row ${this.rowAt(from.seq)}`;
      option("source").textContent = `${from.session_id} now`;
    }
    if (select.selectedOptions[0]?.disabled) select.value = "last";
  }

  /** The state to compare with (the select's choice): {value, since} or null (none yet). */
  async _baseline(id) {
    const view = this.view;
    const from = view.forkedFrom;
    switch ($("state-compare").value) {
      case "row": {
        const seq = view.selectedSeq;
        const value = await view.conn.request({ type: "get_state", at_seq: seq });
        return { value, since: `row ${this.rowAt(seq)}` };
      }
      case "cut": {
        // A fork's stream up to its cut is its source's: its own state there is the source's.
        const value = await view.conn.request({ type: "get_state", at_seq: from.seq });
        return { value, since: `the fork's cut (${from.session_id} after row ${this.rowAt(from.seq)})` };
      }
      case "source":
        return { value: await this.admin().state(from.session_id), since: `${from.session_id} now` };
      default:
        return this.lastState?.id === id ? { value: this.lastState.value, since: `the last read (at ${this.lastState.at})` } : null;
    }
  }

  async loadState() {
    const body = $("state-body");
    const note = (className, text) => Object.assign(document.createElement("p"), { className, textContent: text });
    body.replaceChildren(note("muted", "Loading…"));
    try {
      const id = this.view.id;
      const value = await this.view.conn.request({ type: "get_state" });
      const at = fmtOffset(this.elapsed());
      const base = await this._baseline(id);
      $("state-when").textContent = `at ${at}${base ? ` · changes since ${base.since}` : ""}`;
      this.stateView.show(value, base?.value ?? null, base?.since);
      this.lastState = { id, value, at };
    } catch (err) {
      if (!err.code && !(err instanceof AdminError)) throw err;
      body.replaceChildren(note("error-text", err.code ? `${err.code}: ${err.message}` : err.message));
    }
  }

  _lastAction(text, kind) {
    const node = $("last-action");
    node.textContent = text;
    node.dataset.kind = kind;
  }

  _bind() {
    $("btn-toggle").addEventListener("click", (ev) => {
      const action = ev.currentTarget.dataset.action || "pause";
      const label = ev.currentTarget.textContent;
      if (action === "resume") this.view.waiting = false;
      this.send(label, { type: action });
    });
    $("btn-next").addEventListener("click", () => this.send("Next event", { type: "jump", next_event: true }));
    $("form-jump").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const by = numberFrom("jump-by", 0);
      this.send(`Jump +${by} s`, { type: "jump", by });
    });
    $("form-tick").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const n = Math.max(1, Math.round(numberFrom("tick-n", 1)));
      this.send(`Tick ×${n}`, { type: "tick", n });
    });
    $("form-speed").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const speed = numberFrom("speed", 1);
      this.send(`Speed ×${speed}`, { type: "set_speed", speed });
    });
    $("btn-stop").addEventListener("click", (ev) => this._stopClicked(ev.currentTarget));
    $("btn-state").addEventListener("click", () => this.openState());
    $("state-refresh").addEventListener("click", () => this.loadState());
    $("state-compare").addEventListener("change", () => this.loadState());
    $("state-search").addEventListener("input", (ev) => this.stateView.search(ev.target.value));
    $("state-close").addEventListener("click", () => $("state-dialog").close());
  }

  // Stopping cannot be undone: the first click arms the button, a second one within 4 s stops.
  _stopClicked(button) {
    const disarm = () => {
      clearTimeout(this.stopArmed);
      this.stopArmed = null;
      button.textContent = "Stop";
      button.classList.remove("armed");
    };
    if (!this.stopArmed) {
      button.textContent = "Confirm stop";
      button.classList.add("armed");
      this.stopArmed = setTimeout(disarm, 4000);
      return;
    }
    disarm();
    this.send("Stop", { type: "stop" });
  }
}
