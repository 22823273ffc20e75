// One session's WebSocket connection speaking areasync/1 in JSON text frames: hello/welcome,
// requests with ids, keepalive pings, and reconnection that resumes with hello{since, epoch}.
// It is the only place that knows about sequence numbers: stream items reach the app exactly
// once and in order (duplicates dropped, a gap triggers a resume), whatever the network does.

import { openTransport } from "./transport.js";

const STREAM_TYPES = new Set(["event", "notification", "clock", "ended"]);
// Close codes after which reconnecting cannot help (see areasync/protocol/errors.py).
const FATAL_CLOSE = new Map([
  [4000, "the server rejected the hello"],
  [4004, "no such session"],
  [4009, "a frame was too large"],
]);
const UNAUTHORIZED_CLOSE = 4001;
const REQUEST_TIMEOUT_MS = 15000;
const PING_EVERY_MS = 15000;
const PONG_WITHIN_MS = 10000;
const RESYNC_CHECK_MS = 2000;

/** A failed request: `code` is the server's error code (or disconnected / timeout). */
export class RequestError extends Error {
  constructor(code, message, frame = null) {
    super(message);
    this.code = code;
    this.frame = frame;
  }
}

/**
 * Events delivered to `handlers` (all optional):
 *  status(state, detail)   connecting | live | reconnecting | ended | failed | closed
 *  welcome(welcome)        after every successful hello (role, epoch, clock, replay)
 *  reset(welcome)          the server could not replay: every cached item must be dropped
 *  item(frame)             a stream item, each seq exactly once, in order
 *  error(frame)            an error frame that answers no request
 */
export class Connection {
  constructor({ url, token, roles, handlers = {}, offline = false, batch = true }) {
    this.url = url;
    this.token = token;
    this.roles = roles;
    this.roleIndex = 0;
    this.handlers = handlers;
    this.offline = offline;
    this.ws = null;
    this.state = "closed";
    this.role = null;
    this.epoch = null;
    this.lastSeq = 0;
    this.nextId = 1;
    this.pending = new Map();
    this.attempt = 0;
    this.batch = batch;
    this.welcomed = false;
    this.stopped = false;
    this.ended = false;
    this.stats = { connects: 0, duplicates: 0, gaps: 0, resets: 0, maxBatchMs: 0 };
    this._timers = new Set();
  }

  start() {
    this.stopped = false;
    if (this.offline) {
      this._status("live", "offline feed");
      return;
    }
    this._connect();
  }

  /** Close for good (another session was opened, or the page is going away). */
  stop() {
    this.stopped = true;
    this._clearTimers();
    this._abandon(1000, "dashboard closed");
    this._status("closed");
  }

