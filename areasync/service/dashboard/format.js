// Formatting helpers: simulated times, one-line value summaries and pretty JSON.
// Kept apart so the timeline, the header and the detail pane all show values the same way.

const pad2 = (n) => String(n).padStart(2, "0");

/** Simulated seconds since the scenario start as "T+HH:MM:SS.s" (days prefixed when needed);
 *  without `prefix`, just "HH:MM:SS.s" (timeline rows, where the column says what it is). */
export function fmtOffset(seconds, decimals = 1, prefix = true) {
  if (!Number.isFinite(seconds)) return prefix ? "T+--:--:--" : "--:--:--";
  const sign = seconds < 0 ? "-" : prefix ? "+" : "";
  const scale = 10 ** decimals;
  let t = Math.floor(Math.abs(seconds) * scale + 1e-6) / scale;
  const days = Math.floor(t / 86400);
  t -= days * 86400;
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const s = t % 60;
  const sec = decimals > 0 ? s.toFixed(decimals).padStart(3 + decimals, "0") : pad2(Math.floor(s));
  return `${prefix ? "T" : ""}${sign}${days ? `${days}d ` : ""}${pad2(h)}:${pad2(m)}:${sec}`;
}

/** Absolute simulated time (seconds since the Unix epoch) as "YYYY-MM-DD HH:MM:SS UTC". */
export function fmtAbsolute(epochSeconds) {
  if (!Number.isFinite(epochSeconds)) return "";
  const d = new Date(epochSeconds * 1000);
  if (Number.isNaN(d.getTime())) return "";
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** A number with thousands separators. */
export function fmtCount(n) {
  return Number(n || 0).toLocaleString("en-US");
}

/** "1 event", "2,500 events". */
export function plural(n, noun) {
  return `${fmtCount(n)} ${noun}${n === 1 ? "" : "s"}`;
}

function clip(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** One value, compact: strings quoted and clipped, containers shown by size. */
export function summarizeValue(value, max = 48) {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return `"${clip(value.replace(/\s+/g, " "), max)}"`;
  if (typeof value !== "object") return clip(String(value), max);
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    const first = summarizeValue(value[0], 24);
    return clip(value.length === 1 ? `[${first}]` : `[${first}, …${value.length - 1}]`, max);
  }
  const keys = Object.keys(value);
  if (keys.length === 0) return "{}";
  return clip(`{${keys.slice(0, 4).join(", ")}${keys.length > 4 ? ", …" : ""}}`, max);
}

/** Keyword arguments on one line: `a="x", b=3`. */
export function summarizeArgs(args, max = 240) {
  if (!args || typeof args !== "object") return "";
  const parts = [];
  let length = 0;
  for (const [key, value] of Object.entries(args)) {
    const part = `${key}=${summarizeValue(value)}`;
    parts.push(part);
    length += part.length + 2;
    if (length > max) break;
  }
  return clip(parts.join(", "), max);
}

/** Pretty JSON for the detail views; never throws. */
export function pretty(value) {
  if (value === undefined) return "";
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** "ENVIRONMENT_NOTIFICATION" -> "environment notification". */
export function humanize(token) {
  return String(token || "").toLowerCase().replace(/_/g, " ");
}
