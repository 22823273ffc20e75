// The open session's pictures: its events on the simulated-time axis, one lane per origin
// (agent, user, environment, validation, notifications), and simulated time against wall time
// since the page opened it (a realtime session is a straight line at its speed, a fast one
// climbs in steps, a paused or idle one is flat). Drawn with uPlot (uplot.iife.min.js, MIT,
// vendored: see uplot.LICENSE), which draws thousands of points on a canvas with zoom (drag
// across a chart) and a cursor readout, where drawing by hand would not earn its keep.
// Data is appended as rows arrive and drawn at most a few times a second.

import { fmtOffset } from "./format.js";

/** Lanes, top to bottom: a label and the row types (store.js) drawn in it. */
export const LANES = [
  ["agent", ["AGENT"]],
  ["user", ["USER"]],
  ["env", ["ENV"]],
  ["validation", ["CONDITION", "VALIDATION", "STOP"]],
  ["notifications", ["NOTIFICATION"]],
];
const LANE_OF = new Map(LANES.flatMap(([, types], i) => types.map((type) => [type, i])));
const DRAW_EVERY_MS = 250;
const MAX_CLOCK_SAMPLES = 4000;

/** A split of a time axis: whole seconds plainly, fractions (a short range) with tenths. */
const timeTick = (s) => fmtOffset(s, Number.isInteger(s) ? 0 : 1, false);

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

export class SessionCharts {
  /**
   * @param lanes  the element the lane chart goes in
   * @param clock  the element the simulated-vs-wall chart goes in
   * @param store  the Store whose rows are drawn
   */
  constructor({ lanes, clock, store }) {
    this.lanesEl = lanes;
    this.clockEl = clock;
    this.store = store;
    this.available = typeof window.uPlot === "function";
    this.reset();
    if (!this.available) return;
    this.lanesPlot = new window.uPlot(this._lanesOptions(), this.lanesData(), lanes);
    this.clockPlot = new window.uPlot(this._clockOptions(), this.clockData(), clock);
    new ResizeObserver(() => this._fit()).observe(lanes.parentElement);
  }

  /** Forget everything drawn (another session, or the stream was reset). */
  reset() {
    this.xs = []; // simulated seconds since the start, one per row, ascending
    this.lanes = LANES.map(() => []); // per lane: its lane index where the row is its, else null
    this.seen = 0; // rows of the store already in xs
    this.wall = []; // wall seconds since the first sample
    this.sim = []; // simulated seconds since the start at that wall time
    this.firstWall = null;
    this.lastDraw = 0;
    this.dirty = true;
  }

  /** A reading of the clock: `simSeconds` since the scenario's start, now. */
  sample(simSeconds) {
    if (!Number.isFinite(simSeconds)) return;
    const now = performance.now() / 1000;
    if (this.firstWall === null) this.firstWall = now;
    const t = now - this.firstWall;
    const last = this.wall.length - 1;
    if (last >= 0 && t - this.wall[last] < 0.2 && this.sim[last] === simSeconds) return;
    this.wall.push(t);
    this.sim.push(simSeconds);
    if (this.wall.length > MAX_CLOCK_SAMPLES) {
      this.wall.splice(0, MAX_CLOCK_SAMPLES / 2);
      this.sim.splice(0, MAX_CLOCK_SAMPLES / 2);
    }
    this.dirty = true;
  }

  /** Take in the rows added since the last call; redraw when due (`force`: now). */
  update(startTime, force = false) {
    const rows = this.store.rows;
    if (rows.length < this.seen) this.reset();
    for (let i = this.seen; i < rows.length; i += 1) this._add(rows[i].time - startTime, rows[i].type);
    if (rows.length !== this.seen) this.dirty = true;
    this.seen = rows.length;
    const now = performance.now();
    if (!this.available || !this.dirty || (!force && now - this.lastDraw < DRAW_EVERY_MS)) return;
    this.lastDraw = now;
    this.dirty = false;
    this.lanesPlot.setData(this.lanesData());
    this.clockPlot.setData(this.clockData());
  }

  lanesData() {
    return [this.xs, ...this.lanes];
  }

  clockData() {
    return [this.wall, this.sim];
  }

  _add(x, type) {
    const lane = LANE_OF.get(type) ?? 2;
    let at = this.xs.length;
    while (at > 0 && this.xs[at - 1] > x) at -= 1; // rows come in time order; a late one slots in
    this.xs.splice(at, 0, x);
    this.lanes.forEach((values, i) => values.splice(at, 0, i === lane ? lane : null));
  }

  _fit() {
    const width = (el) => Math.max(160, el.clientWidth);
    this.lanesPlot.setSize({ width: width(this.lanesEl), height: this.lanesPlot.height });
    this.clockPlot.setSize({ width: width(this.clockEl), height: this.clockPlot.height });
  }

  _lanesOptions() {
    const colors = ["--t-AGENT", "--t-USER", "--t-ENV", "--t-VALIDATION", "--t-NOTIFICATION"].map((name) =>
      cssVar(name, "#2563eb"),
    );
    const axis = { stroke: cssVar("--muted", "#667085"), grid: { stroke: cssVar("--border", "#e2e6ec") } };
    return {
      width: Math.max(160, this.lanesEl.clientWidth),
      height: 150,
      legend: { show: false },
      cursor: { drag: { x: true, y: false }, points: { show: false } },
      scales: { x: { time: false }, y: { range: [-0.6, LANES.length - 0.4] } },
      axes: [
        { ...axis, space: 90, values: (u, splits) => splits.map(timeTick) },
        {
          ...axis,
          size: 90,
          splits: () => LANES.map((_, i) => i),
          values: (u, splits) => splits.map((i) => LANES[i]?.[0] ?? ""),
        },
      ],
      series: [
        { label: "simulated time" },
        ...LANES.map(([name], i) => ({
          label: name,
          stroke: colors[i],
          paths: () => null,
          points: { show: true, size: 7, width: 1, fill: colors[i], stroke: colors[i] },
        })),
      ],
    };
  }

  _clockOptions() {
    const axis = { stroke: cssVar("--muted", "#667085"), grid: { stroke: cssVar("--border", "#e2e6ec") } };
    return {
      width: Math.max(160, this.clockEl.clientWidth),
      height: 150,
      legend: { show: false },
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false } },
      axes: [
        { ...axis, values: (u, splits) => splits.map((s) => `${s.toFixed(0)} s`) },
        { ...axis, size: 84, values: (u, splits) => splits.map(timeTick) },
      ],
      series: [{ label: "wall time" }, { label: "simulated time", stroke: cssVar("--accent", "#2563eb"), width: 2 }],
    };
  }
}
