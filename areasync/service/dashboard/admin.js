// What only the admin token may do from the page: create a session (a registered scenario, or an
// uploaded ARE JSON file), restart one (a new session from the same source and options) and fork
// one (a new session from its inputs up to a cut). The lists come over HTTP (GET /api/scenarios,
// /api/sessions/<id>/source); `create_session` and `fork_session` go over a short-lived WebSocket that says hello as `admin` (the page's own connection is a
// controller's), through any session the server still has. A cluster's router takes
// create_session as POST /api/sessions instead (it places the session on the least loaded node;
// a frame would land on the node of the session it went through), and a fork goes to the
// forked session's own node.

import { Connection } from "./protocol.js";

const CONNECT_WITHIN_MS = 10000;

/** An error whose message says what went wrong and what to do. */
export class AdminError extends Error {}

export class Admin {
  /**
   * @param base      the service's base URL
   * @param token     the admin token
   * @param sessions  the SessionList (its sessions are what the create request connects through)
   */
  constructor({ base, token, sessions }) {
    this.base = base;
    this.token = token;
    this.sessions = sessions;
  }

  /** The registered scenario ids, and the largest JSON upload the server takes. */
  async scenarios() {
    return this._get("api/scenarios", "list the scenarios");
  }

  /** The create_session fields that make session `id` again. */
  async source(id) {
    const body = await this._get(`api/sessions/${encodeURIComponent(id)}/source`, `restart ${id}`);
    const { session_id: _, ...request } = body;
    return request;
  }

  /** Session `id`'s agent token (and WebSocket URL), for the agent command the page shows. */
  async agent(id) {
    return this._get(`api/sessions/${encodeURIComponent(id)}/agent`, `read the agent token of ${id}`);
  }

  /** Send create_session{...fields}; resolves with its result (session_id, tokens...). */
  async create(fields, through) {
    if (this.sessions.cluster) return this._post("api/sessions", fields, "create the session");
    return this._request({ type: "create_session", ...fields }, through, "create the session");
  }

  /**
   * Send fork_session for session `id`: cut where its stream had reached `atSeq`, or (null) as it
   * is now. Resolves with create_session's result for the new session.
   */
  async fork(id, atSeq = null) {
    const frame = { type: "fork_session", session_id: id };
    if (atSeq !== null) frame.at_seq = atSeq;
    return this._request(frame, id, `fork ${id}`);
  }

  async _request(frame, through, what) {
    const via = through || this.sessions.sessions[0]?.id;
    if (!via) {
      throw new AdminError("The server has no session to send the request through: restart it (`make serve`).");
    }
    const url = new URL(`sessions/${encodeURIComponent(via)}`, this.base);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    // On a cluster, the via session's own node (a browser's WebSocket cannot follow a redirect).
    const listed = this.sessions.sessions.find((s) => s.id === via);
    if (listed?.node && listed.url) url.href = listed.url;
    let conn;
    let timer;
    const welcomed = new Promise((resolve, reject) => {
      timer = setTimeout(
        () => reject(new AdminError("The server did not answer the admin hello within 10 s; try again.")),
        CONNECT_WITHIN_MS,
      );
      conn = new Connection({
        url: url.href,
        token: this.token,
        roles: ["admin"],
        batch: false,
        handlers: {
          welcome: resolve,
          status: (state, detail) => {
            if (state === "failed") reject(new AdminError(`Could not connect as admin: ${detail}.`));
          },
        },
      });
    });
    try {
      conn.start();
      await welcomed;
      clearTimeout(timer);
      return await conn.request(frame);
    } catch (err) {
      if (err instanceof AdminError) throw err;
      throw new AdminError(`The server refused to ${what} (${err.code || "error"}): ${err.message}`);
    } finally {
      clearTimeout(timer);
      conn.stop();
    }
  }

  async _post(path, body, what) {
    return this._fetch(path, what, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { Authorization: `Bearer ${this.token}`, "Content-Type": "application/json" },
    });
  }

  async _get(path, what) {
    return this._fetch(path, what, { headers: { Authorization: `Bearer ${this.token}` } });
  }

  async _fetch(path, what, init) {
    let response;
    try {
      response = await fetch(new URL(path, this.base), { cache: "no-store", referrerPolicy: "no-referrer", ...init });
    } catch (err) {
      throw new AdminError(`Cannot reach the server to ${what} (${err.message}); is it still running?`);
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const message = body?.error?.message || `HTTP ${response.status}`;
      throw new AdminError(`Cannot ${what}: ${message}`);
    }
    return body;
  }
}

/** The text of a chosen file, refused with a clear message when the server would refuse it. */
export async function readScenarioFile(file, maxBytes) {
  if (maxBytes && file.size > maxBytes) {
    throw new AdminError(
      `${file.name} is ${file.size} bytes; the server takes scenarios up to ${maxBytes} bytes ` +
        "(--max-scenario-bytes): pick a smaller file or restart the server with a higher limit.",
    );
  }
  const text = await file.text();
  try {
    const value = JSON.parse(text);
    if (!value || typeof value !== "object" || Array.isArray(value)) throw new Error("not an object");
  } catch (err) {
    throw new AdminError(`${file.name} is not a JSON object (${err.message}): pick an ARE scenario JSON file.`);
  }
  return text;
}
