// The page's secondary views: toasts (errors, refusals), copyable commands, the detail pane of a
// timeline row and the end-of-session banner with its validation result (the app-state
// inspector's tree is state-view.js).
// They only render what they are given; app.js decides when.

import { fmtAbsolute, fmtOffset, humanize, pretty } from "./format.js";
import { endedStatus } from "./states.js";
import { NOTIFICATION } from "./store.js";

const el = (tag, className, text) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

// -- toasts ------------------------------------------------------------------------------------

export function toast(container, { title, message = "", kind = "info", ms = 6000 }) {
  const node = el("div", `toast ${kind}`);
  node.setAttribute("role", kind === "error" ? "alert" : "status");
  node.append(el("strong", "", title));
  if (message) node.append(el("span", "", message));
  node.addEventListener("click", () => node.remove());
  container.append(node);
  while (container.children.length > 4) container.firstChild.remove();
  setTimeout(() => node.remove(), ms);
  return node;
}

// -- copyable commands -------------------------------------------------------------------------

/** Put `text` on the clipboard; resolves true when it is there. Pages served over plain HTTP
 *  to another machine are not a secure context (no Clipboard API): select and copy instead. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = Object.assign(document.createElement("textarea"), { value: text });
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    const done = document.execCommand("copy");
    area.remove();
    return done;
  }
}

/** A command in a code element with a Copy button beside it that says when it copied. */
export function copyable(text, className = "command") {
  const wrap = el("span", `copyable ${className}`);
  const code = el("code", "", text);
  const button = el("button", "copy", "Copy");
  button.type = "button";
  button.title = "Copy the command to the clipboard";
  button.addEventListener("click", async () => {
    const done = await copyText(text);
    button.textContent = done ? "Copied ✓" : "Select and copy";
    button.dataset.copied = String(done);
    setTimeout(() => {
      button.textContent = "Copy";
      delete button.dataset.copied;
    }, 2500);
  });
  wrap.append(code, button);
  return wrap;
}

// -- detail pane -------------------------------------------------------------------------------

function section(title, body, className = "") {
  const wrap = el("section", `d-section ${className}`);
  wrap.append(el("h4", "", title), body);
  return wrap;
}

function codeBlock(value, className = "") {
  return el("pre", `code ${className}`, typeof value === "string" ? value : pretty(value));
}

function facts(pairs) {
  const dl = el("dl", "facts");
  for (const [key, value] of pairs) {
    if (value === undefined || value === null || value === "") continue;
    dl.append(el("dt", "", key), el("dd", "", String(value)));
  }
  return dl;
}

/** Keyword arguments one per line: the name, then the value (text as text, the rest as JSON). */
function argList(args) {
  const list = el("dl", "args");
  for (const [name, value] of Object.entries(args)) {
    const text = typeof value === "string" ? value : pretty(value);
    const dd = el("dd", typeof value === "string" ? "text" : "json", text);
    if (value === null || value === undefined) dd.classList.add("muted");
    list.append(el("dt", "", name), dd);
  }
  return list;
}

/** A row's simulated time; with its date only when the scenario has one (it starts after 0). */
function when(time, startTime) {
  const offset = fmtOffset(time - startTime, 3);
  return startTime > 0 ? `${offset}  (${fmtAbsolute(time)})` : offset;
}

/** Fill the detail pane with everything known about one row. */
export function showDetail({ pane, badge, title, body }, row, startTime) {
  const r = row.record;
  pane.hidden = false;
  badge.textContent = row.type === NOTIFICATION ? "NOTIF" : row.type;
  badge.className = `badge t-${row.type}`;
  const nodes = [];
  if (row.kind === "event") {
    title.textContent = row.app ? `${row.app}.${row.fn}` : row.fn || "event";
    nodes.push(
      facts([
        ["row", `${row.n} (stream item ${row.seq})`],
        ["time", when(row.time, startTime)],
        ["event id", r.event_id],
      ]),
    );
    const args = r.args && Object.keys(r.args).length ? r.args : null;
    nodes.push(section("Arguments", args ? argList(args) : el("p", "muted", "none")));
    if (row.failed) nodes.push(section("Exception", codeBlock(String(r.exception), "error"), "bad"));
    else nodes.push(section("Return value", codeBlock(r.return_value ?? null)));
  } else {
    title.textContent = humanize(r.message_type);
    nodes.push(
      facts([
        ["row", `${row.n} (stream item ${row.seq})`],
        ["time", when(row.time, startTime)],
        ["type", r.message_type],
      ]),
    );
    nodes.push(section("Message", codeBlock(String(r.message ?? ""), "prose")));
  }
  body.replaceChildren(...nodes);
}

// -- end of session ----------------------------------------------------------------------------

/** Why a session ended and what its validation means, as one or two plain sentences. */
export function endedInWords(frame) {
  const reason = frame.reason ? String(frame.reason).replace(/\.$/, "") : "";
  let why;
  if (reason) why = `It did not run to its end: ${reason}.`;
  else if (frame.state === "failed") why = "It failed before its end.";
  else why = "It ran to the end of its scenario.";
  const v = frame.validation;
  let verdict;
  if (v && v.success === true) verdict = "The scenario's checks passed: the agent did what it expects.";
  else if (v && v.success === false) {
    verdict = "The scenario's checks failed: what happened is not what the scenario expects";
    verdict += reason ? " (it was cut short, or no agent acted)." : " (did an agent act?).";
  } else if (v && v.exception) verdict = "The scenario's checks could not run (see Details).";
  else verdict = "Nobody judged it: the scenario has no checks for this run.";
  return `${why} ${verdict}`;
}

/** The banner shown once the `ended` item arrives: how it ended (states.js, as the pill says)
 *  and its validation. */
export function showEnded(banner, frame) {
  const v = frame.validation;
  const status = endedStatus(frame);
  let verdict = "not validated";
  if (v && v.success === true) verdict = "validation passed";
  else if (v && v.success === false) verdict = "validation failed";
  else if (v && v.exception) verdict = "validation error";
  const kind = status.kind;
  banner.hidden = false;
  banner.className = `ended ${kind}`;
  banner.dataset.verdict = kind;
  banner.dataset.outcome = status.label;
  const head = el("div", "ended-head");
  head.append(
    el("span", "ended-icon", kind === "good" ? "✓" : kind === "bad" ? "✕" : "■"),
    el("strong", "ended-title", status.title),
    el("span", "verdict", verdict),
  );
  const nodes = [head, el("p", "ended-plain", endedInWords(frame))];
  if (v && (v.rationale || v.exception)) {
    const more = el("details");
    more.append(el("summary", "", "Details"));
    if (v.exception) more.append(codeBlock(String(v.exception), "error"));
    if (v.rationale) more.append(codeBlock(String(v.rationale), "prose"));
    nodes.push(more);
  }
  banner.replaceChildren(...nodes);
}
