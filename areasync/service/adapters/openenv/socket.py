"""OpenEnv's `/ws`: one episode per connection, strictly request/response.

The token in the URL was checked before the upgrade (`routes.py`), so the connection is
authenticated from its first byte: it leaves the pre-hello pool at once and counts against
`max_connections` (full: a `CAPACITY_REACHED` error, then a close). Each message is answered
before the next is read, as OpenEnv's own server does. A connection silent for
`openenv_idle_timeout` seconds is reaped: its fresh session is stopped (OpenEnv's users leak
slots when a trainer dies without closing), it is told why, and closed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from areasync.protocol.errors import CloseCode
from areasync.service.adapters.openenv.credential import Credential
from areasync.service.adapters.openenv.episode import Episode
from areasync.service.adapters.openenv.messages import (
    ErrorCode,
    OpenEnvError,
    error_message,
    observation_message,
    parse_action,
    parse_message,
    parse_reset,
    state_message,
)

if TYPE_CHECKING:
    from areasync.service.gate.admission import Admission
    from areasync.service.sessions.registry import SessionRegistry

logger = logging.getLogger("areasync.service")


async def serve_socket(
    ws: ServerConnection,
    registry: SessionRegistry,
    credential: Credential,
    admission: Admission | None,
) -> None:
    """Serve one OpenEnv WebSocket until it closes, is reaped, or the server shuts down."""
    config = registry.config
    if admission is not None and not admission.admit(ws):
        error = OpenEnvError(
            ErrorCode.CAPACITY_REACHED,
            f"the server has {config.max_connections} open connections, its limit "
            "(max_connections); close an environment or retry later",
            max_sessions=config.max_connections,
        )
        await _send_and_close(ws, error, CloseCode.CAPACITY, "capacity")
        return
    episode = Episode(registry, credential)
    try:
        await _loop(ws, episode, config.openenv_idle_timeout)
    finally:
        with anyio.CancelScope(shield=True):
            await episode.close()
        if admission is not None:
            admission.release()


async def _loop(ws: ServerConnection, episode: Episode, idle_timeout: float) -> None:
    while True:
        raw: str | bytes | None = None
        with anyio.move_on_after(idle_timeout):
            try:
                raw = await ws.recv()
            except ConnectionClosed:
                return
        if raw is None:
            reaped = OpenEnvError(
                ErrorCode.SESSION_ERROR,
                f"no message for {idle_timeout:g} s (openenv_idle_timeout): the environment was "
                "reaped and its session stopped; reconnect and reset to start again",
            )
            await _send_and_close(ws, reaped, CloseCode.GOING_AWAY, "idle: reaped")
            return
        reply, close = await answer(episode, raw)
        try:
            if reply is not None:
                await ws.send(reply)
            if close:
                await ws.close()
                return
        except ConnectionClosed:
            return


async def answer(episode: Episode, raw: str | bytes) -> tuple[str | None, bool]:
    """One message's reply (None for `close`) and whether the connection is to close."""
    try:
        kind, data = parse_message(raw)
        match kind:
            case "reset":
                initialize, episode_id = parse_reset(data)
                return observation_message(*await episode.reset(initialize, episode_id)), False
            case "step":
                action = parse_action(data)
                return observation_message(*await episode.step(action)), False
            case "state":
                episode.touch()
                return state_message(episode.state()), False
            case _:  # close
                return None, True
    except OpenEnvError as error:
        return error_message(error), False


async def _send_and_close(ws: ServerConnection, error: OpenEnvError, code: int, why: str) -> None:
    with anyio.move_on_after(2.0):
        try:
            await ws.send(error_message(error))
            await ws.close(code, why)
        except ConnectionClosed:
            pass
