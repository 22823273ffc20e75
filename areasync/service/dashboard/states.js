// What a session's state is called on the page, and what it waits for. One rule for the header's
// pill, the sidebar's cards and the banners, so that they never disagree: a session
// that ran to its end and passed its checks reads "passed" everywhere, an idle one "idle" with
// the reason, never "running" while nothing can happen. Pure functions of plain facts (no DOM).

/**
 * How an ended session ended, from its `ended` item (or /api/sessions' entry).
 * @param {{state: string, validation?: object|null, reason?: string|null}} ended
 * @returns {{label: string, kind: string, title: string}}
 *   label: the pill's word (passed | failed | stopped | error | ended);
 *   kind: good | bad | neutral; title: the banner's heading, one phrase.
 */
export function endedStatus({ state, validation, reason }) {
  const v = validation || null;
  const cut = reason ? String(reason).replace(/\.$/, "") : "";
  if (v && v.success === true) {
    return { label: "passed", kind: "good", title: cut ? `Passed (${cut})` : "Passed: ran to the end, checks passed" };
  }
  if (state === "failed") return { label: "error", kind: "bad", title: cut ? `Ended with an error: ${cut}` : "Ended with an error" };
  if (cut) return { label: "stopped", kind: v && v.success === false ? "bad" : "neutral", title: capitalize(cut) };
  if (v && v.success === false) return { label: "failed", kind: "bad", title: "Failed: ran to the end, checks failed" };
  if (v && v.exception) return { label: "error", kind: "bad", title: "Ran to the end; its checks could not run" };
  return { label: "ended", kind: "neutral", title: "Ran to the end (no checks)" };
}

/**
 * The state of a live session, as the user should read it.
 * @param facts  {state, mode, waiting, nextDue, agents, busy}: the clock's state and mode;
 *   whether the server holds it for an agent (`waiting_for_agent`); the simulated time of its
 *   next scheduled item (`next_due`, null: nothing scheduled; undefined: not known yet); agents
 *   connected; agents holding the fast clock on their turn (`agents_busy`).
 * @returns {{label: string, idle: boolean, title: string, banner: string}}
 *   banner: the kind of the banner that says what moves it (waiting | idle | manual | paused |
 *   turn), "" when it moves on its own.
 */
export function liveStatus({ state, mode, waiting, nextDue, agents, busy }) {
  if (state === "paused") {
    return { label: "paused", idle: false, banner: "paused", title: "Paused: time stands still until a controller presses Resume" };
  }
  if (state !== "running") return { label: state || "unknown", idle: false, banner: "", title: "" };
  if (waiting) {
    return { label: "waiting", idle: false, banner: "waiting", title: "Held until an agent connects (or a controller presses Start)" };
  }
  // A manual clock moves only with the controls, whatever is scheduled or connected.
  if (mode === "manual") {
    return { label: "manual", idle: false, banner: "manual", title: "Manual clock: time moves only when a controller presses Next event, Jump or Tick" };
  }
  // A fast clock stands still while an agent acts on its turn: the session waits for its reply.
  if (mode === "fast" && busy > 0) {
    return { label: "agent's turn", idle: false, banner: "turn", title: "An agent is acting on its turn: time stands still until it calls its wait (or idle)" };
  }
  // A fast clock moves only to what is scheduled: with nothing scheduled and no agent to act,
  // nothing can happen until someone does something.
  if (mode === "fast" && nextDue === null && !agents) {
    return { label: "idle", idle: true, banner: "idle", title: "Nothing is scheduled and no agent is connected: time stands still" };
  }
  return { label: "running", idle: false, banner: "", title: mode === "realtime" ? "Running: the clock follows the wall at its speed" : "Running: time jumps to each scheduled item" };
}

/** The pill of a session from /api/sessions' entry (normalised by sessions.js). */
export function listedStatus(s) {
  if (s.ended) return endedStatus({ state: s.state, validation: s.validation, reason: s.endReason });
  return { kind: "", ...liveStatus(s) };
}

function capitalize(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}
