"""The admin's answers about sessions: what `create_session` and `fork_session` return, what
`stop_session` returns, what `GET /api/sessions` lists, and the admin's `GET /api/scenarios`,
`/api/sessions/<id>/agent` and `/api/sessions/<id>/source`.

One definition for both ends: the server builds these Structs and the Python client decodes
them with the same ones, so the two cannot drift. Rules:

- Fields are on the wire in the order they are declared here (clients read them by name).
- A field that is null when it has no value is always on the wire (it has no default here); a
  session's links (the addresses an adapter's own port gives it) and the admin's refused
  journals are on the wire only when there are some (their Structs are `omit_defaults`, and
  they default to None): a client that decodes an answer without them reads None.
- A front (`serve --workers N`) and a cluster's router list sessions with `ListedSession`
  too, adding where each runs: its ``worker``, its ``node`` and ``node_host``; they are on the
  wire only from those (None here, omitted). Their own answers are in `merged.py`.
- Clients ignore fields they do not know, as they do in frames.
"""

from __future__ import annotations

from typing import Any

import msgspec

from areasync.protocol.records import ClockState, Validation

__all__ = [
    "AgentAccess",
    "BoundUse",
    "CreatedSession",
    "ListedSession",
    "ListingAccess",
    "ScenarioList",
    "SessionLinks",
    "SessionListing",
    "SessionSource",
    "StoppedSession",
]


class SessionLinks(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Where else a session is served (an adapter's port of its own), or why it is not; each
    link is None until an adapter gives it."""

    # Its gaia2-cli adapter at the root of a port of its own (`serve --gaia2-ports`), or why
    # it has none.
    gaia2_cli_url: str | None = None
    gaia2_cli_error: str | None = None
    mcp_url: str | None = None  # its MCP endpoint (`serve --mcp-port`)

    def fields(self) -> dict[str, Any]:
        """The links as keyword arguments of an answer that carries them."""
        return {
            "gaia2_cli_url": self.gaia2_cli_url,
            "gaia2_cli_error": self.gaia2_cli_error,
            "mcp_url": self.mcp_url,
        }


class CreatedSession(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What ``create_session`` (and ``fork_session``) answers: the new session, where to
    connect, a token per role."""

    session_id: str
    scenario_id: str
    import_mode: str | None  # how its JSON was imported (benchmark or plain), if it was
    judge: dict[str, str] | None  # {"model", "provider"} when Gaia2's judge scores it
    url: str  # ws://HOST:PORT/sessions/{session_id}
    epoch: str
    mode: str
    tokens: dict[str, str]  # role -> token: agent, user, observer, controller
    gaia2_cli_url: str | None = None
    gaia2_cli_error: str | None = None
    mcp_url: str | None = None


class StoppedSession(msgspec.Struct, kw_only=True):
    """What ``stop_session`` answers: the session's end state, ARE's validation, its trace."""

    session_id: str
    state: str
    validation: Validation | None = None
    trace: str | None = None  # the trace file written as it ended, if any


class BoundUse(msgspec.Struct):
    """What a session has used of one of its bounds, and the bound."""

    used: int
    limit: int


class ListedSession(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One session as ``GET /api/sessions`` lists it (no tokens: they are handed out once)."""

    id: str
    scenario_id: str
    url: str
    epoch: str
    state: str
    ended: bool
    oracle: bool
    import_mode: str | None
    judge: dict[str, str] | None
    waiting_for_agent: bool
    next_due: float | None  # simulated time of the next scheduled event or timeout
    agents_busy: int  # agents holding the fast clock now
    end_reason: str | None
    restartable: bool  # GET /api/sessions/<id>/source gives what makes it again
    clock: ClockState
    seq: int
    events: int
    connections: dict[str, int]  # role -> clients connected
    validation: Validation | None  # once the stream's `ended` went out
    trace: str | None
    trace_error: str | None
    created_at: float  # wall time, seconds since the epoch
    ended_at: float | None
    restored: bool  # restored from its journal
    durable: bool
    journal_error: str | None
    bounds: dict[str, BoundUse]  # by the option that sets the bound
    gaia2_cli_url: str | None = None
    gaia2_cli_error: str | None = None
    mcp_url: str | None = None
    worker: str | None = None  # a front's: the session worker it runs on
    node: str | None = None  # a cluster router's: the node it runs on
    node_host: str | None = None  # the host its node's URLs name

    def __getitem__(self, name: str) -> Any:
        """Field `name`, read as from the dict `list_sessions` gave before it was typed
        (``session["id"]``); KeyError for a name that is not a field."""
        if name not in self.__struct_fields__:
            raise KeyError(name)
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        """Field `name`, or `default` for a name that is not a field (as ``dict.get``)."""
        return getattr(self, name) if name in self.__struct_fields__ else default


class ListingAccess(msgspec.Struct):
    """Whose listing it is: the admin's (every session), or a session token's (its own)."""

    role: str
    session_id: str | None


class SessionListing(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``GET /api/sessions``: the sessions the token may see."""

    protocol: str
    access: ListingAccess
    sessions: list[ListedSession]
    # The admin's, with --state-dir: journals not restored, by session id, and why.
    refused_journals: dict[str, str] | None = None


class ScenarioList(msgspec.Struct, kw_only=True):
    """``GET /api/scenarios`` (admin): what ``create_session`` may name, and how large a
    scenario's JSON may be."""

    scenarios: list[str]  # the registered scenario ids
    max_scenario_bytes: int


class AgentAccess(msgspec.Struct, kw_only=True):
    """``GET /api/sessions/<id>/agent`` (admin): where the session's agent connects, with
    which token."""

    session_id: str
    url: str
    token: str


class SessionSource(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``GET /api/sessions/<id>/source`` (admin): the ``create_session`` fields that make
    session <id> again: exactly one of ``scenario`` and ``scenario_json``, its options, and
    ``import_mode`` when it was imported with one."""

    session_id: str
    scenario: str | None = None
    scenario_json: str | None = None
    mode: str
    speed: float
    oracle: bool
    import_mode: str | None = None
