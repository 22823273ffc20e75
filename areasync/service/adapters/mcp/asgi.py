"""One aiohttp request served by an ASGI application (the MCP SDK's Streamable HTTP transport).

The SDK's server side is an ASGI application; areasync's HTTP ports are aiohttp's (`port.py`
says why). This is the whole bridge, for one request whose body was already read (screened
and bounded first): the ASGI scope from the request's head, `receive` handing the body once
and then waiting for the response's end (ASGI's `http.disconnect`), and `send` writing the
response as it comes - a JSON body, or server-sent events that grow while the call runs; once
the client is gone, what is sent is dropped, as ASGI servers do.
`extra` is added to the scope (what the route resolved: the caller's episode).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from aiohttp import web
from multidict import CIMultiDict

from areasync.service.http.headers import API_HEADERS

Message = MutableMapping[str, Any]
App = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[Message]],
        Callable[[Message], Awaitable[None]],
    ],
    Awaitable[None],
]


async def serve(
    app: App,
    request: web.BaseRequest,
    body: bytes,
    extra: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> web.StreamResponse:
    """`request` (its `body` read) answered by `app`, with `headers` added to the answer."""
    host, port = _peer(request)
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": "http",
        "path": request.path,
        "raw_path": request.raw_path.encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": (host, port),
        "server": None,
        **extra,
    }
    done = anyio.Event()
    sent_body = False
    response: web.StreamResponse | None = None

    async def receive() -> Message:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            fields: CIMultiDict[str] = CIMultiDict()
            for name, value in message.get("headers", []):
                fields.add(name.decode("latin-1"), value.decode("latin-1"))
            for name, value in (*API_HEADERS, *(headers or {}).items()):
                fields.setdefault(name, value)
            fields.popall("Content-Length", None)  # written as it comes
            response = web.StreamResponse(status=message["status"], headers=fields)
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None and not done.is_set():
            try:
                chunk = message.get("body", b"")
                if chunk:
                    await response.write(chunk)
                if not message.get("more_body", False):
                    await response.write_eof()
                    done.set()
            except ConnectionError:  # the client went away: the rest goes nowhere, as ASGI has it
                done.set()

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    if response is None:  # the application answered nothing: its failure
        return web.Response(status=500, text="the MCP transport gave no answer")
    return response


def _peer(request: web.BaseRequest) -> tuple[str, int]:
    peer = request.transport.get_extra_info("peername") if request.transport else None
    if isinstance(peer, tuple) and len(peer) >= 2:
        return str(peer[0]), int(peer[1])
    return "", 0
