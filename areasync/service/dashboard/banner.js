// The banner above the timeline of a session that does not move on its own (states.js's
// `banner`): held for an agent, idle, a manual clock, a paused one, an agent's turn. Each says why
// time stands still and what moves it: the controls (or that a controller's token is needed), or
// the agent command with a Copy button. Apart from app.js so that every kind's words live in one
// place; app.js gathers the facts.

import { copyable } from "./panels.js";

const READ_ONLY = "Moving the clock needs this session's controller token (or the admin's).";

/**
 * Fill `box` for a banner of `kind` ("" leaves it as it is: controls.js hides it).
 * @param box    the banner element (its data-kind and data-key are kept up to date)
 * @param facts  {kind, drives, command, real, said, due}: the banner's kind; whether this page
 *   may move the clock; the agent command and whether its token is the real one (waiting, idle);
 *   what the scenario last said to its agent (idle); when the next item is due (manual)
 */
export function fillBanner(box, { kind, drives, command, real, said, due }) {
  box.dataset.kind = kind;
  if (!kind) return;
  const key = [kind, command, drives, said, due].join("|");
  if (box.dataset.key === key) return; // unchanged: keep its Copy button as it is
  box.dataset.key = key;
  box.replaceChildren(...nodesFor(kind, { drives, command, real, said, due }));
}

function notes(...parts) {
  const span = document.createElement("span");
  span.className = "waiting-notes";
  span.textContent = parts.filter(Boolean).join(" ");
  return span;
}

function nodesFor(kind, { drives, command, real, said, due }) {
  const text = (t) => document.createTextNode(t);
  switch (kind) {
    case "manual":
      return [
        text("Manual clock: time moves only when a controller moves it."),
        notes(
          due,
          drives ? "Press Next event to run the next scheduled item, Jump to move by seconds, or Tick to run loop ticks." : READ_ONLY,
        ),
      ];
    case "paused":
      return [
        text("Paused: time stands still until a controller resumes it."),
        notes(drives ? "Press Resume to go on from here." : READ_ONLY),
      ];
    case "turn":
      return [
        text("The agent's turn: the fast clock stands still while the agent acts, until it calls its wait tool (or idle)."),
        notes(drives ? "If it never does, Stop ends the session." : ""),
      ];
    default: {
      const lead =
        kind === "waiting"
          ? "Waiting for an agent: time stands still until one connects. Run the scenario's oracle as its agent:"
          : `Idle: nothing is scheduled and no agent is connected, so time stands still. The scenario waits for an agent to answer ${said}. Connect one:`;
      return [
        text(lead),
        copyable(command),
        notes(
          real ? "" : "AGENT_TOKEN: this session's agent token, printed by areasync serve when it was made (the admin's page shows it).",
          "Your own agent connects with the same URL and token.",
          drives && kind === "waiting" ? "Or press Start to run it without one, or Next event to step through it." : "",
          drives && kind === "idle" ? "Or Stop to end it and see its checks." : "",
        ),
      ];
    }
  }
}
