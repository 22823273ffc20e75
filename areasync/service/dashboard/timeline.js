// Virtualised timeline: only the rows in (or near) the viewport exist in the DOM, recycled from
// a small pool, so tens of thousands of events cost the same to display as ten. Rows have one
// fixed height; the detail of a row opens in the side pane instead of growing the row.

import { fmtOffset, humanize, summarizeArgs, summarizeValue } from "./format.js";
import { NOTIFICATION } from "./store.js";

const OVERSCAN = 8;

const TYPE_LABELS = { [NOTIFICATION]: "NOTIF" };

function cell(className) {
  const span = document.createElement("span");
  span.className = className;
  return span;
}

/** Display strings for a row, computed once on first render (never for rows not shown). */
function texts(row) {
  if (row.texts) return row.texts;
  const r = row.record;
  let call;
  let app;
  let fn;
  let detail;
  let outcome;
  if (row.kind === "event") {
    call = row.app ? `${row.app}.${row.fn || "?"}` : row.fn || "—";
    app = row.app ? `${row.app}.` : "";
    fn = row.fn || "—";
    detail = summarizeArgs(r.args);
    outcome = row.failed
      ? `✕ ${String(r.exception).split("\n")[0]}`
      : r.return_value === null || r.return_value === undefined
        ? ""
        : `→ ${summarizeValue(r.return_value, 60)}`;
  } else {
    call = humanize(r.message_type);
    app = "";
    fn = call;
    detail = String(r.message || "").replace(/\s+/g, " ");
    outcome = "";
  }
  row.texts = { call, app, fn, detail, outcome };
  return row.texts;
}

export class Timeline {
  /**
   * @param viewport  the scrolling element; its first child is the spacer
   * @param store     the Store whose `visible` rows are shown
   * @param onSelect  called with a row when one is clicked
   */
  constructor({ viewport, store, rowHeight = 34, onSelect, onFollowChange }) {
    this.viewport = viewport;
    this.spacer = viewport.querySelector(".tl-spacer");
    this.store = store;
    this.rowHeight = rowHeight;
    this.onSelect = onSelect;
    this.onFollowChange = onFollowChange;
    this.pool = [];
    this.count = 0;
    this.follow = true;
    this.selectedSeq = null;
    this.startTime = 0;
    this.dirty = true;
    viewport.addEventListener("scroll", () => this._onScroll(), { passive: true });
    viewport.addEventListener("click", (ev) => {
      const el = ev.target.closest(".row");
      if (el && el._row) this.onSelect?.(el._row);
    });
    new ResizeObserver(() => {
      this.dirty = true;
      this.requestRender?.();
    }).observe(viewport);
  }

  /** The number of visible rows changed (new items or a filter change). */
  sync() {
    const count = this.store.visible.length;
    if (count !== this.count) {
      this.count = count;
      this.spacer.style.height = `${count * this.rowHeight}px`;
      this.dirty = true;
    }
    if (this.follow) this.scrollToEnd();
  }

  scrollToEnd() {
    const target = Math.max(0, this.count * this.rowHeight - this.viewport.clientHeight);
    if (Math.abs(this.viewport.scrollTop - target) > 1) {
      this.viewport.scrollTop = target;
      this.dirty = true;
    }
  }

  setFollow(follow) {
    if (this.follow === follow) return;
    this.follow = follow;
    this.onFollowChange?.(follow);
    if (follow) this.scrollToEnd();
  }

  /** Scroll so that the row with `seq` is visible (no-op when it is filtered out). */
  reveal(seq) {
    const i = this.store.visibleIndexOfSeq(seq);
    if (i < 0) return;
    const top = i * this.rowHeight;
    const vp = this.viewport;
    if (top < vp.scrollTop || top + this.rowHeight > vp.scrollTop + vp.clientHeight) {
      vp.scrollTop = top - vp.clientHeight / 2;
    }
    this.dirty = true;
  }

  select(seq) {
    this.selectedSeq = seq;
    this.dirty = true;
  }

  /** Everything must be redrawn (filters changed, a new session). */
  invalidate() {
    for (const el of this.pool) el._key = null;
    this.dirty = true;
  }

  _onScroll() {
    // A scroll we made ourselves lands at the end, so it keeps `follow` on; a user scrolling
    // up turns it off, scrolling back to the end turns it on again.
    // Measured against our own row count, not scrollHeight, which can lag a filter change.
    const vp = this.viewport;
    const end = this.count * this.rowHeight;
    this.setFollow(vp.scrollTop + vp.clientHeight >= end - this.rowHeight / 2);
    this.dirty = true;
    this.requestRender?.();
  }

  /** Draw the rows in view; cheap when nothing changed. Called once per animation frame. */
  render() {
    if (!this.dirty) return;
    this.dirty = false;
    const vp = this.viewport;
    const h = this.rowHeight;
    const first = Math.max(0, Math.floor(vp.scrollTop / h) - OVERSCAN);
    const last = Math.min(this.count, Math.ceil((vp.scrollTop + vp.clientHeight) / h) + OVERSCAN);
    const needed = Math.max(0, last - first);
    while (this.pool.length < needed) this.pool.push(this._makeRow());
    for (let j = 0; j < this.pool.length; j += 1) {
      const el = this.pool[j];
      const i = first + j;
      if (i >= last) {
        if (!el.hidden) el.hidden = true;
        continue;
      }
      const row = this.store.rowAtVisible(i);
      const selected = row.seq === this.selectedSeq;
      const key = `${row.seq}:${selected ? 1 : 0}:${this.startTime}`;
      el.hidden = false;
      el.style.transform = `translateY(${i * h}px)`;
      if (el._key !== key) this._fill(el, row, selected, key);
    }
  }

  _makeRow() {
    const el = document.createElement("div");
    el.setAttribute("role", "row");
    el.style.height = `${this.rowHeight}px`;
    el._cells = {
      seq: cell("c-seq"),
      time: cell("c-time"),
      type: cell("c-type badge"),
      call: cell("c-call"),
      app: cell("app"),
      fn: cell("fn"),
      detail: cell("c-detail"),
      outcome: cell("c-outcome"),
    };
    const { app, fn, ...columns } = el._cells;
    columns.call.append(app, fn);
    for (const c of Object.values(columns)) el.appendChild(c);
    this.spacer.appendChild(el);
    return el;
  }

  _fill(el, row, selected, key) {
    const t = texts(row);
    const c = el._cells;
    el._key = key;
    el._row = row;
    el.dataset.seq = row.seq;
    el.dataset.type = row.type;
    el.className = `row t-${row.type}${row.failed ? " failed" : ""}${selected ? " selected" : ""}`;
    c.seq.textContent = row.n;
    c.seq.title = `stream item ${row.seq}`;
    c.time.textContent = fmtOffset(row.time - this.startTime, 3, false);
    c.type.textContent = TYPE_LABELS[row.type] || row.type;
    c.app.textContent = t.app;
    c.fn.textContent = t.fn;
    c.call.title = t.call;
    c.detail.textContent = t.detail;
    c.outcome.textContent = t.outcome;
    c.outcome.title = t.outcome;
  }
}
