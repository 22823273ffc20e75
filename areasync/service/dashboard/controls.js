// The controller's buttons (pause/resume, next event, jump by, tick, speed, stop) and the
// app-state inspector (get_state). Each click sends one request and shows its outcome where the
// user looks: "✓", or "refused"/"failed" with the server's error code, plus a toast.

import { fmtOffset } from "./format.js";
import { toast } from "./panels.js";
import { StateView } from "./state-view.js";

const $ = (id) => document.getElementById(id);

function numberFrom(id, fallback) {
  const value = Number($(id).value);
  return Number.isFinite(value) ? value : fallback;
}

// Roles the server lets drive the clock (areasync/service/roles.py: CLOCK_CONTROLS).
const DRIVING_ROLES = new Set(["controller", "admin"]);

export class Controls {
  /**
   * @param view     the app's session state (conn, clock, ended, waiting)
   * @param onClock  called with a control's result when it is a clock state
   * @param redraw   redraws the page now (the effect of a click is shown in the next paint)
   * @param elapsed  simulated seconds since the scenario start, for the inspector's header
   */
  constructor({ view, onClock, redraw, elapsed }) {
    this.view = view;
    this.onClock = onClock;
    this.redraw = redraw;
    this.elapsed = elapsed;
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
    $("waiting").hidden = !(view.waiting || view.idle) || over;
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
    if (!dialog.open) dialog.showModal();
    await this.loadState();
  }

  async loadState() {
    const body = $("state-body");
    const note = (className, text) => Object.assign(document.createElement("p"), { className, textContent: text });
    body.replaceChildren(note("muted", "Loading…"));
    try {
      const id = this.view.id;
      const value = await this.view.conn.request({ type: "get_state" });
      const before = this.lastState?.id === id ? this.lastState : null;
      const since = before ? ` · changes since ${before.at}` : "";
      const at = fmtOffset(this.elapsed());
      $("state-when").textContent = `at ${at}${since}`;
      this.stateView.show(value, before?.value ?? null);
      this.lastState = { id, value, at };
    } catch (err) {
      if (!err.code) throw err;
      body.replaceChildren(note("error-text", `${err.code}: ${err.message}`));
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
