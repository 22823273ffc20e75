"""The tokens the tests of the front's verdicts (`front/hello.py`, `front/mcp.py`) judge by:
an admin token and one session's agent and user tokens, with no server."""

from __future__ import annotations

from areasync.service.gate.auth import Tokens

ADMIN = "the-front-admin-token"
SESSION = "s1"


def known_tokens() -> Tokens:
    """The admin token, and SESSION's `agent-token` and `user-token`."""
    tokens = Tokens(ADMIN)
    tokens.learn(SESSION, {"agent": "agent-token", "user": "user-token"})
    return tokens
