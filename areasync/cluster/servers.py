"""What a node's host runs: session workers behind a front (the default), or one server.

`Host` (`host.py`) is Ray's side of a node; this module is areasync's: the few calls the router
makes of a node, answered by one of two servers with the same shape (`NodeServer`):

* `FrontNode`: the front of `serve --workers N` (`front/server.py`), unchanged: a session worker
  per CPU of the node (`--workers N` per node), each confined by the kernel, supervised,
  restarted when it dies with its sessions restored from their journals, and handed each
  client's socket after the hello, so no frame passes through the host process either. Its
  front restores only what its own workers held (`adopt=False`): the router alone assigns a
  lost node's journals (`router.py`).
* `ServiceNode`: `--workers 0`, one `Service` in the host's own process, unconfined, as a node
  ran before it had workers (for debugging, and to measure against).

Both answer plain data (Ray pickles it), a refused creation as `{"error": {"code",
"message"}}`.
"""

from __future__ import annotations

import dataclasses
import os
import resource
from collections.abc import Iterable
from typing import Any, Protocol

import msgspec

from areasync.front.server import Front
from areasync.protocol.errors import ProtocolError
from areasync.protocol.frames import Role
from areasync.service import Service, ServiceConfig
from areasync.service.connection.requests import create_from_fields
from areasync.service.http.answers import AGENT_SUFFIX, source_session_of

__all__ = ["FrontNode", "NodeLoad", "NodeServer", "ServiceNode", "start_node_server"]


class NodeLoad(msgspec.Struct, frozen=True, array_like=True):
    """What a node reports of its load (`placement.Load` keeps it)."""

    live: int  # live sessions
    rss: int  # resident memory of its processes, in bytes
    workers: int  # processes its sessions run in


class NodeServer(Protocol):
    """A node's server, as its host calls it (module docstring)."""

    ws_base: str
    http_url: str
    gaia2_base: str | None

    def load(self) -> NodeLoad: ...

    def session_ids(self) -> list[str]: ...

    def identify(self, token: str) -> tuple[str, str | None] | None: ...

    async def create_session(self, request: dict[str, Any]) -> dict[str, Any]: ...

    async def live_journals(self) -> list[str]: ...

    async def restore(self, session_ids: list[str]) -> tuple[list[str], dict[str, str]]: ...

    async def sessions(self) -> dict[str, Any]: ...

    async def admin_get(self, path: str) -> tuple[int, bytes]: ...

    async def stop(self) -> int: ...


async def start_node_server(
    config: ServiceConfig, workers: int, require_confinement: bool = False
) -> NodeServer:
    """Start a node's server on `config` (its host and port the node's): `workers` session
    workers behind a front, or, for 0, one server in this process."""
    if workers == 0:
        return await ServiceNode.start(config)
    return await FrontNode.start(config, workers, require_confinement)


class FrontNode:
    """A node's session workers behind its front (module docstring)."""

    def __init__(self, front: Front) -> None:
        self.front = front
        self.ws_base = front.ws_base
        self.http_url = front.http_url
        self.gaia2_base = front.gaia2_base if front.config.gaia2_port is not None else None

    @classmethod
    async def start(
        cls, config: ServiceConfig, workers: int, require_confinement: bool
    ) -> FrontNode:
        front = Front(config, workers, require_confinement=require_confinement, adopt=False)
        await front.__aenter__()
        return cls(front)

    def load(self) -> NodeLoad:
        front = self.front
        pids = [os.getpid(), *(w.pid for w in front.pool.workers if w.pid is not None)]
        live = sum(1 for live in front.seats.live.values() if live)
        return NodeLoad(live, resident_bytes(pids), len(front.pool.workers))

    def session_ids(self) -> list[str]:
        return self.front.held()

    def identify(self, token: str) -> tuple[str, str | None] | None:
        who = self.front.tokens.identify(token)
        return None if who is None else (who[0].value, who[1])

    async def create_session(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return msgspec.to_builtins(await self.front.create_session(**request))
        except ProtocolError as exc:
            return {"error": {"code": exc.code.value, "message": exc.message}}

    async def live_journals(self) -> list[str]:
        return await self.front.live_journals()

    async def restore(self, session_ids: list[str]) -> tuple[list[str], dict[str, str]]:
        return await self.front.restore(session_ids)

    async def sessions(self) -> dict[str, Any]:
        return msgspec.to_builtins(await self.front.routes.admin_sessions())

    async def admin_get(self, path: str) -> tuple[int, bytes]:
        restarted = source_session_of(path) or source_session_of(path, AGENT_SUFFIX)
        response = await self.front.routes.passed_on(path, restarted)
        return response.status_code, bytes(response.body)

    async def stop(self) -> int:
        await self.front.__aexit__(None, None, None)
        return self.front.suspended


class ServiceNode:
    """One server in the host's process (`--workers 0`, module docstring)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.ws_base = service.registry.ws_base
        self.http_url = service.http_url
        self.gaia2_base = service.gaia2.base if service.gaia2.port is not None else None

    @classmethod
    async def start(cls, config: ServiceConfig) -> ServiceNode:
        # It restores nothing by itself: the router assigns a lost node's journals.
        service = Service(config, scenarios=(), restore_at_start=False)
        await service.__aenter__()
        return cls(service)

    def load(self) -> NodeLoad:
        return NodeLoad(len(self.service.registry.live()), resident_bytes([os.getpid()]), 1)

    def session_ids(self) -> list[str]:
        return list(self.service.registry.sessions)

    def identify(self, token: str) -> tuple[str, str | None] | None:
        who = self.service.tokens.identify(token)
        return None if who is None else (who[0].value, who[1])

    async def create_session(self, request: dict[str, Any]) -> dict[str, Any]:
        return await create_from_fields(request, self.service.registry)

    async def live_journals(self) -> list[str]:
        journals = self.service.registry.journals
        return [] if journals is None else await journals.live_ids()

    async def restore(self, session_ids: list[str]) -> tuple[list[str], dict[str, str]]:
        return await self.service.restore(session_ids)

    async def sessions(self) -> dict[str, Any]:
        return msgspec.to_builtins(self.service.http.sessions(Role.ADMIN, None))

    async def admin_get(self, path: str) -> tuple[int, bytes]:
        response = self.service.http.answer_for(path, self.service.tokens.admin)
        return response.status_code, bytes(response.body)

    async def stop(self) -> int:
        await self.service.__aexit__(None, None, None)
        return self.service.suspended


def node_config(config: ServiceConfig, ip: str) -> ServiceConfig:
    """A node's server's configuration: the cluster's, on the node's IP and a free port."""
    return dataclasses.replace(config, host=ip, port=0)


def resident_bytes(pids: Iterable[int]) -> int:
    """The resident memory of these processes now (Linux's statm; one that ended counts 0),
    else this process's peak (getrusage)."""
    total = 0
    try:
        for pid in pids:
            try:
                with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
                    total += int(statm.read().split()[1]) * resource.getpagesize()
            except FileNotFoundError:
                continue
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return total