  /** Send a request frame (without id); resolves with result.value, rejects with RequestError. */
  request(frame) {
    if (!this.ws || !this.ws.open || !this.welcomed) {
      return Promise.reject(new RequestError("disconnected", "not connected to the session"));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = this._later(REQUEST_TIMEOUT_MS, () => {
        this.pending.delete(id);
        reject(new RequestError("timeout", `no answer to ${frame.type} within 15 s`));
      });
      this.pending.set(id, { resolve, reject, timer, type: frame.type });
      this.ws.send(JSON.stringify({ ...frame, id }));
    });
  }

  /** Drop the socket as a network failure would (tests use it); the connection then resumes. */
  drop() {
    if (this.ws) this._lost("connection dropped");
  }

  /** Handle one decoded server frame, as if it came from the socket (also used to feed benches). */
  receive(frame) {
    if (!frame || typeof frame !== "object") return;
    const type = frame.type;
    if (STREAM_TYPES.has(type)) return this._streamItem(frame);
    if (type === "batch") {
      // Frames that were ready together (hello.batch): each as if it had arrived alone.
      const ws = this.ws;
      for (const inner of frame.frames || []) {
        this.receive(inner);
        if (this.ws !== ws) return; // abandoned on a gap: the rest belongs to the old socket
      }
      return;
    }
    if (type === "welcome") return this._welcome(frame);
    if (type === "result" || type === "pong") return this._settle(frame.id, frame, null);
    if (type === "error") {
      if (!this.welcomed) {
        // A refused hello: the close that follows decides what to do (next role, start over).
        if (frame.code === "unauthorized") this._authFailed = true;
        if (frame.code === "invalid_field" && this.batch) {
          // hello.batch is the only field a server may not know: one older than it. Ask again
          // without it (never read the error's text: welcome.capabilities says what is offered).
          this._batchRefused = true;
        }
        if (frame.code === "replay_unavailable") this._replayFailed = true;
        this._helloError = frame;
        return;
      }
      if (frame.id !== null && frame.id !== undefined && this.pending.has(frame.id)) {
        return this._settle(frame.id, null, frame);
      }
      return this.handlers.error?.(frame);
    }
    // Unknown frame types are ignored (protocol compatibility rule 2).
  }

  // -- lifecycle ---------------------------------------------------------------------------

  _connect() {
    this._clearTimers();
    this.welcomed = false;
    this._authFailed = false;
    this._replayFailed = false;
    this._helloError = null;
    this._batchRefused = false;
    this._status(this.stats.connects ? "reconnecting" : "connecting", this._attemptText());
    let transport;
    try {
      transport = openTransport(this.url, {
        onopen: () => {
          const hello = {
            type: "hello",
            id: this.nextId++,
            role: this.roles[this.roleIndex],
            token: this.token,
            since: this.lastSeq,
          };
          if (this.epoch) hello.epoch = this.epoch;
          if (this.batch) hello.batch = true; // bursts arrive as one message: far fewer to parse
          transport.send(JSON.stringify(hello));
        },
        onmessages: (messages) => {
          const started = performance.now();
          for (const text of messages) {
            let frame;
            try {
              frame = JSON.parse(text);
            } catch {
              continue;
            }
            this.receive(frame);
            if (this.ws !== transport) return; // it was abandoned (a gap): drop the rest
          }
          const spent = performance.now() - started;
          if (spent > this.stats.maxBatchMs) this.stats.maxBatchMs = spent;
        },
        onclose: (code, reason) => {
          if (this.ws === transport) this._onClose(code, reason);
        },
      });
    } catch (err) {
      this._status("failed", String(err));
      return;
    }
    this.ws = transport;
  }

  _onClose(code, reason) {
    this.ws = null;
    this._failPending("disconnected", "the connection closed");
    this._clearTimers();
    if (this.stopped) return;
    if (this.ended) return this._status("ended", "the session has ended");
    if (!this.welcomed && (this._authFailed || code === UNAUTHORIZED_CLOSE)) {
      if (this.roleIndex + 1 < this.roles.length) {
        this.roleIndex += 1; // e.g. an observer token: controller refused, try observer
        return this._connect();
      }
      const tried = this.roles.join(" or ");
      return this._status("failed", `the token is not valid for ${tried}`);
    }
    if (this._batchRefused) {
      this._batchRefused = false;
      this.batch = false;
      return this._connect();
    }
    if (this._replayFailed) {
      // Our position is ahead of the server's stream: it is not the stream we were reading.
      if (this.lastSeq > 0) this.handlers.reset?.(null);
      this.lastSeq = 0;
      this.epoch = null;
      return this._reconnectSoon(0);
    }
    if (FATAL_CLOSE.has(code)) {
      const why = this._helloError?.message || reason;
      return this._status("failed", `${FATAL_CLOSE.get(code)}${why ? `: ${why}` : ""}`);
    }
    this._reconnectSoon();
  }

  _reconnectSoon(delay) {
    const backoff = Math.min(5000, 250 * 2 ** this.attempt) * (0.8 + Math.random() * 0.4);
    this.attempt += 1;
    const wait = delay ?? backoff;
    this._status("reconnecting", `retry in ${(wait / 1000).toFixed(1)} s`);
    this._later(wait, () => {
      if (!this.stopped) this._connect();
    });
  }

  /** The socket is unusable (gap, dead peer, drop): forget it and resume from lastSeq. */
  _lost(why) {
    this._abandon(4000, why);
    this._failPending("disconnected", why);
    this._clearTimers();
    if (!this.stopped && !this.ended) this._reconnectSoon(why === "resync" ? 0 : undefined);
  }

  _abandon(code, why) {
    const ws = this.ws;
    this.ws = null;
    this.welcomed = false;
    if (!ws) return;
    ws.detach();
    ws.close(code >= 4000 || code === 1000 ? code : 4000, why.slice(0, 100));
  }

  // -- frames ------------------------------------------------------------------------------

  _welcome(w) {
    if (w.replay === "reset") {
      // Our epoch is not this stream's (the server restarted, the session was recreated): its
      // seq numbers mean something else. Drop everything; areasync then replays the whole new
      // stream. Should nothing arrive, ask for it explicitly (since 0 with the new epoch).
      this.stats.resets += 1;
      if (this.lastSeq > 0) this.handlers.reset?.(w);
      this.lastSeq = 0;
      if (w.seq > 0) {
        this._later(RESYNC_CHECK_MS, () => {
          if (this.welcomed && this.lastSeq === 0) this._lost("resync");
        });
      }
    }
    // Ask for batches only while the server offers them (no capabilities: it offers none).
    if (!(w.capabilities || []).includes("batch")) this.batch = false;
    this.welcomed = true;
    this.attempt = 0;
    this.stats.connects += 1;
    this.role = w.role;
    this.epoch = w.epoch;
    this.handlers.welcome?.(w);
    this._status("live");
    if (!this.offline) this._startPings();
  }

  _streamItem(frame) {
    const seq = frame.seq;
    if (seq <= this.lastSeq) {
      this.stats.duplicates += 1;
      return;
    }
    if (seq !== this.lastSeq + 1) {
      // Never show a hole: resume from the last item we have.
      this.stats.gaps += 1;
      if (!this.offline) this._lost("gap in the stream");
      return;
    }
    this.lastSeq = seq;
    this.handlers.item?.(frame);
    if (frame.type === "ended") {
      // The socket stays open for reads (get_state), but the stream is over.
      this.ended = true;
      this._status("ended", "");
    }
  }

  _settle(id, frame, error) {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pending.delete(id);
    this._cancel(entry.timer);
    if (error) entry.reject(new RequestError(error.code, error.message || error.code, error));
    else entry.resolve(frame.type === "result" ? frame.value : frame);
  }

  _failPending(code, message) {
    for (const [id, entry] of this.pending) {
      this._cancel(entry.timer);
      entry.reject(new RequestError(code, message));
      this.pending.delete(id);
    }
  }

  // -- keepalive ---------------------------------------------------------------------------

  _startPings() {
    const tick = () => {
      if (!this.welcomed) return;
      const sent = this.request({ type: "ping" });
      const dead = this._later(PONG_WITHIN_MS, () => this._lost("no pong"));
      sent.then(
        () => this._cancel(dead),
        () => this._cancel(dead),
      );
      this._later(PING_EVERY_MS, tick);
    };
    this._later(PING_EVERY_MS, tick);
  }

  // -- helpers -----------------------------------------------------------------------------

  _status(state, detail = "") {
    this.state = state;
    this.handlers.status?.(state, detail);
  }

  _attemptText() {
    return this.attempt ? `attempt ${this.attempt + 1}` : "";
  }

  _later(ms, fn) {
    const timer = setTimeout(() => {
      this._timers.delete(timer);
      fn();
    }, ms);
    this._timers.add(timer);
    return timer;
  }

  _cancel(timer) {
    clearTimeout(timer);
    this._timers.delete(timer);
  }

  _clearTimers() {
    for (const timer of this._timers) clearTimeout(timer);
    this._timers.clear();
  }
}
