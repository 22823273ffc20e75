"""`Host`: one node's areasync server, run inside an async Ray actor.

The router starts one `Host` per node, pinned there (`nodes.py`). It runs the node's server
(`servers.py`) on the actor's event loop, listening on its node's IP and a free port, with its
state dir the cluster's shared one (and gaia2-cli's adapter on `--gaia2-port`, 0: a free port
on each node): by default the front of `serve --workers N` with a session worker per CPU of
the node, exactly as on one machine (confined workers, restarted when they die, their
sessions restored from their journals, each client's socket handed to its session's worker
after the hello). Clients reach it straight from the router's 307 and speak the protocol to it
as to any areasync server, so no frame ever passes through Ray, nor through the host process
after the hello. Ray carries only the router's few calls (this class's methods): where the
host listens, its load, create a session, restore sessions, which sessions it holds.

The host restores nothing by itself at start-up: the directory's journals belong to whichever
host holds them, and only the router, which sees every host, decides who restores a lost
node's sessions (`router.py` says why that is safe). A lost worker's sessions are the node's
own: its front restores them on its workers, and says meanwhile that it holds them.

Tokens work on every host: the admin token is the router's (every host is given the same
one), and session tokens are checked against the salted hashes in each session's journal,
which any host reads.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import ray

from areasync.cluster.placement import Load
from areasync.cluster.servers import (
    FrontNode,
    NodeLoad,
    NodeServer,
    node_config,
    start_node_server,
)
from areasync.service import ServiceConfig
from areasync.workers.count import usable_cpus

if TYPE_CHECKING:
    from areasync.cluster.nodebench import NodeBench
    from areasync.gaia2.remote import Answer
    from areasync.gaia2.spread import Ended, Lost

__all__ = ["Host", "HostInfo", "HostLink"]


@dataclasses.dataclass(frozen=True)
class HostInfo:
    """Where a host listens and what it runs on."""

    node_id: str
    ws_base: str  # ws://IP:PORT: a session is at {ws_base}/sessions/{id}
    http_url: str  # http://IP:PORT
    loop: str  # the event loop's class, `module.Name` (asyncio's own, not uvloop)
    gaia2_base: str | None = None  # http://IP:PORT of its gaia2-cli adapter (--gaia2-port)
    workers: int = 1  # processes its sessions run in (`servers.py`)
    front: bool = False  # whether they are session workers behind a front


@dataclasses.dataclass
class HostLink:
    """The router's handle on one node's host: its actor, where it listens, its load."""

    node_id: str
    actor: Any  # the host actor's handle
    info: HostInfo
    load: Load = dataclasses.field(default_factory=Load)

    def shown(self) -> dict[str, str | None]:
        """What a session's entry on the router adds to its node's (`/api/sessions`,
        `create_session`'s result): its `node`, and `node_host`, the host its node's URLs
        name. Its node's links come as a single server gives them: `mcp_url` on that host,
        `gaia2_cli_url` on the node's loopback (the port has no credential: a runner on that
        host reaches it)."""
        return {"node": self.node_id, "node_host": urlsplit(self.info.http_url).hostname}


class Host:
    """The body of the host actor (`nodes.HostActor`); see the module docstring."""

    def __init__(self) -> None:
        self.server: NodeServer | None = None
        self.bench: NodeBench | None = None  # `bench run --ray`'s workers (`bench_start`)

    async def start(
        self, config: ServiceConfig, workers: int | None = None, require_confinement: bool = False
    ) -> HostInfo:
        """Start the node's server: `config` with this node's IP and a free port, its
        sessions in `workers` session workers (None: one per CPU this process may use on
        this node; 0: in this process, `servers.py`), confined as on one machine."""
        if self.server is None:
            ip = ray.util.get_node_ip_address()
            count = usable_cpus() if workers is None else workers
            self.server = await start_node_server(
                node_config(config, ip), count, require_confinement
            )
        return self.info()

    def info(self) -> HostInfo:
        server = self._server()
        loop = type(asyncio.get_running_loop())
        return HostInfo(
            node_id=ray.get_runtime_context().get_node_id(),
            ws_base=server.ws_base,
            http_url=server.http_url,
            loop=f"{loop.__module__}.{loop.__name__}",
            gaia2_base=server.gaia2_base,
            workers=server.load().workers,
            front=isinstance(server, FrontNode),
        )

    async def ping(self) -> bool:
        return True

    async def load(self) -> NodeLoad:
        """This node's live sessions, resident memory and session processes."""
        return self._server().load()

    async def session_ids(self) -> list[str]:
        """Every session this node holds (ended ones too: they still answer replays), and
        those it is restoring."""
        return self._server().session_ids()

    async def create_session(self, request: dict[str, Any]) -> dict[str, Any]:
        """`create_session` as the admin's frame does it (`service/connection/requests.py`), on the
        node's least loaded worker; ids other hosts gave are read from the shared directory
        first, so none is given twice. A refusal comes back as `{"error": {"code",
        "message"}}` (plain data across Ray)."""
        return await self._server().create_session(request)

    async def live_journals(self) -> list[str]:
        """Ids of every journal in the shared directory whose session has not ended."""
        return await self._server().live_journals()

    async def restore(self, session_ids: list[str]) -> tuple[list[str], dict[str, str]]:
        """Restore the sessions the router assigned to this host: (restored, {id: why not})."""
        return await self._server().restore(session_ids)

    async def sessions(self) -> dict[str, Any]:
        """`/api/sessions` as the admin sees it on this host."""
        return await self._server().sessions()

    async def admin_get(self, path: str) -> tuple[int, bytes]:
        """(status, JSON body) of this server's GET `path` with the admin token: the router
        passes on `/api/scenarios`, `/api/sessions/<id>/source` and `.../agent` (`routes.py`)."""
        return await self._server().admin_get(path)

    async def identify(self, token: str) -> tuple[str, str | None] | None:
        """(role, session id) of `token` on this host, or None."""
        return self._server().identify(token)

    async def bench_start(
        self, workers: int | None, budget_s: float | None, confined: Any, models: bool
    ) -> list[str]:
        """Start this node's bench workers for `bench run --ray` (`nodebench.py`), once:
        `workers` of them (None: one per CPU of the node), each run bounded by `budget_s`,
        each worker confined by `confined`; their names. Refused on a host running session
        workers (`nodebench.py` says why)."""
        if isinstance(self.server, FrontNode):
            raise RuntimeError(
                "this host runs session workers: bench runs go to a host of their own "
                "(`areasync bench run --ray` starts one per node)"
            )
        if self.bench is None:
            from areasync.cluster.nodebench import NodeBench  # ARE's benchmark: only when used

            count = usable_cpus() if workers is None else workers
            self.bench = NodeBench(count, budget_s, confined, models)
        return self.bench.slots()

    async def bench_run(self, slot: str, item: str, *arguments: Any) -> Answer | Lost | Ended:
        """One run of `areasync bench run --ray` (`batch.py`) on bench worker `slot`, as
        `gaia2/remote.py` runs it; its outcome and files as plain data."""
        if self.bench is None:
            raise RuntimeError("no bench workers here: call bench_start() first")
        return await self.bench.run(slot, item, *arguments)

    async def bench_runs(self) -> list[str]:
        """The `bench_run`s under way here, by name (`<scenario id>[ run <n>]`)."""
        return [] if self.bench is None else self.bench.running()

    async def bench_pids(self) -> dict[str, int | None]:
        """Each bench worker's process id (tests kill one)."""
        return {} if self.bench is None else self.bench.pids()

    async def node_id(self) -> str:
        """The id of the node this host runs on."""
        return str(ray.get_runtime_context().get_node_id())

    async def process_id(self) -> int:
        """The actor's process id (tests kill it as a node loss would)."""
        return os.getpid()

    async def worker_pids(self) -> dict[str, int | None]:
        """Each session's worker process id on this node (None while restored elsewhere);
        empty with no workers (tests read and kill them)."""
        server = self.server
        if not isinstance(server, FrontNode):
            return {}
        front = server.front
        return {sid: front.worker(name).pid for sid, name in front.seats.where.items()}

    async def stop(self) -> int:
        """Shut the server down (sessions suspended in their journals); how many were."""
        server, bench = self.server, self.bench
        self.server = self.bench = None
        if bench is not None:
            await bench.close()
        return 0 if server is None else await server.stop()

    def _server(self) -> NodeServer:
        if self.server is None:
            raise RuntimeError("the host's server is not running: call start() first")
        return self.server
