// What a session's state is called on the page, and what it waits for. One rule for the header's
// pill, the sidebar's cards and the end-of-session banner, so that they never disagree: a session
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
 * @param facts  {state, mode, waiting, nextDue, agents}: the clock's state and mode; whether the
 *   server holds it for an agent (`waiting_for_agent`); the simulated time of its next scheduled
 *   item (`next_due`, null: nothing scheduled; undefined: not known yet); agents connected.
 * @returns {{label: string, idle: boolean, title: string}}
 */
export function liveStatus({ state, mode, waiting, nextDue, agents }) {
  if (state === "running" && waiting) {
    return { label: "waiting", idle: false, title: "Held until an agent connects (or a controller presses Start)" };
  }
  // Fast and manual clocks move only to what is scheduled: with nothing scheduled and no agent
  // to act, nothing can happen until someone does something.
  const stands = mode === "fast" || mode === "manual";
  if (state === "running" && stands && nextDue === null && !agents) {
    return { label: "idle", idle: true, title: "Nothing is scheduled and no agent is connected: time stands still" };
  }
  return { label: state || "unknown", idle: false, title: "" };
}

/** The pill of a session from /api/sessions' entry (normalised by sessions.js). */
export function listedStatus(s) {
  if (s.ended) return endedStatus({ state: s.state, validation: s.validation, reason: s.endReason });
  return { kind: "", ...liveStatus(s) };
}

function capitalize(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}
