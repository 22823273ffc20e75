// The dashboard's WebSocket, run off the main thread. A burst of stream items can arrive as
// thousands of small WebSocket messages (servers without `batch`, see protocol.js), each one a
// task; on the page's main thread they crowd out rendering (frames delayed ~100 ms during a
// 20,000-event burst). Here they are collected and handed to the page in batches, a few per
// frame, so the page stays smooth.
//
// Page -> worker: {op: "open", url} | {op: "send", data} | {op: "close", code, reason}
// Worker -> page: {ev: "open"} | {ev: "batch", messages: [string, ...]} | {ev: "close", code, reason}

const FLUSH_MS = 8; // at most this long between a message's arrival and its batch
// Caps that keep the page's work per batch well under a frame (a `batch` message from the
// server may itself hold hundreds of frames).
const MAX_MESSAGES = 500;
const MAX_CHARS = 256 * 1024;

let ws = null;
let buffer = [];
let chars = 0;
let timer = null;

function flush() {
  clearTimeout(timer);
  timer = null;
  if (!buffer.length) return;
  postMessage({ ev: "batch", messages: buffer });
  buffer = [];
  chars = 0;
}

onmessage = ({ data }) => {
  if (data.op === "open") {
    ws = new WebSocket(data.url);
    ws.onopen = () => postMessage({ ev: "open" });
    ws.onmessage = (msg) => {
      if (typeof msg.data !== "string") return; // the page speaks JSON text frames only
      buffer.push(msg.data);
      chars += msg.data.length;
      if (buffer.length >= MAX_MESSAGES || chars >= MAX_CHARS) flush();
      else if (timer === null) timer = setTimeout(flush, FLUSH_MS);
    };
    ws.onclose = (ev) => {
      flush(); // everything received before the close reaches the page first
      postMessage({ ev: "close", code: ev.code, reason: ev.reason });
      ws = null;
    };
  } else if (data.op === "send") {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(data.data);
  } else if (data.op === "close") {
    if (ws) ws.close(data.code, data.reason);
  }
};
