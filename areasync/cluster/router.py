"""`Router`: the cluster's public endpoint, its session -> node map, and node-loss recovery.

Users connect to the router; it holds no session. A WebSocket handshake for
`/sessions/<id>` is answered `307 Temporary Redirect` to the node whose host holds the
session (`routes.py`), so every frame after the handshake goes straight to that node's
areasync server: the router and Ray cost one redirect per connection, never a frame. Clients
always dial the router, so after a node loss their reconnect is redirected to wherever the
session lives now.

The map. `where` maps a session id to the node holding it. It is rebuilt at start from every
host (`Host.session_ids`), filled by `create_session` (placed on the least loaded host,
`placement.py`), and looked up from the hosts again on a miss (a session an admin created
through a node's own protocol). Misses share one round of questions (concurrent lookups wait
for the same refresh), and an id no host held is remembered for a few seconds (`misses.py`): a
flood of handshakes for made-up ids asks the hosts once per id, not once per handshake. Nothing
in it needs to survive the router: a new router rebuilds it from the hosts, and restores the
live journals no host holds.

Node loss. Every `check_interval` the router asks each host for its load. A host whose call
fails with `RayActorError` is dead: Ray says so only once the actor's node or process is gone
(the GCS marks a node dead after its health checks fail, and a dead node's workers are
killed), never for a host that is merely slow, which is only skipped that round. Its
sessions are marked restoring (their handshakes get 503 with Retry-After, which areasync's
client retries), then the router adopts orphans: the live journals in the shared directory
(`Host.live_journals`) that no surviving host holds (every host must answer, else it tries
again next round), spread over the survivors (`placement.spread`), each restored by its new
host (`Service.restore`, `service/durability/restore.py`).

Why the router decides, rather than leases in the shared directory. A session must never have
two owners appending to one journal. The router is the one place that sees every host, so
ownership is simply "the host the router assigned it to": a journal is restored only when no
live host reports it, only by the host the router picked, and a host never restores a session
it holds (`restore_sessions`). Leases on a shared directory would need clocks and renewals that
a network file system honours; the router's decision rests on Ray's liveness verdict alone. The
cost: one router (a restarted router rebuilds its map, losing nothing).

Why a shared directory is an acceptable store: a journal is an append-only file written by one
host at a time with `fsync`, and read whole by the next one; any file system every node
mounts with close-to-open consistency (NFS, a cloud file share) gives exactly that, with no
locking across machines. The admin token is the router's, given to every host.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable
from typing import Any
from urllib.parse import quote

import msgspec
from ray.exceptions import RayActorError
from websockets.asyncio.server import Server, ServerConnection, serve

from areasync.cluster.host import HostLink
from areasync.cluster.misses import Misses
from areasync.cluster.nodes import alive_nodes, start_host
from areasync.cluster.placement import Load, least_loaded, spread
from areasync.cluster.routes import Routes
from areasync.cluster.servers import NodeLoad
from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.merged import PlacedSession
from areasync.service.adapters.gaia2cli.paths import adapter_url
from areasync.service.config import ServiceConfig
from areasync.service.connection.redact import RedactingLogger
from areasync.service.durability.state_dir import read_admin_token
from areasync.service.gate.admission import Admission, connection_class
from areasync.service.gate.auth import new_token
from areasync.service.gate.screened import screened_connection
from areasync.service.starting import display_host

__all__ = ["HostLink", "Router"]

logger = logging.getLogger("areasync.cluster")


class Router:
    """The cluster's endpoint (module docstring). `config` is the router's (`host`, `port`,
    `admin_token`, `allow_*`) and every host's (`state_dir`: the shared directory);
    `workers` is each node's session workers (`host.py`)."""

    def __init__(
        self,
        config: ServiceConfig,
        *,
        workers: int | None = None,
        require_confinement: bool = False,
        check_interval: float = 0.5,
        call_timeout: float = 30.0,
        start_timeout: float = 300.0,
    ) -> None:
        if config.state_dir is None:
            raise ValueError(
                "a cluster needs --state-dir on a directory every node reaches (a shared "
                "mount): a lost node's sessions are restored from their journals there"
            )
        self.config = config
        # Each node's session workers (`host.py`): None, one per CPU of the node; 0, none
        # (its sessions in the host's own process).
        self.workers = workers
        self.require_confinement = require_confinement
        self.admin_token = config.admin_token or ""
        self.hosts: dict[str, HostLink] = {}
        self.where: dict[str, str] = {}  # session id -> node id
        # Ids no host held when last asked (`misses.py`), and how many times every host was
        # asked for its sessions (`refresh_map`).
        self.misses = Misses()
        self.map_refreshes = 0
        self._refreshing: asyncio.Task[bool] | None = None  # the refresh misses share
        self.restoring: set[str] = set()  # sessions of a lost node, not yet restored
        # Restores asked of a host and not answered yet (session id -> node id): never given
        # to another host meanwhile, even when the answer takes longer than `call_timeout`
        # (a journal's replay is as long as its session), so no journal has two writers.
        self.in_flight: dict[str, str] = {}
        self.refused: dict[str, str] = {}  # journals a host could not restore, and why
        self.lost: list[str] = []  # nodes lost, in order
        self.port: int | None = None
        self.check_interval = check_interval
        self.call_timeout = call_timeout
        self.start_timeout = start_timeout
        self.routes = Routes(self)
        self._server: Server | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._create_lock = asyncio.Lock()
        self._adopt_lock = asyncio.Lock()

    # -- addresses ---------------------------------------------------------------------------

    @property
    def http_url(self) -> str:
        return f"http://{display_host(self.config.host)}:{self.port}"

    def ws_url(self, session_id: str) -> str:
        """The session's URL through the router (what clients should dial, always)."""
        return f"ws://{display_host(self.config.host)}:{self.port}/sessions/{quote(session_id)}"

    # -- running -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen, start a host on every live node, rebuild the map, restore orphans, watch."""
        await self.listen()
        await self.add_nodes()
        await self.adopt_orphans()
        self._watcher = asyncio.create_task(self._watch(), name="areasync cluster watch")
        logger.info("areasync cluster router on %s, %d node(s)", self.http_url, len(self.hosts))

    async def listen(self) -> None:
        """Serve the router's port (no node yet: `start` adds them): its sockets counted in a
        pool of their own from accept, as an areasync server's are (`admission.py`: every
        socket here is one that never says hello), each request screened from its head
        (`screens.py`, `screened.screened_connection`), and a request not made within
        `handshake_timeout` dropped."""
        config = self.config
        assert config.state_dir is not None
        if not self.admin_token:
            kept = await asyncio.to_thread(read_admin_token, config.state_dir)
            self.admin_token = kept or new_token()
        admission = Admission(config.max_pending_hellos, config.max_connections)
        self._server = await serve(
            self._refuse_socket,
            config.host,
            config.port,
            process_request=self.routes,
            process_response=self.routes.after,
            logger=RedactingLogger(logging.getLogger("websockets.server")),  # no token in logs
            compression=None,
            open_timeout=config.handshake_timeout,
            create_connection=connection_class(admission, screened_connection(self.routes.screen)),
            backlog=1024,
        )
        self.port = int(self._server.sockets[0].getsockname()[1])
        self.routes.bound(config.host, self.port)

    async def stop(self) -> int:
        """Stop watching and listening, and every host (their sessions suspended in their
        journals, for the next start); how many sessions were suspended."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        results = await asyncio.gather(
            *(self.call(link.actor.stop.remote()) for link in self.hosts.values()),
            return_exceptions=True,
        )
        return sum(r for r in results if isinstance(r, int))

    async def _refuse_socket(self, ws: ServerConnection) -> None:
        # Never reached: `Routes` answers every handshake (307, 503 or 404) before it upgrades.
        await ws.close(1008, "connect to /sessions/<id>: the router redirects it")

    def host_config(self) -> ServiceConfig:
        """Every host's configuration: the router's, with its admin token, and its origin
        allowed (the dashboard it serves opens sockets to the nodes)."""
        origin = self.http_url
        return dataclasses.replace(
            self.config,
            admin_token=self.admin_token,
            allow_origins=(*self.config.allow_origins, origin),
        )

    async def add_nodes(self) -> list[str]:
        """Start a host on every live node that has none; the node ids that got one."""
        nodes = await asyncio.to_thread(alive_nodes)
        new = [node for node in nodes if node not in self.hosts and node not in self.lost]
        config = self.host_config()

        async def add(node_id: str) -> str | None:
            actor = start_host(node_id)
            try:
                started = actor.start.remote(config, self.workers, self.require_confinement)
                info = await self.call(started, self.start_timeout)
            except Exception:
                logger.exception("could not start a host on node %s; skipping it", node_id)
                return None
            self.hosts[node_id] = HostLink(node_id, actor, info, Load(workers=info.workers))
            logger.info("host on node %s serves %s (%s)", node_id, info.ws_base, info.loop)
            return node_id

        added = await asyncio.gather(*(add(node) for node in new))
        return [node for node in added if node is not None]

    # -- placement ---------------------------------------------------------------------------

    async def create_session(self, **request: Any) -> PlacedSession:
        """Create a session on the least loaded host (`placement.py`); `request` holds
        `create_session`'s fields. Its result's `url` is the router's; `node` says where it
        runs and `node_host` the host its node's URLs name; with --gaia2-port, `gaia2_url` is
        its node's gaia2-cli adapter (the user's token: after a node loss,
        `/api/sessions/<id>/url` gives the new one); the node's links follow as a single
        server gives them (`mcp_url` on the node's host, `gaia2_cli_url` on its loopback).
        Raises ProtocolError as `create_session` does, or when no node is up."""
        async with self._create_lock:  # one placement at a time: each sees the last one
            loads = {node: link.load for node, link in self.hosts.items()}
            try:
                node = least_loaded(loads)
            except ValueError as exc:
                raise ProtocolError(ErrorCode.CAPACITY, f"{exc}; retry later") from exc
            link = self.hosts[node]
            link.load.pending += 1
        try:
            answer = await self.call(link.actor.create_session.remote(request))
        finally:
            link.load.pending -= 1
        if "error" in answer:
            error = answer["error"]
            raise ProtocolError(ErrorCode(error["code"]), error["message"])
        link.load.live += 1
        placed = msgspec.convert(answer, PlacedSession)  # plain data from the host
        session_id = placed.session_id
        self.where[session_id] = node
        self.misses.discard(session_id)
        gaia2 = link.info.gaia2_base  # its node's adapter, the user's token (a banner's)
        return msgspec.structs.replace(
            placed,
            url=self.ws_url(session_id),
            **link.shown(),
            gaia2_url=None if gaia2 is None else adapter_url(gaia2, placed.tokens["user"]),
        )

    async def locate(self, session_id: str) -> HostLink | None:
        """The host holding `session_id`, asking every host once on a miss (a refresh under
        way serves it too); None if none does. An id every host said it does not hold asks
        nobody again for a while (`misses.py`)."""
        node = self.where.get(session_id)
        if node is None or node not in self.hosts:
            if session_id in self.misses:
                return None
            complete = await self._shared_refresh()
            node = self.where.get(session_id)
            if node is None and complete:
                self.misses.add(session_id)
        return None if node is None else self.hosts.get(node)

    async def _shared_refresh(self) -> bool:
        """`refresh_map`, or the one under way: concurrent misses ask the hosts once."""
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self.refresh_map())
        return await asyncio.shield(self._refreshing)

    async def refresh_map(self) -> bool:
        """Ask every host which sessions it holds; False if one did not answer."""
        self.map_refreshes += 1
        links = list(self.hosts.values())
        answers = await asyncio.gather(
            *(self.call(link.actor.session_ids.remote()) for link in links),
            return_exceptions=True,
        )
        complete = True
        for link, ids in zip(links, answers, strict=True):
            if isinstance(ids, BaseException):
                complete = False
                continue
            for session_id in ids:
                self.where[session_id] = link.node_id
                self.misses.discard(session_id)
        return complete

    # -- node loss ---------------------------------------------------------------------------

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.check_interval)
            try:
                await self.check()
            except Exception:
                logger.exception("the cluster check failed; it runs again")

    async def check(self) -> list[str]:
        """One round: refresh every host's load, drop the dead ones and restore their
        sessions elsewhere, start hosts on new nodes; the node ids lost this round."""
        links = list(self.hosts.values())
        answers = await asyncio.gather(
            *(self.call(link.actor.load.remote(), self.check_interval * 4) for link in links),
            return_exceptions=True,
        )
        lost = []
        for link, answer in zip(links, answers, strict=True):
            if isinstance(answer, RayActorError):
                lost.append(link.node_id)
                self._lose(link.node_id)
            elif isinstance(answer, NodeLoad):
                link.load.live, link.load.rss = answer.live, answer.rss
                link.load.workers = answer.workers
        if lost:
            await self.add_nodes()
        if lost or self.restoring:
            await self.adopt_orphans()
        return lost

    def _lose(self, node_id: str) -> None:
        self.hosts.pop(node_id, None)
        self.lost.append(node_id)
        held = [sid for sid, node in self.where.items() if node == node_id]
        held += [sid for sid, node in self.in_flight.items() if node == node_id]
        for session_id in held:
            self.in_flight.pop(session_id, None)
        self.restoring.update(held)
        for session_id in held:
            self.where.pop(session_id, None)
        logger.warning("node %s was lost with %d session(s): %s", node_id, len(held), held)

    async def adopt_orphans(self) -> list[str]:
        """Restore, on the least loaded hosts, every live journal no host holds; the ids
        restored. Does nothing this round unless every host answers."""
        async with self._adopt_lock:
            if not self.hosts:
                return []
            first = next(iter(self.hosts.values()))
            # The journals first, then the holders: a session created meanwhile is in its
            # host's registry before its journal exists, so it is never taken for an orphan.
            on_disk = set(await self.call(first.actor.live_journals.remote()))
            if not await self.refresh_map():
                return []
            for session_id in set(self.in_flight) & set(self.where):
                del self.in_flight[session_id]  # its host holds it now
            # A journal its host could not restore is not tried again every round.
            orphans = on_disk - set(self.where) - set(self.in_flight) - set(self.refused)
            self.restoring &= orphans | set(self.in_flight)  # the others ended, or are held
            if not orphans:
                return []
            loads = {node: dataclasses.replace(link.load) for node, link in self.hosts.items()}
            plan = spread(orphans, loads)
            results = await asyncio.gather(
                *(self._restore_on(node, ids) for node, ids in plan.items())
            )
            return [sid for restored in results for sid in restored]

    async def _restore_on(self, node_id: str, session_ids: list[str]) -> list[str]:
        link = self.hosts[node_id]
        self.in_flight.update(dict.fromkeys(session_ids, node_id))
        # Still in flight if this wait gives up: the host goes on restoring them.
        restored, refused = await self.call(link.actor.restore.remote(session_ids))
        for session_id in session_ids:
            self.in_flight.pop(session_id, None)
        for session_id in restored:
            self.where[session_id] = node_id
        link.load.live += len(restored)
        self.refused.update(refused)
        self.restoring.difference_update(session_ids)
        logger.info("node %s restored %s; refused %s", node_id, restored, sorted(refused))
        return list(restored)

    # -- calls -------------------------------------------------------------------------------

    async def call(self, ref: Any, limit: float | None = None) -> Any:
        """Await a host call's result, bounded (`call_timeout` unless given)."""
        future: Awaitable[Any] = asyncio.wrap_future(ref.future())
        return await asyncio.wait_for(future, self.call_timeout if limit is None else limit)
