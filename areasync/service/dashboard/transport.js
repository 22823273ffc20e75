// The socket under a Connection: a WebSocket in a worker (socket-worker.js), delivering text
// messages in batches so that bursts never starve the page's rendering, or, where workers are
// unavailable (or ?worker=0), a plain WebSocket on the main thread. Same small interface:
//   const t = openTransport(url, {onopen(), onmessages([string]), onclose(code, reason)});
//   t.open; t.send(text); t.close(code, reason); t.detach()  // detach: no more callbacks, ever

const useWorker = typeof Worker !== "undefined" && new URLSearchParams(location.search).get("worker") !== "0";

class WorkerTransport {
  constructor(url, handlers) {
    this.open = false;
    this.handlers = handlers;
    this.worker = new Worker(new URL("./socket-worker.js", import.meta.url));
    this.worker.onmessage = ({ data }) => {
      const h = this.handlers;
      if (!h) return;
      if (data.ev === "batch") h.onmessages(data.messages);
      else if (data.ev === "open") {
        this.open = true;
        h.onopen();
      } else if (data.ev === "close") this._closed(data.code, data.reason);
    };
    this.worker.onerror = () => this._closed(1006, "socket worker failed");
    this.worker.postMessage({ op: "open", url });
  }

  send(text) {
    this.worker.postMessage({ op: "send", data: text });
  }

  close(code, reason) {
    this.worker.postMessage({ op: "close", code, reason });
  }

  detach() {
    this.handlers = null;
    this.open = false;
    // Give a requested close its handshake, then make sure nothing is left running.
    setTimeout(() => this.worker.terminate(), 2000);
  }

  _closed(code, reason) {
    const h = this.handlers;
    this.detach();
    h?.onclose(code, reason);
  }
}

class DirectTransport {
  constructor(url, handlers) {
    this.open = false;
    this.handlers = handlers;
    const ws = (this.ws = new WebSocket(url));
    ws.onopen = () => {
      this.open = true;
      this.handlers?.onopen();
    };
    ws.onmessage = (msg) => {
      if (typeof msg.data === "string") this.handlers?.onmessages([msg.data]);
    };
    ws.onclose = (ev) => {
      const h = this.handlers;
      this.detach();
      h?.onclose(ev.code, ev.reason);
    };
  }

  send(text) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(text);
  }

  close(code, reason) {
    try {
      this.ws.close(code, reason);
    } catch {
      /* already closing */
    }
  }

  detach() {
    this.handlers = null;
    this.open = false;
  }
}

/** Open a socket to `url` (absolute ws:// or wss://). */
export function openTransport(url, handlers) {
  return useWorker ? new WorkerTransport(url, handlers) : new DirectTransport(url, handlers);
}
