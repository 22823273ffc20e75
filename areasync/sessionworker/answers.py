"""What the front knows of a session worker without importing it: its answers and its entry.

The front process imports no ARE (`tests/test_import_rules.py`): it needs a worker's answers
as plain records (`Seat`, `Banner`, `Described`) and the configuration it starts a worker with
(`worker_config`). What a worker runs, the front names through `entry.py`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from areasync.service.gate.auth import Credentials

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig

__all__ = ["Banner", "Described", "Seat", "worker_config"]


class Seat(msgspec.Struct, frozen=True):
    """A session a worker holds, as the front needs it: its id, whether it is live, and what
    opens its roles."""

    session_id: str
    live: bool
    credentials: Credentials | None


class Described(msgspec.Struct, frozen=True):
    """A session as the banner says it, in the worker's words: how it runs (`summary`:
    scenario, clock mode, import, judged...) and, while it waits for its agent, the lines
    with the command that plays its oracle."""

    summary: str
    waiting: list[str]


class Banner(msgspec.Struct, frozen=True):
    """What a worker's service says in the banner: its judge lines, and its sessions asked
    for (those it holds, live)."""

    judge: list[str]
    sessions: dict[str, Described]


def worker_config(config: ServiceConfig, state_dir: Path) -> ServiceConfig:
    """A session worker's configuration: the front's, without its admin token (the worker's
    service makes one of its own that nobody holds), with the shared `state_dir`, no port,
    no gaia2-cli adapter and no MCP port (the front's to serve)."""
    return dataclasses.replace(
        config,
        admin_token=None,
        state_dir=state_dir,
        port=0,
        gaia2_port=None,
        gaia2_ports=None,
        mcp_port=None,
    )
