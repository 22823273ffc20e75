"""A real `areasync serve --workers 2` process for the front's tests, and what they read of it.

`front(tmp_path)` starts the command line (with the runaway test scenario registered in
every process: `runaway_front.py`), reads its banner, and kills it on the way out if it still
runs. The admin's `/api/sessions` names each worker's pid; `/proc` says which process holds
which socket and what each was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from websockets.asyncio.client import ClientConnection, connect
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode
from websockets.uri import parse_uri

from areasync.client.reconnect import FATAL_CLOSE_CODES, backoff
from tests.service.durable_support import read_until

ADMIN = "front-admin-token-not-for-workers"
WAIT = 60.0
# Between hellos refused while a session is restored: areasync's client's own backoff, from its
# defaults (`backoff_initial`, `backoff_max`).
RETRY_S = 0.05
RETRY_LONGEST_S = 2.0
# A hang bound on a front's start: three processes import ARE (the front, its fork server,
# which also discovers ARE's scenarios, then forks the workers); with both cores busy and a
# load average of 15 it took over a minute.
START = 240.0
# The tests that start fronts: over 10 s of CPU each (`slow`), and room for START.
REAL_PROCESSES = [pytest.mark.slow, pytest.mark.timeout(START + 360)]


@dataclass
class Front:
    process: Process
    banner: str
    port: int
    log: Path

    def said(self) -> str:
        """What the front and its workers logged (warnings and worse): for a failure's message."""
        lines = self.log.read_text(errors="replace").splitlines()
        return "\n".join(line for line in lines if " INFO " not in line)[-4000:]

    @property
    def base(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, session_id: str) -> str:
        return f"ws://{self.base}/sessions/{session_id}"

    def token(self, session_id: str, role: str) -> str:
        block = self.banner.split(f"session {session_id} ", 1)[1]
        found = re.search(rf"^  {role}\s+(\S+)$", block, re.MULTILINE)
        assert found, self.banner
        return found[1]

    def get(self, path: str, token: str = ADMIN) -> Any:
        request = urllib.request.Request(
            f"http://{self.base}{path}", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=WAIT) as response:
            return json.loads(response.read())

    def post(self, path: str, body: dict[str, Any], token: str = ADMIN) -> tuple[int, Any]:
        """(status, JSON answer) of POST `path` with `body`."""
        request = urllib.request.Request(
            f"http://{self.base}{path}",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=WAIT) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as refused:
            return refused.code, json.loads(refused.read())

    async def sessions(self) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self.get, "/api/sessions")  # type: ignore[no-any-return]

    async def worker_pids(self) -> dict[str, int]:
        listed = await self.sessions()
        return {w["name"]: w["pid"] for w in listed["workers"] if w["pid"] is not None}

    async def holder(self, session_id: str) -> int:
        """The pid of the worker holding `session_id`."""
        listed = await self.sessions()
        name = next(s["worker"] for s in listed["sessions"] if s["id"] == session_id)
        return next(w["pid"] for w in listed["workers"] if w["name"] == name)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-12000:]


def command(*extra: str) -> list[str]:
    return [
        *(sys.executable, "-m", "tests.front.runaway_front", "serve", "--workers", "2"),
        *("--port", "0", "--mode", "manual", "--token", ADMIN, *extra),
    ]


@contextlib.asynccontextmanager
async def front(*extra: str, log: Path, env: dict[str, str] | None = None) -> AsyncIterator[Front]:
    """A running front with two session workers (in `env`, default this one's); killed on
    the way out if still running."""
    async with running(*extra, log=log, env=env) as process:
        banner = await read_until(process, "Ctrl-C", within=START)
        found = re.search(r"serving on http://127\.0\.0\.1:(\d+)", banner)
        assert found, banner
        yield Front(process, banner, int(found[1]), log)


@contextlib.asynccontextmanager
async def running(
    *extra: str, log: Path, env: dict[str, str] | None = None
) -> AsyncIterator[Process]:
    """`command(*extra)` started (in `env`), its stderr in `log`; killed on the way out if
    still running, and what it logged printed (shown for a test that failed)."""
    with log.open("ab") as stderr:
        process = await anyio.open_process(command(*extra), stderr=stderr, env=env)
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.fail_after(30), anyio.CancelScope(shield=True):
            # Its pipes closed here, on this loop: a transport left to the collector after the
            # loop has closed raises in its finalizer, wherever the collection runs.
            await process.aclose()
        print(_tail(log))  # shown for a test that failed


