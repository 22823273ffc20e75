"""`Host`: one node's areasync server, run unchanged inside an async Ray actor.

The router starts one `Host` per node, pinned there (`nodes.py`). It runs `Service`
(`service/server.py`) on the actor's event loop, listening on its node's IP and a free port,
with its state dir the cluster's shared one (and gaia2-cli's adapter on `--gaia2-port`, 0: a
free port on each node): clients reach it straight from the router's 307
and speak the protocol to it as to any areasync server, so no frame ever passes through Ray.
Ray carries only the router's few calls (this class's methods): where the host listens, its
load, create a session, restore sessions, which sessions it holds.

The host restores nothing by itself at start-up (`restore_at_start=False`): the directory's
journals belong to whichever host holds them, and only the router, which sees every host,
decides who restores a lost node's sessions (`router.py` says why that is safe).

Tokens work on every host: the admin token is the router's (every host is given the same
one), and session tokens are checked against the salted hashes in each session's journal,
which any host reads.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import ray

from areasync.cluster.placement import Load
from areasync.protocol.frames import Role
from areasync.service import Service, ServiceConfig
from areasync.service.requests import create_from_fields

if TYPE_CHECKING:
    from areasync.gaia2.remote import Answer, BenchWorker

__all__ = ["Host", "HostInfo", "HostLink"]


@dataclasses.dataclass(frozen=True)
class HostInfo:
    """Where a host listens and what it runs on."""

    node_id: str
    ws_base: str  # ws://IP:PORT: a session is at {ws_base}/sessions/{id}
    http_url: str  # http://IP:PORT
    loop: str  # the event loop's class, `module.Name` (asyncio's own, not uvloop)
    gaia2_base: str | None = None  # http://IP:PORT of its gaia2-cli adapter (--gaia2-port)


@dataclasses.dataclass
class HostLink:
    """The router's handle on one node's host: its actor, where it listens, its load."""

    node_id: str
    actor: Any  # the host actor's handle
    info: HostInfo
    load: Load = dataclasses.field(default_factory=Load)

    def shown(self) -> dict[str, Any]:
        """What a session's entry on the router adds to its node's (`/api/sessions`,
        `create_session`'s result): its `node`, and `node_host`, the host its node's URLs
        name. Its node's links come as a single server gives them: `mcp_url` on that host,
        `gaia2_cli_url` on the node's loopback (the port has no credential: a runner on that
        host reaches it)."""
        return {"node": self.node_id, "node_host": urlsplit(self.info.http_url).hostname}


class Host:
    """The body of the host actor (`nodes.HostActor`); see the module docstring."""

    def __init__(self) -> None:
        self.service: Service | None = None
        self.bench: BenchWorker | None = None  # `bench_run`'s thread, from the first run

    async def start(self, config: ServiceConfig) -> HostInfo:
        """Start the node's server: `config` with this node's IP and a free port."""
        if self.service is None:
            ip = ray.util.get_node_ip_address()
            # The gaia2-cli adapter (if asked for) on the port given, or a free one (0): the
            # router's lookup gives each session's adapter URL.
            service = Service(
                dataclasses.replace(config, host=ip, port=0), scenarios=(), restore_at_start=False
            )
            await service.__aenter__()
            self.service = service
        return self.info()

    def info(self) -> HostInfo:
        service = self._service()
        loop = type(asyncio.get_running_loop())
        return HostInfo(
            node_id=ray.get_runtime_context().get_node_id(),
            ws_base=service.registry.ws_base,
            http_url=service.http_url,
            loop=f"{loop.__module__}.{loop.__name__}",
            gaia2_base=service.gaia2.base if service.gaia2.port is not None else None,
        )

    async def ping(self) -> bool:
        return True

    async def load(self) -> tuple[int, int]:
        """(live sessions, resident memory in bytes) of this host."""
        return len(self._service().registry.live()), _resident_bytes()

    async def session_ids(self) -> list[str]:
        """Every session this host holds, ended ones too (they still answer replays)."""
        return list(self._service().registry.sessions)

    async def create_session(self, request: dict[str, Any]) -> dict[str, Any]:
        """`create_session` as the admin's frame does it (`service/requests.py`); ids other
        hosts gave are read from the shared directory first, so none is given twice. A
        refusal comes back as `{"error": {"code", "message"}}` (plain data across Ray)."""
        return await create_from_fields(request, self._service().registry)

    async def live_journals(self) -> list[str]:
        """Ids of every journal in the shared directory whose session has not ended."""
        journals = self._service().registry.journals
        return [] if journals is None else await journals.live_ids()

    async def restore(self, session_ids: list[str]) -> tuple[list[str], dict[str, str]]:
        """Restore the sessions the router assigned to this host: (restored, {id: why not})."""
        return await self._service().restore(session_ids)

    async def sessions(self) -> dict[str, Any]:
        """`/api/sessions` as the admin sees it on this host."""
        return self._service().http.sessions(Role.ADMIN, None)

    async def admin_get(self, path: str) -> tuple[int, bytes]:
        """(status, JSON body) of this server's GET `path` with the admin token: the router
        passes on `/api/scenarios`, `/api/sessions/<id>/source` and `.../agent` (`routes.py`)."""
        service = self._service()
        response = service.http.answer_for(path, service.tokens.admin)
        return response.status_code, bytes(response.body)

    async def identify(self, token: str) -> tuple[str, str | None] | None:
        """(role, session id) of `token` on this host, or None."""
        who = self._service().tokens.identify(token)
        return None if who is None else (who[0].value, who[1])

    async def bench_run(
        self, item: str, config: Any, agent_config_builder: Any, agent_builder: Any
    ) -> Answer:
        """One run of `areasync bench run --ray` (`batch.py`) in this process, off the event
        loop, as `gaia2/remote.py` runs it; its outcome and files as plain data. Needs no
        server: a host started only for an evaluation runs it too."""
        if self.bench is None:
            from areasync.gaia2.remote import BenchWorker  # ARE's benchmark: only when used

            self.bench = BenchWorker()
        return await self.bench.run(item, config, agent_config_builder, agent_builder)

    async def bench_running(self) -> int:
        """How many `bench_run`s are under way here."""
        return 0 if self.bench is None else self.bench.running

    async def process_id(self) -> int:
        """The actor's process id (tests kill it as a node loss would)."""
        return os.getpid()

    async def stop(self) -> int:
        """Shut the server down (sessions suspended in their journals); how many were."""
        service = self.service
        self.service = None
        if service is None:
            return 0
        await service.__aexit__(None, None, None)
        return service.suspended

    def _service(self) -> Service:
        if self.service is None:
            raise RuntimeError("the host's server is not running: call start() first")
        return self.service


def _resident_bytes() -> int:
    """This process's resident memory now (Linux's statm), else its peak (getrusage)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
