"""What a checked OpenEnv or MCP token grants: a role on a session, or a fresh session's.

The front checks these tokens before it hands a connection over (`front/mcp.py`), and imports
no episode (`episode.py` reaches sessions), so the credential lives apart.
"""

from __future__ import annotations

import dataclasses

from areasync.protocol.frames import Role

__all__ = ["Credential"]


@dataclasses.dataclass(frozen=True, slots=True)
class Credential:
    """What the token in an OpenEnv URL grants: `role` on `session_id` (None: the admin's,
    a fresh session per episode). `token` is None when the token was checked by the front
    that handed the socket over (`service/connection/handoff.py`): the worker never sees it."""

    token: str | None
    role: Role
    session_id: str | None

    @property
    def fresh(self) -> bool:
        return self.session_id is None

    @property
    def key(self) -> str:
        """The token an HTTP request or an MCP call named, which its episode is kept under
        (only a WebSocket a front handed over comes without one, and keeps no episode)."""
        assert self.token is not None, "a credential a front checked keeps no HTTP episode"
        return self.token
