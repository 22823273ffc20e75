"""What every `areasync agent` subcommand shares: its connection and scenario options, its
session's URL, the wait for its server, and a second client in another role.

Apart from `cli.py` (the oracle's command) and `are/cli.py` (ARE's agent's), which both import
it and neither of which imports the other back.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from areasync.protocol import ImportMode, Role

if TYPE_CHECKING:
    from areasync.client import Client


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """The options every agent takes to reach its session."""
    parser.add_argument(
        "--url",
        required=True,
        help="the server (ws://HOST:PORT) or a session URL (ws://HOST:PORT/sessions/ID)",
    )
    parser.add_argument("--session", default=None, help="session id (if --url is the server)")
    parser.add_argument("--token", required=True, help="the session's agent token, or admin")
    parser.add_argument(
        "--wait",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="wall seconds to wait for the server to accept connections before giving up "
        "(default 10; it may start after the agent)",
    )
    parser.add_argument("--encoding", choices=["json", "msgpack"], default="msgpack")


def add_scenario_options(parser: argparse.ArgumentParser, *, purpose: str) -> None:
    """--scenario and --import-mode: the session's scenario, loaded as the session loaded it."""
    parser.add_argument(
        "--scenario",
        default=None,
        help="the session's scenario (registered id, JSON file); default: the session's "
        "scenario id as a registered scenario",
    )
    parser.add_argument(
        "--import-mode",
        choices=[mode.value for mode in ImportMode],
        default="auto",
        help=f"how --scenario's JSON is imported, {purpose}: the session's own import mode "
        "(the server's --import-mode or create_session's; auto by default)",
    )


def session_url(url: str, session: str | None) -> str:
    """A session's WebSocket URL from a server URL and a session id (or a full session URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(
            f"--url {url!r} is not a WebSocket URL: use ws://HOST:PORT (or wss://), e.g. "
            "ws://127.0.0.1:8765"
        )
    base = url.rstrip("/")
    if "/sessions/" in base:
        if session is not None and not base.endswith(f"/sessions/{session}"):
            raise ValueError(f"--url {url} names a session already; drop --session {session}")
        return base
    if session is None:
        raise ValueError("--session is required when --url is the server's address")
    return f"{base}/sessions/{session}"


async def wait_for_server(url: str, limit: float, *, prog: str) -> bool:
    """Wait (at most ``limit`` wall seconds) until ``url``'s host accepts TCP connections.

    Says once on stderr what it is waiting for, and gives up with a message saying what to do;
    False then. The client's own retries are meant for a server that went away for a moment,
    and are silent: a server that is not up at all deserves a word.
    """
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    server = f"{parts.scheme}://{parts.netloc}"
    said = False
    last: OSError | None = None
    with anyio.move_on_after(limit):
        while True:
            try:
                stream = await anyio.connect_tcp(host, port)
            except OSError as exc:
                last = exc
                if not said:
                    print(
                        f"{prog}: waiting for the server at {server} ({_reason(exc)}); retrying "
                        f"for up to {limit:g} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    said = True
                await anyio.sleep(0.25)
                continue
            await stream.aclose()
            return True
    print(
        f"{prog}: no server answered at {server} within {limit:g} s"
        f"{f' ({_reason(last)})' if last else ''}: start it (`make serve` or `areasync serve`), "
        "check --url, or wait longer with --wait SECONDS",
        file=sys.stderr,
    )
    return False


def _reason(exc: BaseException) -> str:
    # anyio reports "All connection attempts failed" and chains the socket's own error.
    while exc.__cause__ is not None:
        exc = exc.__cause__
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno > 0:
        return os.strerror(errno).lower()  # "connection refused"
    return str(exc) or type(exc).__name__


async def try_connect(url: str, role: Role, options: dict[str, Any]) -> Client | None:
    """A client in ``role`` if the token is valid for it, else None."""
    from areasync.client import UnauthorizedError, connect

    try:
        return await connect(url, role=role, **options)
    except UnauthorizedError:
        return None
