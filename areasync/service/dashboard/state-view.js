// The app-state inspector's tree (get_state): one collapsible branch per app, object and list,
// built only when opened (an app's state can be megabytes); a search that keeps the branches
// holding a key or value with the text and opens them; times as dates beside their numbers;
// long texts (base64 attachments) clipped; and what changed since the inspector last read the
// same session, marked, with a count. Pure DOM, no server calls: controls.js fetches.

import { appView } from "./app-views.js";
import { fmtAbsolute, fmtCount, plural } from "./format.js";

const CLIP = 160; // characters of a long string shown before "… N more"
// A number is shown as a date when its key says it is a time and it falls in these years.
const TIME_KEY = /(^|_)(time|timestamp|date|created|modified|updated|sent|received|read|start|end)(_at|_time)?$|_at$/i;
const EARLIEST = Date.UTC(1990, 0, 1) / 1000;
const LATEST = Date.UTC(2100, 0, 1) / 1000;

const el = (tag, className, text) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

const isBranch = (value) => value !== null && typeof value === "object";

/** `value` as one line of text: what the search matches and a leaf shows. */
function leafText(key, value) {
  if (typeof value === "string") {
    const text = JSON.stringify(value);
    return text.length > CLIP ? `${text.slice(0, CLIP)}… (${fmtCount(text.length - CLIP)} more characters)` : text;
  }
  if (typeof value === "number" && TIME_KEY.test(String(key)) && value >= EARLIEST && value <= LATEST) {
    return `${value} (${fmtAbsolute(value)})`;
  }
  return String(value);
}

function sizeText(value) {
  const n = Array.isArray(value) ? value.length : Object.keys(value).length;
  return Array.isArray(value) ? plural(n, "item") : plural(n, "field");
}

/** The paths (a/b/c) of every leaf whose value differs between `before` and `after`, and of
 *  every key only one of them has. */
export function changedPaths(before, after, path = "", out = new Set()) {
  if (isBranch(before) && isBranch(after)) {
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      changedPaths(before[key], after[key], `${path}/${key}`, out);
    }
  } else if (JSON.stringify(before) !== JSON.stringify(after)) {
    out.add(path);
  }
  return out;
}

/** Does `value` (under `key`) hold `needle` (lower case) in a key or a leaf? */
function holds(key, value, needle) {
  if (String(key).toLowerCase().includes(needle)) return true;
  if (!isBranch(value)) return leafText(key, value).toLowerCase().includes(needle);
  return Object.entries(value).some(([k, v]) => holds(k, v, needle));
}

export class StateView {
  /** @param body  the dialog's body; the tree replaces its children */
  constructor(body) {
    this.body = body;
    this.value = null;
    this.changed = new Set();
    this.needle = "";
  }

  /** Show `value` (get_state's: {app: state}); `before` is the same session's previous read. */
  show(value, before = null) {
    this.value = value && typeof value === "object" && !Array.isArray(value) ? value : { state: value };
    this.changed = before ? changedPaths(before, this.value) : new Set();
    this.render();
  }

  /** Keep only the branches holding `text` (in a key or a value), opened; "" shows all. */
  search(text) {
    this.needle = text.trim().toLowerCase();
    this.render();
  }

  render() {
    const apps = this.value || {};
    const names = Object.keys(apps).filter((name) => !this.needle || holds(name, apps[name], this.needle));
    const nodes = [];
    if (this.changed.size) {
      const note = el("p", "state-changes", `${plural(this.changed.size, "change")} since the last read, marked`);
      nodes.push(note);
    }
    if (!Object.keys(apps).length) nodes.push(el("p", "muted", "No app state."));
    else if (!names.length) nodes.push(el("p", "muted", `Nothing matches "${this.needle}".`));
    for (const name of names) nodes.push(this._branch(name, apps[name], `/${name}`, "app-state"));
    this.body.replaceChildren(...nodes);
  }

  _touched(path) {
    for (const changed of this.changed) if (changed === path || changed.startsWith(`${path}/`)) return true;
    return false;
  }

  _branch(key, value, path, className = "branch") {
    const details = el("details", className);
    details.dataset.path = path;
    const summary = el("summary");
    summary.append(el("span", className === "app-state" ? "app-name" : "key", String(key)));
    summary.append(el("span", "muted", isBranch(value) ? sizeText(value) : ""));
    if (this._touched(path)) details.classList.add("changed");
    details.append(summary);
    const fill = () => {
      if (details.childElementCount > 1) return;
      const shaped = className === "app-state" && !this.needle ? appView(value) : null;
      if (shaped) details.append(shaped);
      const entries = isBranch(value) ? Object.entries(value) : [["value", value]];
      for (const [k, v] of entries) {
        if (this.needle && !holds(k, v, this.needle)) continue;
        details.append(isBranch(v) ? this._branch(k, v, `${path}/${k}`) : this._leaf(k, v, `${path}/${k}`));
      }
    };
    details.addEventListener("toggle", () => details.open && fill(), { passive: true });
    // A search opens what matches; a change opens its way down.
    if (this.needle || (this._touched(path) && this.changed.size < 50)) {
      details.open = true;
      fill();
    }
    return details;
  }

  _leaf(key, value, path) {
    const row = el("div", `leaf${this.changed.has(path) ? " changed" : ""}`);
    row.dataset.path = path;
    row.append(el("span", "key", String(key)), el("span", "value", leafText(key, value)));
    return row;
  }
}
