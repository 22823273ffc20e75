"""The answers a front (`serve --workers N`) and a cluster's router give of their own: their
merged ``GET /api/sessions``, the session a front or a router creates (`PlacedSession`) and
every server's ``/health``.

They exist so that the front, the router and the Python client build and read the same
Structs rather than dicts each spells its own way. A merged listing's sessions are
`sessions.ListedSession`s with the fields the merge adds (``worker``, ``node``,
``node_host``); what is here is the listing around them. Rules:

- Fields are on the wire in the order they are declared (clients read them by name).
- A front and a router list their sessions' fields as a server does; their own fields at the
  top differ (a front's ``workers``, a router's ``nodes``), so each has its Struct.
- Where these answers cross processes (a front's workers, a cluster's hosts over Ray) they
  travel as plain data and are decoded here at the edge (`msgspec.convert`).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from areasync.protocol.sessions import ListedSession, ListingAccess

__all__ = [
    "ClusterHealth",
    "ClusterListing",
    "FrontHealth",
    "FrontListing",
    "JournalHealth",
    "ListedNode",
    "ListedWorker",
    "PlacedSession",
    "ServerHealth",
]


class PlacedSession(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a front's or a router's ``create_session`` (and a front's ``fork_session``)
    answers: a server's `sessions.CreatedSession`, then where the session was placed. Its
    links come in the order they are given: ``mcp_url`` from the session's worker, then the
    front's own gaia2-cli port (`--gaia2-ports`), or why it has none."""

    session_id: str
    scenario_id: str
    import_mode: str | None
    judge: dict[str, str] | None
    url: str  # the front's (or the router's) ws://HOST:PORT/sessions/{session_id}
    epoch: str
    mode: str
    tokens: dict[str, str]  # role -> token: agent, user, observer, controller
    mcp_url: str | None = None
    gaia2_cli_url: str | None = None
    gaia2_cli_error: str | None = None
    worker: str | None = None  # the front's session worker it runs on
    node: str | None = None  # a router's: the node it runs on
    node_host: str | None = None  # the host its node's URLs name
    gaia2_url: str | None = None  # a router's: its node's gaia2-cli adapter, the user's token


class JournalHealth(msgspec.Struct):
    """A durable server's journals (`--state-dir`): sessions ended because their journal
    failed, and journals not read back."""

    failed_sessions: int
    refused_journals: int


class ServerHealth(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A server's ``/health``: ``degraded`` when a journal failed or was not restored."""

    status: Literal["ok", "degraded"]
    protocol: str
    journal: JournalHealth | None = None  # with --state-dir only


class FrontHealth(msgspec.Struct, kw_only=True):
    """A front's ``/health``: 503 ``starting`` until its start-up sessions are placed, then
    ``degraded`` while a worker is down, a session is restored or a journal is refused."""

    status: Literal["starting", "ok", "degraded"]
    protocol: str
    workers: int  # workers up
    restoring: int  # sessions being restored
    lost: int  # sessions lost with their worker, not restored
    journal: JournalHealth  # as the workers' last heartbeats said


class ClusterHealth(msgspec.Struct, kw_only=True):
    """A cluster router's ``/health``: ``degraded`` with no node, or while a session is
    restored or a journal is refused."""

    status: Literal["ok", "degraded"]
    protocol: str
    nodes: int  # nodes with a live host
    lost_nodes: int
    restoring: int


class ListedWorker(msgspec.Struct):
    """One of a front's session workers, as its listing shows it."""

    name: str
    pid: int | None  # None while it starts, or once its slot is given up
    restarts: int
    starts_s: list[float]  # seconds each of its processes took to be ready


class FrontListing(msgspec.Struct, kw_only=True):
    """A front's ``GET /api/sessions`` for the admin: every worker's sessions, each with its
    ``worker``."""

    protocol: str
    access: ListingAccess
    sessions: list[ListedSession]
    restoring: list[str]  # ids of sessions being restored after their worker was lost
    refused_journals: dict[str, str]  # journals no worker holds, by session id, and why
    workers: list[ListedWorker]


class ListedNode(msgspec.Struct):
    """One of a cluster's nodes, as its router's listing shows it."""

    node_id: str
    url: str  # its server's http:// URL
    answered: bool  # its sessions are in this listing
    live: int  # live sessions it last reported
    rss: int  # its server's resident memory, in bytes


class ClusterListing(msgspec.Struct, kw_only=True):
    """A cluster router's ``GET /api/sessions``: every node's sessions, each with its
    ``node`` and ``node_host``."""

    protocol: str
    access: ListingAccess
    sessions: list[ListedSession]
    nodes: list[ListedNode]
    restoring: list[str]
    refused_journals: dict[str, str]
