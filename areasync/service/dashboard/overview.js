// The server at a glance, for the admin: its /metrics (the Prometheus text every scraper reads)
// read at each poll of the sessions list and drawn over the last minutes with the vendored uPlot
// (see charts.js): live sessions and connections, events and tool calls per second, with the
// totals in words beneath. Exists apart from sessions.js because it reads the server's own
// counters, not the sessions' listing: what a scraper would alert on is what the page shows.

import { fmtCount, plural } from "./format.js";

const MAX_SAMPLES = 300; // at one poll every 2 s, the last ten minutes

/**
 * The samples of a Prometheus text exposition: the fields the overview draws.
 * @param {string} text  GET /metrics's body
 * @returns {{live: number, ended: number, connections: Object<string, number>, events: number,
 *   toolCalls: number}}
 */
export function parseMetrics(text) {
  const samples = new Map(); // `name` or `name{label="value"}` -> its value
  for (const line of String(text).split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    const value = Number(line.slice(at + 1));
    if (at > 0 && Number.isFinite(value)) samples.set(line.slice(0, at), value);
  }
  const connections = {};
  for (const [key, value] of samples) {
    const role = /^areasync_connections\{role="([^"]+)"\}$/.exec(key);
    if (role) connections[role[1]] = value;
  }
  const get = (key) => samples.get(key) ?? 0;
  return {
    live: get('areasync_sessions{state="live"}'),
    ended: get('areasync_sessions{state="ended"}'),
    connections,
    events: get("areasync_events_total"),
    toolCalls: get("areasync_tool_call_seconds_count"),
  };
}

/** Per second between two readings of a counter; null for the first reading, or when the
 *  counter went back (the server restarted). */
function rate(now, before, key) {
  if (!before || now.at <= before.at || now[key] < before[key]) return null;
  return (now[key] - before[key]) / (now.at - before.at);
}

const SERIES = [
  ["live sessions", "--accent", "n"],
  ["connections", "--t-USER", "n"],
  ["events/s", "--t-ENV", "rate"],
  ["tool calls/s", "--t-VALIDATION", "rate"],
];

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

export class ServerOverview {
  /**
   * @param box      the element shown once the server answered (hidden before)
   * @param chart    the element the chart goes in
   * @param summary  the element the totals go in
   * @param base     the service's base URL
   * @param token    the admin token (/metrics is the admin's)
   */
  constructor({ box, chart, summary, base, token }) {
    Object.assign(this, { box, chart, summary, base, token });
    this.readings = []; // {at (s since the first), live, connections, events, toolCalls, ...}
    this.first = null;
    this.plot = null;
    this.error = "";
  }

  /** Read /metrics once and draw it; a failure is said in the summary, never thrown. */
  async refresh() {
    let text;
    try {
      const response = await fetch(new URL("metrics", this.base), {
        cache: "no-store",
        headers: { Authorization: `Bearer ${this.token}` },
        referrerPolicy: "no-referrer",
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      text = await response.text();
    } catch (err) {
      this.error = `Cannot read /metrics (${err.message}); retrying with the sessions list.`;
      this.render();
      return;
    }
    this.error = "";
    this.add(parseMetrics(text), performance.now() / 1000);
    this.render();
  }

  /** Take in one reading made at wall time `now` (seconds). */
  add(metrics, now) {
    if (this.first === null) this.first = now;
    const reading = { ...metrics, at: now - this.first };
    reading.connectionsTotal = Object.values(metrics.connections).reduce((sum, n) => sum + n, 0);
    const before = this.readings.at(-1);
    reading.eventRate = rate(reading, before, "events");
    reading.toolRate = rate(reading, before, "toolCalls");
    this.readings.push(reading);
    if (this.readings.length > MAX_SAMPLES) this.readings.shift();
  }

  /** The chart's columns: wall seconds, then one column per series. */
  data() {
    const r = this.readings;
    return [
      r.map((x) => x.at),
      r.map((x) => x.live),
      r.map((x) => x.connectionsTotal),
      r.map((x) => x.eventRate),
      r.map((x) => x.toolRate),
    ];
  }

  render() {
    this.box.hidden = false;
    const last = this.readings.at(-1);
    if (!last) {
      this.summary.textContent = this.error;
      return;
    }
    const per = (value) => (value === null ? "" : ` (${value.toFixed(1)}/s)`);
    const roles = Object.entries(last.connections)
      .filter(([, n]) => n > 0)
      .map(([role, n]) => `${fmtCount(n)} ${role}`);
    const parts = [
      `${fmtCount(last.live)} live · ${fmtCount(last.ended)} ended`,
      `${plural(last.connectionsTotal, "connection")}${roles.length ? ` (${roles.join(", ")})` : ""}`,
      `${plural(last.events, "event")}${per(last.eventRate)}`,
      `${plural(last.toolCalls, "tool call")}${per(last.toolRate)}`,
    ];
    if (this.error) parts.push(this.error);
    const colors = SERIES.map(([, color]) => cssVar(color, "#2563eb"));
    this.summary.replaceChildren(
      ...parts.map((text, i) => {
        const item = Object.assign(document.createElement("span"), { className: "metric", textContent: text });
        if (i < colors.length) item.style.setProperty("--c", colors[i]);
        return item;
      }),
    );
    this._draw();
  }

  _draw() {
    if (typeof window.uPlot !== "function") return;
    if (!this.plot) this.plot = new window.uPlot(this._options(), this.data(), this.chart);
    else this.plot.setData(this.data());
  }

  _options() {
    const axis = { stroke: cssVar("--muted", "#667085"), grid: { stroke: cssVar("--border", "#e2e6ec") }, size: 34 };
    return {
      width: Math.max(200, this.chart.clientWidth || 228),
      height: 120,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false }, n: { range: (u, min, max) => [0, Math.max(1, max)] }, rate: { range: (u, min, max) => [0, Math.max(1, max)] } },
      axes: [
        { ...axis, values: (u, splits) => splits.map((s) => `${Number.isInteger(s) ? s : s.toFixed(1)} s`) },
        { ...axis, scale: "n" },
        { ...axis, scale: "rate", side: 1, grid: { show: false } },
      ],
      series: [
        { label: "wall time" },
        ...SERIES.map(([label, color, scale]) => ({ label, scale, stroke: cssVar(color, "#2563eb"), width: 1.5, spanGaps: true })),
      ],
    };
  }
}
