// App-shaped views of the apps Gaia2 uses most, read from their get_state: an inbox per email
// folder, each conversation's messages, the calendar's events and the contacts, as tables a
// person reads at a glance. Recognised by the state's shape (ARE's field names), not the app's
// name, so a renamed or extended app still shows; anything else shows only as the tree.

import { fmtAbsolute } from "./format.js";

const el = (tag, className, text) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const list = (value) => (Array.isArray(value) ? value : isObject(value) ? Object.values(value) : []);

/** A time as a date where it is one (seconds since the epoch), else as it is. */
function when(value) {
  if (typeof value === "number") return value > 1e8 ? fmtAbsolute(value) : `${value} s`;
  return value === null || value === undefined ? "" : String(value);
}

const text = (value) => (Array.isArray(value) ? value.join(", ") : value === null || value === undefined ? "" : String(value));

function table(caption, columns, rows) {
  const node = el("table", "app-table");
  node.append(el("caption", "", caption));
  const head = el("tr");
  for (const [title] of columns) head.append(el("th", "", title));
  const thead = el("thead");
  thead.append(head);
  const body = el("tbody");
  for (const row of rows) {
    const tr = el("tr");
    for (const [, cell] of columns) tr.append(el("td", "", cell(row)));
    body.append(tr);
  }
  if (!rows.length) {
    const empty = el("tr");
    empty.append(Object.assign(el("td", "muted", "none"), { colSpan: columns.length }));
    body.append(empty);
  }
  node.append(thead, body);
  return node;
}

function email(state) {
  const folders = isObject(state.folders) ? Object.entries(state.folders) : [];
  if (!folders.length || !folders.every(([, f]) => isObject(f) && Array.isArray(f.emails))) return null;
  const columns = [
    ["From", (e) => text(e.sender)],
    ["To", (e) => text(e.recipients)],
    ["Subject", (e) => text(e.subject)],
    ["Date", (e) => when(e.timestamp)],
    ["Attachments", (e) => Object.keys(isObject(e.attachments) ? e.attachments : {}).join(", ")],
  ];
  return folders.map(([name, f]) => table(`${name} (${f.emails.length})`, columns, f.emails));
}

function messaging(state) {
  if (!isObject(state.conversations)) return null;
  return list(state.conversations).map((c) =>
    table(
      `${text(c.title || c.participants)} (${list(c.messages).length} messages)`,
      [
        ["Sender", (m) => text(m.sender)],
        ["Message", (m) => text(m.content)],
        ["Time", (m) => when(m.timestamp)],
      ],
      list(c.messages),
    ),
  );
}

function calendar(state) {
  if (!isObject(state.events)) return null;
  return [
    table(
      `Events (${list(state.events).length})`,
      [
        ["Title", (e) => text(e.title)],
        ["Start", (e) => when(e.start_datetime ?? e.start)],
        ["End", (e) => when(e.end_datetime ?? e.end)],
        ["Attendees", (e) => text(e.attendees)],
        ["Where", (e) => text(e.location)],
      ],
      list(state.events),
    ),
  ];
}

function contacts(state) {
  if (!isObject(state.contacts)) return null;
  const people = list(state.contacts).filter(isObject);
  if (people.length && !people.some((p) => "first_name" in p || "email" in p)) return null;
  return [
    table(
      `Contacts (${people.length})`,
      [
        ["Name", (p) => `${text(p.first_name)} ${text(p.last_name)}`.trim()],
        ["Email", (p) => text(p.email)],
        ["Phone", (p) => text(p.phone)],
        ["Job", (p) => text(p.job || p.status)],
      ],
      people,
    ),
  ];
}

const VIEWS = [email, messaging, calendar, contacts];

/** The app-shaped view of one app's state (an element), or null when its shape is not known. */
export function appView(state) {
  if (!isObject(state)) return null;
  for (const view of VIEWS) {
    const tables = view(state);
    if (tables) {
      const wrap = el("div", "app-view");
      wrap.append(...tables);
      return wrap;
    }
  }
  return null;
}
