"""A gaia2-cli harness as its runner and daemon talk to an adapter, over real HTTP (stdlib only).

Written from gaia2-cli's documented contract, not from areasync's code: `POST /notify`
`{"message"}` -> `{"ok", "runId"}`; `GET /messages?after=<seq>` -> `{"ok", "messages",
"lastSeq"}`; `GET /status` polled until `status` is complete, stopped or error; `GET /health`
until `connected`; `GET /events` server-sent events `event: chat` / `data: <message JSON>`; and
areasync's agent routes, `POST /call_tool` `{"app", "action", "args"}` -> `{"ok", "result"}`,
`GET /notifications?after=<seq>` and `POST /idle` `{"seen"?}` -> `{"ok"}` (upstream's
`/execute_action` is its daemon's ENV dispatch, which areasync refuses). Each call runs the
blocking stdlib client in a worker thread, with a socket timeout, so no wait is unbounded.
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any
from urllib.parse import urlsplit

import anyio

from tests.waiting import eventually

TERMINAL = frozenset({"complete", "stopped", "error"})
TIMEOUT = 10.0


def _request(
    base: str, method: str, path: str, body: bytes | None = None
) -> tuple[int, dict[str, Any]]:
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, url.path + path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


class Harness:
    """One harness's view of an adapter at `base` (its `notify_url`)."""

    def __init__(self, base: str) -> None:
        self.base = base

    async def call(
        self, method: str, path: str, body: bytes | dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        raw = json.dumps(body).encode() if isinstance(body, dict) else body
        return await anyio.to_thread.run_sync(_request, self.base, method, path, raw)

    async def notify(self, message: str, route: str = "/notify") -> dict[str, Any]:
        status, body = await self.call("POST", route, {"message": message})
        assert status == 200, body
        return body

    async def messages(self, after: int = 0, route: str = "/messages") -> dict[str, Any]:
        """`GET /messages?after=N` (or `route`'s: `/notifications` is numbered alike)."""
        status, body = await self.call("GET", f"{route}?after={after}")
        assert status == 200, body
        return body

    async def status(self) -> dict[str, Any]:
        status, body = await self.call("GET", "/status")
        assert status == 200, body
        return body

    async def health(self) -> dict[str, Any]:
        status, body = await self.call("GET", "/health")
        assert status == 200, body
        return body

    async def call_tool(
        self, app: str, action: str, args: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        return await self.call("POST", "/call_tool", {"app": app, "action": action, "args": args})

    async def idle(self, seen: int | None = None) -> dict[str, Any]:
        """`POST /idle`: the agent is done for now; `seen`, the `lastSeq` of the
        `/notifications` it has read (a notification after them keeps its turn)."""
        status, body = await self.call("POST", "/idle", {} if seen is None else {"seen": seen})
        assert status == 200, body
        return body

    async def wait_status(
        self, statuses: frozenset[str] = TERMINAL, limit: float = 30.0
    ) -> dict[str, Any]:
        """Poll /status (as the runner does, faster) until its status is one of `statuses`."""

        async def reached() -> dict[str, Any] | None:
            data = await self.status()
            return data if data["status"] in statuses else None

        status = await eventually(reached, within=limit, poll=0.02)
        assert status is not None
        return status

    async def wait_messages(self, count: int, limit: float = 30.0) -> list[dict[str, Any]]:
        """Poll /messages until `count` messages are there."""

        async def arrived() -> list[dict[str, Any]] | None:
            data = await self.messages()
            return list(data["messages"]) if data["lastSeq"] >= count else None

        messages = await eventually(arrived, within=limit, poll=0.02)
        assert messages is not None
        return messages


class SseReader:
    """A `GET /events` subscriber: reads `event:`/`data:` frames with the stdlib, in a thread."""

    def __init__(self, base: str, query: str = "") -> None:
        url = urlsplit(base)
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT)
        self.conn.request("GET", url.path + "/events" + query)
        self.response = self.conn.getresponse()
        self.status = self.response.status
        self.headers = {k.lower(): v for k, v in self.response.getheaders()}

    @classmethod
    async def open(cls, base: str, query: str = "") -> SseReader:
        return await anyio.to_thread.run_sync(cls, base, query)

    def _next(self) -> tuple[str, Any]:
        event, data = "message", []
        while True:
            line = self.response.readline()
            if not line:
                raise EOFError("the server closed the event stream")
            text = line.decode().rstrip("\r\n")
            if text == "":
                if data:
                    return event, json.loads("\n".join(data))
                continue  # a comment block's end
            if text.startswith(":"):
                continue
            field, _, value = text.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)

    async def next(self) -> tuple[str, Any]:
        """The next frame: (event, parsed data)."""
        return await anyio.to_thread.run_sync(self._next)

    def close(self) -> None:
        self.response.close()  # a response read to its end holds the socket (HTTP/1.0 style)
        self.conn.close()


def stalled_socket(base: str, query: str = "") -> socket.socket:
    """An /events client that sends its request and never reads (a tiny receive buffer)."""
    url = urlsplit(base)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(TIMEOUT)
    sock.connect((url.hostname, url.port))
    request = f"GET {url.path}/events{query} HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n"
    sock.sendall(request.encode())
    return sock
