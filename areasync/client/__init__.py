"""Python client for areasync sessions: async (:func:`connect`) and blocking (:func:`connect_sync`).

    from areasync.client import connect

    url = "ws://127.0.0.1:8765/sessions/scenario_tutorial"
    async with connect(url, role="agent", token=T) as sim:
        tools = await sim.list_tools()
        async for note in sim.notifications():
            await sim.call_tool("AgentUserInterface__send_message_to_user", content="On it.")
            await sim.wait_for_notification(timeout=60)

Requests are matched to replies by id, failures raise the :class:`AreasyncError` subclass of the
server's error code, and a broken connection is resumed transparently (see
:mod:`areasync.client.async_client` for exactly what that guarantees).

Names are imported on first use: the sans-I/O cores (`stream`, `requests`, `handshake`,
`reconnect`) are imported without websockets or anyio, which only the connection needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from areasync.lazy import lazy_getattr

_EXPORTS = {
    "AreasyncError": "areasync.client.errors",
    "BadFrameError": "areasync.client.errors",
    "BadStateError": "areasync.client.errors",
    "CapacityError": "areasync.client.errors",
    "Client": "areasync.client.async_client",
    "Connect": "areasync.client.async_client",
    "ConnectionClosedError": "areasync.client.errors",
    "ConnectionLostError": "areasync.client.errors",
    "CreatedSession": "areasync.client.sessions",
    "ForbiddenError": "areasync.client.errors",
    "InternalError": "areasync.client.errors",
    "InterruptedControlError": "areasync.client.errors",
    "InvalidArgsError": "areasync.client.errors",
    "InvalidFieldError": "areasync.client.errors",
    "ListedSession": "areasync.client.sessions",
    "RateLimitedError": "areasync.client.errors",
    "ReplayUnavailableError": "areasync.client.errors",
    "SessionEndedError": "areasync.client.errors",
    "SessionLimitExceededError": "areasync.client.errors",
    "SessionNotFoundError": "areasync.client.errors",
    "StoppedSession": "areasync.client.sessions",
    "StreamResetError": "areasync.client.errors",
    "SyncClient": "areasync.client.sync",
    "TooLargeError": "areasync.client.errors",
    "ToolBudgetExceededError": "areasync.client.errors",
    "ToolError": "areasync.client.errors",
    "ToolFailedError": "areasync.client.errors",
    "UnauthorizedError": "areasync.client.errors",
    "UnknownToolError": "areasync.client.errors",
    "UnknownTypeError": "areasync.client.errors",
    "WAIT_TOOL": "areasync.client.async_client",
    "admin_url": "areasync.client.sessions",
    "connect": "areasync.client.async_client",
    "connect_sync": "areasync.client.sync",
    "error_class": "areasync.client.errors",
    "list_sessions": "areasync.client.sessions",
}

__all__ = [
    "WAIT_TOOL",
    "AreasyncError",
    "BadFrameError",
    "BadStateError",
    "CapacityError",
    "Client",
    "Connect",
    "ConnectionClosedError",
    "ConnectionLostError",
    "CreatedSession",
    "ForbiddenError",
    "InternalError",
    "InterruptedControlError",
    "InvalidArgsError",
    "InvalidFieldError",
    "ListedSession",
    "RateLimitedError",
    "ReplayUnavailableError",
    "SessionEndedError",
    "SessionLimitExceededError",
    "SessionNotFoundError",
    "StoppedSession",
    "StreamResetError",
    "SyncClient",
    "TooLargeError",
    "ToolBudgetExceededError",
    "ToolError",
    "ToolFailedError",
    "UnauthorizedError",
    "UnknownToolError",
    "UnknownTypeError",
    "admin_url",
    "connect",
    "connect_sync",
    "error_class",
    "list_sessions",
]

if TYPE_CHECKING:
    from areasync.client.async_client import (
        WAIT_TOOL,
        Client,
        Connect,
        connect,
    )
    from areasync.client.errors import (
        AreasyncError,
        BadFrameError,
        BadStateError,
        CapacityError,
        ConnectionClosedError,
        ConnectionLostError,
        ForbiddenError,
        InternalError,
        InterruptedControlError,
        InvalidArgsError,
        InvalidFieldError,
        RateLimitedError,
        ReplayUnavailableError,
        SessionEndedError,
        SessionLimitExceededError,
        SessionNotFoundError,
        StreamResetError,
        TooLargeError,
        ToolBudgetExceededError,
        ToolError,
        ToolFailedError,
        UnauthorizedError,
        UnknownToolError,
        UnknownTypeError,
        error_class,
    )
    from areasync.client.sessions import (
        CreatedSession,
        ListedSession,
        StoppedSession,
        admin_url,
        list_sessions,
    )
    from areasync.client.sync import (
        SyncClient,
        connect_sync,
    )


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
