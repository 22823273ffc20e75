// The timeline's data: every event and notification row of one session, in seq order, plus
// the filtered view of them. Exists so that ingest stays O(1) per stream item (append, count,
// test one row against the filters) and only a filter change walks all rows.

export const EVENT_TYPES = ["AGENT", "ENV", "USER", "CONDITION", "VALIDATION", "STOP"];
export const NOTIFICATION = "NOTIFICATION";

/** A row built from a stream item; display strings are computed lazily by the renderer. */
function rowFrom(frame) {
  if (frame.type === "event") {
    const e = frame.event || {};
    return {
      seq: frame.seq,
      kind: "event",
      type: e.event_type || "ENV",
      app: e.app || null,
      fn: e.function || null,
      time: e.time,
      failed: e.exception !== null && e.exception !== undefined,
      record: e,
    };
  }
  const n = frame.notification || {};
  return {
    seq: frame.seq,
    kind: "notification",
    type: NOTIFICATION,
    app: null,
    fn: n.message_type || null,
    time: n.timestamp,
    failed: false,
    record: n,
  };
}

/** What a text filter searches in a row, lower case; built on the first search that reaches it. */
function searchText(row) {
  if (row.search === undefined) {
    const r = row.record;
    const parts = row.kind === "event" ? [row.app, row.fn, r.args, r.return_value, r.exception] : [r.message_type, r.message];
    row.search = parts
      .filter((part) => part !== null && part !== undefined)
      .map((part) => (typeof part === "string" ? part : JSON.stringify(part)))
      .join(" ")
      .toLowerCase();
  }
  return row.search;
}

export class Store {
  constructor() {
    this.clear();
    this.hiddenTypes = new Set();
    this.app = null; // null: every app
    this.text = ""; // lower case; "": no text filter
  }

  /** Forget every row (a new session, or the server's stream was reset). */
  clear() {
    this.rows = [];
    this.visible = []; // indices into rows that pass the filters, ascending
    this.typeCounts = new Map();
    this.appCounts = new Map();
    this.failures = 0;
    this.events = 0;
    this.notifications = 0;
    this.newApps = true; // the app list changed since the last render
  }

  /** Append one `event` or `notification` stream item (already deduplicated by seq). */
  add(frame) {
    const row = rowFrom(frame);
    const index = this.rows.length;
    row.n = index + 1; // what the user reads: rows count from 1 (seq also counts clock items)
    this.rows.push(row);
    this.typeCounts.set(row.type, (this.typeCounts.get(row.type) || 0) + 1);
    if (row.kind === "event") this.events += 1;
    else this.notifications += 1;
    if (row.failed) this.failures += 1;
    if (row.app !== null) {
      const count = this.appCounts.get(row.app);
      if (count === undefined) this.newApps = true;
      this.appCounts.set(row.app, (count || 0) + 1);
    }
    if (this.matches(row)) this.visible.push(index);
    return row;
  }

  matches(row) {
    if (this.hiddenTypes.has(row.type)) return false;
    if (this.app !== null && row.app !== this.app) return false;
    return !this.text || searchText(row).includes(this.text);
  }

  /** Keep only rows whose call, arguments, result or message hold `text` (any case). */
  setText(text) {
    this.text = String(text || "").trim().toLowerCase();
    this.refilter();
  }

  /** Show or hide one type (an event type or NOTIFICATION); rebuilds the view. */
  setTypeVisible(type, visible) {
    if (visible) this.hiddenTypes.delete(type);
    else this.hiddenTypes.add(type);
    this.refilter();
  }

  /** Keep only one app's events (null: all rows). */
  setApp(app) {
    this.app = app || null;
    this.refilter();
  }

  refilter() {
    const visible = [];
    const rows = this.rows;
    for (let i = 0; i < rows.length; i += 1) if (this.matches(rows[i])) visible.push(i);
    this.visible = visible;
  }

  /** Position of `seq` in the filtered view, or -1. Binary search: rows are in seq order. */
  visibleIndexOfSeq(seq) {
    let lo = 0;
    let hi = this.visible.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = this.rows[this.visible[mid]].seq;
      if (s === seq) return mid;
      if (s < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  rowAtVisible(i) {
    return this.rows[this.visible[i]];
  }
}