async def hello(
    url: str, role: str, token: str, **fields: Any
) -> tuple[ClientConnection, dict[str, Any]]:
    """The first frame answering a hello (`{"type": "closed", "code"}` if the socket was
    closed without one: a session being restored is refused 4503)."""
    ws = await connect(url)
    await ws.send(json.dumps({"type": "hello", "id": 0, "role": role, "token": token, **fields}))
    with anyio.fail_after(WAIT):
        try:
            return ws, json.loads(await ws.recv())
        except ConnectionClosed:
            return ws, {"type": "closed", "code": ws.close_code}


async def hello_past_restore(
    url: str, role: str, token: str, **fields: Any
) -> tuple[ClientConnection, dict[str, Any]]:
    """`hello`, said again while the session is being restored (closed 4503, or closed
    without a close frame by a worker that ended under it) until it is answered otherwise:
    what areasync's client does for every close but a fatal one (`client/reconnect.py`)."""
    with anyio.fail_after(WAIT):
        for failures in itertools.count(1):
            ws, answer = await hello(url, role, token, **fields)
            if answer["type"] != "closed" or answer["code"] in FATAL_CLOSE_CODES:
                return ws, answer
            await anyio.sleep(backoff(failures, initial=RETRY_S, longest=RETRY_LONGEST_S))
    raise AssertionError("unreachable")


async def reply(
    ws: ClientConnection, request_id: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The reply to `request_id`, and the stream items before it."""
    items = []
    with anyio.fail_after(WAIT):
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("id") == request_id:
                return frame, items
            items.append(frame)


async def call(ws: ClientConnection, request_id: int, tool: str, **args: Any) -> None:
    frame = {"type": "call_tool", "id": request_id, "tool": tool, "args": args}
    await ws.send(json.dumps(frame))


def socket_inodes(pid: int) -> set[int]:
    """The socket inodes `pid` holds a descriptor of."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    return inodes


def server_side_inode(port: int, peer_port: int) -> int:
    """The inode of the server side of the TCP connection from `peer_port` to `port`."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], int(fields[9])
        if int(local.split(":")[1], 16) == port and int(remote.split(":")[1], 16) == peer_port:
            return inode
    raise AssertionError(f"no connection from port {peer_port} to {port}")


async def held_by_worker_only(served: Front, session_id: str, port: int, peer: int) -> bool:
    """Whether the server side of the connection from `peer` to `port` is held by
    `session_id`'s worker and not by the front."""
    inode = server_side_inode(port, peer)
    worker = socket_inodes(await served.holder(session_id))
    return inode in worker and inode not in socket_inodes(served.process.pid)


def proc_bytes(pid: int, part: str) -> bytes:
    """`/proc/<pid>/<part>` (environ, cmdline)."""
    return Path(f"/proc/{pid}/{part}").read_bytes()


async def process_end(pid: int) -> None:
    """Return once process `pid` (not a child of this one) has ended: its pidfd is readable."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


def ended(pid: int) -> bool:
    """Whether process `pid` has ended (gone, or a zombie its parent has not reaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "(zombie)" in status


async def pipelined(url: str, frames: list[dict[str, Any]], until_id: int) -> list[dict[str, Any]]:
    """Open `url`, then send every frame of `frames` in one write (hello and what follows it,
    as a client that does not wait for its welcome would); the frames answered, up to the
    reply to `until_id`."""
    protocol = ClientProtocol(parse_uri(url))
    protocol.send_request(protocol.connect())
    uri = parse_uri(url)
    reader, writer = await asyncio.open_connection(uri.host, uri.port)
    answers: list[dict[str, Any]] = []
    try:
        writer.write(b"".join(protocol.data_to_send()))
        with anyio.fail_after(WAIT):
            while protocol.handshake_exc is None and protocol.state.name == "CONNECTING":
                protocol.receive_data(await reader.read(65536))
            assert protocol.state.name == "OPEN", protocol.handshake_exc
            protocol.events_received()  # the response
            for frame in frames:
                protocol.send_text(json.dumps(frame).encode())
            writer.write(b"".join(protocol.data_to_send()))  # one write: every frame
            while not any(a.get("id") == until_id for a in answers):
                data = await reader.read(65536)
                assert data, f"closed after {answers}"
                protocol.receive_data(data)
                for event in protocol.events_received():
                    if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                        answers.append(json.loads(event.data))
    finally:
        writer.close()
    return answers
