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
:mod:`areasync.client.core` for exactly what that guarantees).
"""

from areasync.client.core import WAIT_TOOL, Client, Connect, connect
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
    StoppedSession,
    admin_url,
    list_sessions,
)
from areasync.client.sync import SyncClient, connect_sync

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
