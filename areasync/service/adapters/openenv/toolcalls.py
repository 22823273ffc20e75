"""What an MCP client's `tools/list` and `tools/call` do to a session, as its agent.

Both MCP routes - the MCP adapter's Streamable HTTP endpoint (`mcp/port.py`) and OpenEnv's
`/mcp` JSON-RPC (`mcp.py`) - act through an OpenEnv `Episode` bound to the session (held per
credential, reaped when idle: `held.py`), so a call meets exactly what a WebSocket
agent's `call_tool` meets (`connection/inprocess.py`: the gate, rate, lease, journal, errors). A
call never lets time advance by itself: in fast mode the agent holds its turn from its first call
until it waits (`WAIT`, or ARE's own `SystemApp__wait_for_notification`), as a WebSocket agent
does. Each outcome carries the notifications that arrived since the previous one, which the
routes deliver as MCP notifications.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio

from areasync.protocol.frames import ListTools
from areasync.protocol.records import ToolInfo
from areasync.service.adapters.openenv.episode import Episode
from areasync.service.adapters.openenv.messages import CallToolAction, OpenEnvError
from areasync.service.adapters.openenv.tools import WAIT, listing, result_text, wait_timeout


@dataclasses.dataclass(frozen=True, slots=True)
class Outcome:
    """A tool call's answer: its text, whether it failed, the notifications since the last."""

    text: str
    error: bool
    value: Any
    notifications: list[dict[str, Any]]


async def joined(episode: Episode) -> None:
    """Join the episode's session on its first request (or after the gate closed it)."""
    client = episode.client
    if episode.session is None or client is None or client.closed:
        await episode.reset(None, None)


async def list_tools(episode: Episode, max_wait: float) -> list[dict[str, Any]]:
    await joined(episode)
    infos: list[ToolInfo] = await episode.request(ListTools(id=0))
    return listing(infos, max_wait)


async def call_tool(
    episode: Episode, name: str, arguments: dict[str, Any], max_wait: float
) -> Outcome:
    """Call `name` as the session's agent. A refusal (rate, role, an ended session) or a
    tool that raised is an `error` outcome saying why; nothing else is raised."""
    try:
        await joined(episode)
        if name == WAIT:
            timeout = wait_timeout(arguments, max_wait)
            notifications = await episode.wait(timeout)
            value = {
                "notifications": notifications,
                "current_time": _now(episode),
                "ended": episode.session is not None and episode.session.sim.ended,
            }
            return Outcome(result_text(value), False, value, notifications)
        action = CallToolAction(tool_name=name, tool_args=arguments, advance_time=False)
        with anyio.CancelScope(shield=True):  # a call whose client left still completes
            observation, _, _ = await episode.step(action)
    except OpenEnvError as refused:
        return Outcome(refused.message, True, None, [])
    except ValueError as bad:
        return Outcome(str(bad), True, None, [])
    notifications = observation["notifications"]
    error = observation["action_error"]
    if error is not None:
        return Outcome(error, True, None, notifications)
    value = observation["action_result"]["value"]
    return Outcome(result_text(value), False, value, notifications)


def _now(episode: Episode) -> float | None:
    session = episode.session
    return None if session is None else session.sim.clock_state().time
