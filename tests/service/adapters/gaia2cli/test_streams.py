"""Event streams and sockets on gaia2-cli's port are bounded: per token, per port, in time.

One observer token once opened streams until the server ran out of file descriptors: the main
port and `/health` stopped answering. Now a token holds at most `gaia2_streams_per_token`
streams and the port `gaia2_max_streams` (the next is refused 429 / 503 with a JSON body naming
the bound and what to do), the port at most `gaia2_max_connections` sockets (one more is reset
at accept), and a stream sends keep-alive comments while quiet and ends at
`gaia2_sse_lifetime`, saying where to resume. Bounded waits only, no timing asserted.
"""

from __future__ import annotations

import json

import anyio

from areasync.protocol.frames import Role
from areasync.service.http.headers import API_HEADERS
from tests.hardening.faults import watch_faults
from tests.service.adapters.gaia2cli.harness import SseReader
from tests.service.adapters.gaia2cli.support import adapter, harness
from tests.service.support import TUTORIAL, WAIT, http_get, json_body
from tests.waiting import eventually

SECURITY = {name.lower(): value for name, value in API_HEADERS}


async def _exchange(port: int, request: bytes) -> bytes:
    """Send raw bytes to `port` and read what comes back until the server closes."""
    data = b""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(request)
        with anyio.fail_after(WAIT):
            try:
                while True:
                    data += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
    return data


async def _refused(reader: SseReader) -> dict[str, object]:
    body = await anyio.to_thread.run_sync(reader.response.read)
    reader.close()
    return dict(json.loads(body))


async def test_streams_past_a_tokens_bound_are_refused_429_while_the_server_answers() -> None:
    with watch_faults() as faults:
        async with adapter(gaia2_streams_per_token=3) as service:
            base = service.gaia2_url(TUTORIAL)
            streams = [await SseReader.open(base) for _ in range(3)]
            try:
                excess = [await SseReader.open(base) for _ in range(5)]
                answers = [(reader.status, await _refused(reader)) for reader in excess]
                status, _, body = await http_get(service, "/health")
                other = await SseReader.open(service.gaia2_url(TUTORIAL, Role.OBSERVER))
                other.close()
            finally:
                for stream in streams:
                    stream.close()
    assert {status for status, _ in answers} == {429}
    first = answers[0][1]
    assert first["ok"] is False and first["code"] == "capacity"
    assert "3 event streams" in str(first["error"]) and "gaia2_streams_per_token" in str(
        first["error"]
    )
    assert "close one" in str(first["error"])
    assert status == 200 and json_body(body)["status"] == "ok"
    assert other.status == 200  # another token is not held back
    assert faults.problems == []


async def test_streams_past_the_ports_bound_are_refused_503_naming_it() -> None:
    async with adapter(gaia2_max_streams=2) as service:
        streams = [await SseReader.open(service.gaia2_url(TUTORIAL)) for _ in range(2)]
        try:
            excess = await SseReader.open(service.gaia2_url(TUTORIAL, Role.OBSERVER))
            status, body = excess.status, await _refused(excess)
        finally:
            for stream in streams:
                stream.close()
    assert status == 503 and "gaia2_max_streams" in str(body["error"])
    assert excess.headers["retry-after"]


async def test_a_closed_stream_gives_its_place_back() -> None:
    async with adapter(gaia2_streams_per_token=1) as service:
        base = service.gaia2_url(TUTORIAL)
        first = await SseReader.open(base)
        first.close()
        await eventually(lambda: service.gaia2.streams.taken == 0)
        second = await SseReader.open(base)
        second.close()
    assert second.status == 200


async def test_a_stream_carries_the_security_headers() -> None:
    async with adapter() as service:
        stream = await SseReader.open(service.gaia2_url(TUTORIAL))
        stream.close()
    assert {name: stream.headers.get(name) for name in SECURITY} == SECURITY
    assert stream.headers["content-type"] == "text/event-stream"


async def test_a_quiet_stream_gets_keep_alive_comments() -> None:
    async with adapter(gaia2_sse_keepalive=0.05) as service:
        stream = await SseReader.open(service.gaia2_url(TUTORIAL))
        try:
            lines = [await anyio.to_thread.run_sync(stream.response.readline) for _ in range(4)]
        finally:
            stream.close()
    assert b": keep-alive\n" in lines


async def test_a_stream_ends_at_its_lifetime_saying_where_to_resume() -> None:
    async with adapter(gaia2_sse_lifetime=0.2) as service:
        stream = await SseReader.open(service.gaia2_url(TUTORIAL))
        try:
            with anyio.fail_after(WAIT):
                event, data = await stream.next()
        finally:
            stream.close()
        await eventually(lambda: service.gaia2.streams.taken == 0)
    assert event == "end" and data["lastSeq"] == 0
    assert "gaia2_sse_lifetime" in data["reason"] and "/events?after=" in data["reason"]


async def test_sockets_past_the_ports_bound_are_reset_at_accept() -> None:
    with watch_faults() as faults:
        async with adapter(gaia2_max_connections=2) as service:
            port = service.gaia2.port or 0
            held = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(2)]
            server = service.gaia2.server
            assert server is not None
            await eventually(lambda: len(server.open) == 2)
            async with await anyio.connect_tcp("127.0.0.1", port) as extra:
                with anyio.fail_after(WAIT):
                    try:
                        gone = await extra.receive() == b""
                    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                        gone = True
            status, _, _ = await http_get(service, "/health")  # the main port answers
            for stream in held:
                await stream.aclose()
            await eventually(lambda: len(server.open) == 0)
            after, _ = await harness(service).call("GET", "/health")
    assert gone and server.refused == 1
    assert status == 200 and after == 200
    assert faults.problems == []


async def test_a_request_the_adapter_cannot_parse_gets_the_security_headers_and_no_error_log() -> (
    None
):
    with watch_faults() as faults:
        async with adapter() as service:
            data = await _exchange(
                service.gaia2.port or 0, b"GET /gaia2/x/health HTTP/1.1\r\nno colon here\r\n\r\n"
            )
    head = data.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    assert head.split("\r\n")[0].split()[1] == "400"
    assert all(f"{name}: {value}".lower() in head for name, value in SECURITY.items())
    assert faults.problems == []
