"""`Front`: the one public port of `areasync serve --workers N`, its workers, their sessions.

    front = Front(config, workers=2, scenarios=["scenario_tutorial"])
    async with front:
        ...                       # clients dial front.ws_url(session_id), as a server's

What the front does, in order (`serve`):

1. **The state dir.** Session workers always journal: into `--state-dir`, or into a private
   temporary directory when none is given (removed at the end; the next front reclaims it
   if this one is killed, `privatedirs.py`), so that a worker that dies loses no session.
   The admin token is the front's: kept in the state dir as a server keeps it
   (`service/durability/state_dir.py`), never given to a worker.
2. **The port.** A websockets server with areasync's screens (`service/gate/screens.py`) and the
   pre-hello pool (`service/gate/admission.py`), whose connections keep their bytes raw after the
   upgrade (`service/connection/handoff.py`). HTTP is answered by `routes.py`.
3. **The workers.** A `WorkerPool` of session workers (`sessionworker/handlers.py`), forked
   from a fork server that preloaded ARE and areasync's service; each is started with the
   front's configuration minus the admin token. Live journals no worker holds are restored,
   spread over the workers, then the operator's scenarios are created on the least loaded.
4. **Hand-offs.** A WebSocket for `/sessions/<id>`: its first frame is read here, judged
   (`hello.py`), and the socket is sent to the session's worker with the hello, token removed
   (`handoff.send`); the front then holds no descriptor of it. gaia2-cli's ports
   (`ports.py`: a port per session; `gaia2.py`: the shared one) and the MCP port (`mcp.py`)
   hand their HTTP connections the same way, unread.
5. **Losses.** A worker whose process ends (killed, crashed, stopped by the supervisor,
   `supervisor.py`) is restarted by its pool; its sessions are restored from their journals
   on the workers up, exactly as after a crash (`service/durability/restore.py`: same ids, tokens,
   epochs and seqs). Their clients meanwhile get 4503 (retry), then resume with `since`.
6. **Shutdown** (`shutdown()`, the CLI's SIGINT/SIGTERM): the port closes, each worker is
   asked to stop (its live sessions suspended in their journals) within
   `shutdown_timeout`, and the pool then ends whatever is left, killing a worker that did not
   give way.

An admin's WebSocket is relayed instead of handed over (`admin.py`): the front carries out its
`create_session`, `stop_session` and `fork_session` on whichever worker holds the session.

Which sessions exist is the front's map (`seats.py`): what the workers answered. A session made
in a worker without the front (an OpenEnv episode) is found by asking every worker again when a
hello names an unknown id.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import msgspec
from websockets.asyncio.server import Server, ServerConnection, serve

from areasync.front import gaia2, mcp, shares
from areasync.front.admin import AdminControls, refused, relay, worker_end
from areasync.front.boot import PRELOAD
from areasync.front.heads import HeadPort, close_with
from areasync.front.hello import Verdict, judge
from areasync.front.ports import SessionPorts
from areasync.front.routes import FrontRoutes
from areasync.front.seats import Seats
from areasync.front.supervisor import Supervisor
from areasync.privatedirs import JOURNALS_PREFIX, WORKERS_PREFIX, PrivateDir
from areasync.protocol.codec import Encoding, encode_server_frame
from areasync.protocol.errors import CloseCode, ErrorCode, ProtocolError
from areasync.protocol.frames import Role, error_frame
from areasync.protocol.merged import PlacedSession
from areasync.protocol.sessions import SessionLinks
from areasync.service.adapters.gaia2cli.bare import url as bare_url
from areasync.service.adapters.openenv.paths import locate as locate_openenv
from areasync.service.config import ServiceConfig
from areasync.service.connection.handoff import (
    CLOSE_OPCODE,
    DATA_OPCODES,
    REST_BYTES,
    TEXT_OPCODE,
    BadFrame,
    DivertingConnection,
    Handoff,
    client_frame,
    detach,
    filtered_connection,
    peer_gone,
    send,
)
from areasync.service.connection.hello import Refusal
from areasync.service.connection.redact import RedactingLogger
from areasync.service.durability.state_dir import Journals, StateDirError
from areasync.service.gate import sockets
from areasync.service.gate.admission import Admission, connection_class
from areasync.service.gate.auth import Tokens
from areasync.service.gate.origin import SitePolicy
from areasync.service.gate.screened import screened_connection
from areasync.service.gate.screens import PortScreen
from areasync.service.gate.screens import Refusal as HttpRefusal
from areasync.service.http.answers import session_id_of
from areasync.service.http.headers import API_HEADERS
from areasync.service.starting import (
    ServiceError,
    display_host,
    is_file,
    listen_error,
    natural_id,
)
from areasync.sessionworker.answers import Banner, Described, Seat, worker_config
from areasync.sessionworker.busy import BUSY_DIR, read_busy
from areasync.sessionworker.confine import session_confinement, writable_dirs
from areasync.sessionworker.entry import serving
from areasync.workers.confine import probe, worker_tmp
from areasync.workers.pool import CallFailed, Worker, WorkerLost, WorkerPool

__all__ = ["PRELOAD", "Front"]

logger = logging.getLogger("areasync.front")

_BACKLOG = 1024
_RETRY = "retry in a second and resume with since"


class Front:
    """The front process (module docstring)."""

    def __init__(
        self,
        config: ServiceConfig,
        workers: int,
        scenarios: Sequence[str] = (),
        *,
        beat_interval: float = 1.0,
        beat_margin: float = 2.0,
        require_confinement: bool = False,
        adopt: bool = True,
    ) -> None:
        if workers < 1:
            raise ValueError(f"a front needs at least one session worker, got {workers}")
        unsplittable = shares.check(config, workers)
        if unsplittable is not None:
            raise ServiceError(unsplittable)
        self.config = config
        self.tokens = Tokens(config.admin_token)
        self.seats = Seats(self.tokens)
        self.pool = WorkerPool(
            workers,
            serving,
            preload=PRELOAD,
            grace_s=1.0,
            side_channel=True,
            on_lost=self._on_lost,
        )
        # Each worker's share of max_sessions, by slot name (`shares.py`).
        names = [worker.name for worker in self.pool.workers]
        self.shares = dict(zip(names, shares.split(config.max_sessions, workers), strict=True))
        self.admission = Admission(config.max_pending_hellos, config.max_connections)
        # Set once the start-up sessions are placed: /health says "starting" (503) until then.
        self.serving = False
        self.routes = FrontRoutes(self)
        self.admin = AdminControls(self)
        self.supervisor = Supervisor(
            self.pool, budget=config.tool_budget + beat_margin, interval=beat_interval
        )
        # Each session's gaia2-cli port (`--gaia2-ports`), bound here (`ports.py`).
        self.gaia2_ports = (
            None
            if config.gaia2_ports is None
            else SessionPorts(*config.gaia2_ports, self._hand_port)
        )
        self.port: int | None = None
        # The ports whose connections go where their first request says (`heads.py`): MCP's
        # (`--mcp-port`, `mcp.py`) and gaia2-cli's shared one (`--gaia2-port`, `gaia2.py`).
        heads = functools.partial(
            HeadPort,
            within=config.handshake_timeout,
            pending=config.max_pending_hellos,
            track=self._track,
        )
        self.mcp = heads("MCP port", "--mcp-port", route=self._hand_mcp)
        self.gaia2 = heads("gaia2-cli port", "--gaia2-port", route=self._hand_gaia2)
        # The shared gaia2-cli port's Host and Origin screens (`gaia2.judge`).
        self.gaia2_screen = PortScreen(lambda _head: None, max_bodies=0, max_bodies_per_token=0)
        self.state_dir: Path | None = None
        self.handed = 0  # sockets handed to workers
        self.restoring: set[str] = set()  # sessions of a lost worker, not yet restored
        self.refused: dict[str, str] = {}  # journals a worker could not restore, and why
        # Sessions a killed worker had a call under way for, with their records before it:
        # restored without that call (`sessionworker/busy.py`, `service/durability/restore.py`).
        self.abandon: dict[str, int] = {}
        self.lost: list[str] = []  # what happened to workers, in order
        self._scenarios = list(scenarios)
        # Without --state-dir, the journals' private directory; the workers' temp dirs' parent
        # (`privatedirs.py`: reclaimed by the next front if this one is killed).
        self._private: PrivateDir | None = None
        self._tmp: PrivateDir | None = None
        self._require_confinement = require_confinement
        # Whether the state dir's live journals no worker holds are this front's to restore:
        # not on a cluster's node, whose router assigns a lost node's sessions (`restore`)
        # and whose other nodes hold theirs (`cluster/router.py`); such a front restores only
        # what its own lost workers held.
        self._adopt = adopt
        self._tmp_under: Path | None = None  # the workers' temp dirs' parent (`_confine`)
        self._started: dict[str, int] = {}  # worker name -> pid whose service was started
        self._server: Server | None = None
        self._stop = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._create_lock = asyncio.Lock()
        self._adopt_lock = asyncio.Lock()
        self.suspended = 0

    # -- addresses ---------------------------------------------------------------------------

    @property
    def http_url(self) -> str:
        return f"http://{display_host(self.config.host)}:{self.port}"

    @property
    def ws_base(self) -> str:
        return f"ws://{display_host(self.config.host)}:{self.port}"

    def ws_url(self, session_id: str) -> str:
        return f"{self.ws_base}/sessions/{quote(session_id, safe='')}"

    def dashboard_url(self) -> str:
        return f"{self.http_url}/#token={quote(self.tokens.admin, safe='')}"

    # -- running -----------------------------------------------------------------------------

    async def serve(self, ready: asyncio.Future[None] | None = None) -> None:
        """Start (module docstring), serve until `shutdown()`, then shut down."""
        try:
            await self._open_state_dir()
            self._confine()
            await self._listen()
            self.pool.start()
            await self.pool.ready()
            await asyncio.gather(*(self._ensure_started(w) for w in self.pool.workers))
            restored = await self.adopt_orphans() if self._adopt else []
            for source in self._scenarios:
                if natural_id(source) in restored:
                    logger.info("session %s was restored: not starting it again", source)
                    continue
                try:
                    await self._create("open_scenario", source)
                except ProtocolError as exc:
                    raise ServiceError(exc.message) from exc
            self.supervisor.start()
            self.serving = True
            if ready is not None and not ready.done():
                ready.set_result(None)
            await self._stop.wait()
        finally:
            await self._shutdown()

    async def _open_state_dir(self) -> None:
        directory = self.config.state_dir
        if directory is None:
            self._private = PrivateDir.make(JOURNALS_PREFIX)
            directory = self._private.path
        self.state_dir = directory
        journals = Journals(worker_config(self.config, directory))
        try:
            # Kept for the next start only in a state dir that outlives this one.
            admin = await journals.open(self.config.admin_token, keep=self._private is None)
        except StateDirError as exc:
            raise ServiceError(str(exc)) from exc
        if admin is not None:
            self.tokens.admin = admin
        # Journals that do not read back: no worker will restore them (degraded, as a server).
        self.refused.update(journals.refused)

    def _confine(self) -> None:
        """Give the pool its workers' confinement (`sessionworker/confine.py`): make what
        they write (their temp dirs' parent, the journals', busy and trace directories), and
        say what the kernel applies."""
        assert self.state_dir is not None
        missing = probe().missing
        if self._require_confinement and missing:
            raise ServiceError(
                "--require-confinement: this kernel cannot confine the session workers: "
                + "; ".join(missing)
                + ". Run on Linux 6.7 or later with Landlock enabled and seccomp, or drop "
                "--require-confinement to run them less confined."
            )
        for path in writable_dirs(self.config, self.state_dir):
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ServiceError(
                    f"cannot make {path} for the session workers: {exc.strerror or exc}; "
                    "give a --state-dir and --trace-dir this user may create and write"
                ) from exc
        self._tmp = PrivateDir.make(WORKERS_PREFIX)
        self._tmp_under = self._tmp.path
        files = [Path(source) for source in self._scenarios if is_file(source)]
        self.pool.confinement = session_confinement(
            self.config,
            self.state_dir,
            self._tmp_under,
            readable=[path for path in files if path.exists()],
            required=self._require_confinement,
        )
        logger.info("session %s", probe().describe())

    async def _listen(self) -> None:
        config = self.config
        base = filtered_connection(screened_connection(self.routes.screen))
        try:
            self._server = await serve(
                self._on_connection,
                config.host,
                config.port,
                process_request=self.routes,
                process_response=self.routes.after,
                logger=RedactingLogger(logging.getLogger("websockets.server")),
                compression=None,
                max_size=2 * config.max_frame_bytes,
                ping_interval=None,  # a socket stays here only until its hello
                ping_timeout=None,
                close_timeout=config.close_timeout,
                open_timeout=config.handshake_timeout,
                create_connection=connection_class(self.admission, base),
                backlog=_BACKLOG,
            )
        except (OSError, OverflowError) as exc:
            raise ServiceError(listen_error(config.host, config.port, exc)) from exc
        self.port = int(self._server.sockets[0].getsockname()[1])
        self.routes.bound(config.host, self.port, display_host(config.host))
        logger.info("areasync front listening on %s", self.http_url)
        if config.mcp_port is not None:
            self.mcp.listen(config.host, config.mcp_port)
            logger.info("MCP endpoint listening on %s", self.mcp_base)
        if config.gaia2_port is not None:
            port = self.gaia2.listen(config.host, config.gaia2_port)
            self.gaia2_screen.site = SitePolicy.for_server(
                config.host, port, config.allow_hosts, config.allow_origins
            )
            logger.info("gaia2-cli adapter listening on %s/gaia2/", self.gaia2_base)

    @property
    def mcp_port(self) -> int | None:
        return self.mcp.port

    @property
    def mcp_base(self) -> str:
        return f"http://{display_host(self.config.host)}:{self.mcp_port}"

    @property
    def gaia2_base(self) -> str:
        """The shared gaia2-cli port's URL (`--gaia2-port`)."""
        return f"http://{display_host(self.config.host)}:{self.gaia2.port}"

    async def _hand_mcp(self, conn: socket.socket, head: bytes | HttpRefusal) -> None:
        """An MCP connection: its first head judged (`mcp.py`), then the socket to the
        session's worker, unread, or the refusal answered here."""
        verdict = head if isinstance(head, HttpRefusal) else mcp.judge(head, self.tokens)
        linger = self.config.close_timeout
        if isinstance(verdict, HttpRefusal):
            await mcp.refuse(conn, verdict, linger=linger)
            return
        worker = await self.locate(verdict.session_id)
        side = None if worker is None else worker.side
        if worker is None and verdict.session_id not in self.restoring:
            refused = HttpRefusal(404, "not_found", f"no session {verdict.session_id!r}")
            await mcp.refuse(conn, refused, linger=linger)
            return
        if worker is None or side is None or peer_gone(side):
            message = f"session {verdict.session_id!r} is being restored; {_RETRY}"
            refused = HttpRefusal(503, "capacity", message)
            await mcp.refuse(conn, refused, linger=linger, headers={"Retry-After": "1"})
            return
        await self._send_fd(worker, verdict.handoff(), conn.detach())

    def shutdown(self) -> None:
        self._stop.set()

    async def _shutdown(self) -> None:
        self.supervisor.stop()
        if self._server is not None:
            self._server.close()
        if self.gaia2_ports is not None:
            self.gaia2_ports.close()
        self.mcp.close()
        self.gaia2.close()
        config = self.config
        limit = config.shutdown_timeout + config.shutdown_grace + config.close_timeout + 1.0

        async def stop(worker: Worker) -> int:
            if worker.pid is None or self._started.get(worker.name) != worker.pid:
                return 0
            try:
                # A private journals directory goes with this run: sessions end, traces
                # written, as in one process without --state-dir.
                suspend = self._private is None
                return int(await self.pool.call(worker, "stop", suspend, budget=limit))
            except Exception as exc:  # killed past its budget, or gone: the pool ends it
                logger.warning("%s did not stop cleanly: %s", worker.name, exc)
                return 0

        results = await asyncio.gather(*(stop(w) for w in self.pool.workers))
        self.suspended = sum(results)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.pool.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), config.close_timeout + 1.0)
        for private in (self._private, self._tmp):
            if private is not None:
                private.remove()

    async def __aenter__(self) -> Front:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._runner = asyncio.create_task(self.serve(ready), name="areasync front")
        done, _ = await asyncio.wait({ready, self._runner}, return_when=asyncio.FIRST_COMPLETED)
        if self._runner in done:
            await self._runner  # it failed to start: raise why
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.shutdown()
        if self._runner is not None:
            await self._runner

    def _track(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- workers -----------------------------------------------------------------------------

    async def call(self, worker: Worker, method: str, *args: Any) -> Any:
        """`method(*args)` in `worker`, its service started first (a restarted process's)."""
        await self._ensure_started(worker)
        return await self.pool.call(worker, method, *args)

    async def _ensure_started(self, worker: Worker) -> None:
        while worker.pid is None or self._started.get(worker.name) != worker.pid:
            assert self.state_dir is not None
            index = self.pool.workers.index(worker)
            config = worker_config(
                shares.for_worker(self.config, len(self.pool.workers), index), self.state_dir
            )
            handed = self.gaia2_ports is not None
            pid = await self.pool.call(
                worker, "start", config, self.ws_base, handed, self.mcp_port, self.gaia2.port
            )
            self._started[worker.name] = pid

    async def banner_words(self) -> Banner:
        """What the workers up say of their sessions and of the judge, merged: the banner's
        words come from the services that run the sessions (`front/cli.py`). A worker that
        does not answer leaves its sessions' words out."""
        held: dict[str, list[str]] = {}
        for session_id, name in self.seats.where.items():
            held.setdefault(name, []).append(session_id)
        workers = self.up()
        answers = await asyncio.gather(
            *(self.call(worker, "banner", held.get(worker.name, [])) for worker in workers),
            return_exceptions=True,
        )
        judge: list[str] = []
        sessions: dict[str, Described] = {}
        for worker, answer in zip(workers, answers, strict=True):
            if isinstance(answer, BaseException):
                logger.warning("%s did not say its banner: %r", worker.name, answer)
                continue
            judge = judge or answer.judge
            sessions.update(answer.sessions)
        return Banner(judge, sessions)

    def worker(self, name: str) -> Worker:
        return next(w for w in self.pool.workers if w.name == name)

    def up(self) -> list[Worker]:
        """Workers with a process whose service is started."""
        return [
            w
            for w in self.pool.workers
            if w.pid is not None and self._started.get(w.name) == w.pid and w.gone is None
        ]

    def _on_lost(self, worker: Worker, pid: int, killed: bool) -> None:
        lost = self.seats.lose(worker.name)
        self._started.pop(worker.name, None)
        self.supervisor.lost(worker)
        assert self.state_dir is not None
        busy = self.state_dir / BUSY_DIR / str(pid)
        if killed:  # its loop was held: most likely by a call under way (`busy.py`)
            self.abandon.update(read_busy(busy))
        busy.unlink(missing_ok=True)
        if self._tmp_under is not None:  # its temp dir: its sessions' sandboxes, with it gone
            shutil.rmtree(worker_tmp(str(self._tmp_under), pid), ignore_errors=True)
        self.restoring.update(lost)
        self.lost.append(f"{worker.name} (pid {pid}) ended with {len(lost)} session(s)")
        logger.warning("%s (pid %d) ended; restoring its sessions %s", worker.name, pid, lost)
        self._track(self._recover())

    async def _recover(self) -> None:
        """Restore a lost worker's sessions on the workers up (its restarted process
        included, once it is)."""
        while self.restoring and not self._stop.is_set():
            if not self.up():
                await asyncio.gather(
                    *(self._ensure_started(w) for w in self.pool.workers if w.gone is None),
                    return_exceptions=True,
                )
            try:
                await self.adopt_orphans()
            except (WorkerLost, CallFailed) as exc:
                logger.warning("restoring a lost worker's sessions failed (%s); again", exc)
            if self.restoring:
                await asyncio.sleep(0.1)

    async def refresh(self) -> bool:
        """Ask every worker up which sessions it holds; False if one did not answer."""
        workers = self.up()
        answers = await asyncio.gather(
            *(self.pool.call(w, "seats") for w in workers), return_exceptions=True
        )
        complete = True
        for worker, seats in zip(workers, answers, strict=True):
            if isinstance(seats, BaseException):
                complete = False
            else:
                self.seats.seat(worker.name, seats)
                await self._seated(worker, [seat.session_id for seat in seats], new_only=True)
        return complete

    async def _seated(self, worker: Worker, session_ids: list[str], *, new_only: bool) -> None:
        """`worker` holds `session_ids`: each gets its gaia2-cli port (`--gaia2-ports`) if it
        has none, and the worker is told it (`new_only`: only for those given one now)."""
        if self.gaia2_ports is None:
            return
        given = self.gaia2_ports.bind(session_ids)
        for session_id in given if new_only else session_ids:
            port = self.gaia2_ports.port_of(session_id)
            if port is not None:
                await self.pool.call(worker, "gaia2_port", session_id, port)

    async def adopt_orphans(self) -> list[str]:
        """Restore every live journal no worker holds, spread over the workers up; the ids
        restored. Nothing this round unless every worker up answers (no journal may get two
        writers)."""
        async with self._adopt_lock:
            workers = self.up()
            if not workers:
                return []
            on_disk = set(await self.pool.call(workers[0], "live_journals"))
            if not await self.refresh():
                return []
            unheld = on_disk - set(self.seats.where) - set(self.refused)
            orphans = sorted(unheld if self._adopt else unheld & self.restoring)
            self.restoring &= set(orphans)
            if not orphans:
                return []
            plan: dict[str, list[str]] = {}
            for session_id in orphans:
                name = self.seats.least_loaded((w.name for w in workers), self.shares)
                plan.setdefault(name, []).append(session_id)
                self.seats.where[session_id] = name  # counted for the next placement
                self.seats.live[session_id] = True
            results = await asyncio.gather(
                *(self._restore_on(self.worker(name), ids) for name, ids in plan.items()),
                return_exceptions=True,
            )
            restored: list[str] = []
            for (name, ids), result in zip(plan.items(), results, strict=True):
                if isinstance(result, BaseException):
                    for session_id in ids:  # not restored there: an orphan again
                        if self.seats.where.get(session_id) == name:
                            del self.seats.where[session_id]
                    logger.warning("%s could not restore %s: %s", name, ids, result)
                    continue
                restored += result
            return restored

    async def _restore_on(self, worker: Worker, session_ids: list[str]) -> list[str]:
        abandon = {sid: self.abandon[sid] for sid in session_ids if sid in self.abandon}
        seats, refused = await self.pool.call(worker, "restore", session_ids, abandon)
        for session_id in session_ids:
            self.abandon.pop(session_id, None)
        for session_id in set(session_ids) - {seat.session_id for seat in seats}:
            self.seats.where.pop(session_id, None)  # refused: held by no worker
        self.seats.seat(worker.name, seats)
        self.refused.update(refused)
        done = [seat.session_id for seat in seats]
        await self._seated(worker, done, new_only=False)
        self.restoring.difference_update(session_ids)
        logger.info("%s restored %s; refused %s", worker.name, done, sorted(refused))
        return done

    async def restore(self, session_ids: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        """Restore these live journals' sessions on the workers up (a cluster's router
        assigns a lost node's to this one: `cluster/router.py`); (restored, {id: why not}).
        Those neither restored nor refused yet (a worker did not answer) stay `restoring`
        and are restored as a lost worker's are."""
        wanted = set(session_ids) - set(self.seats.where)
        self.restoring.update(wanted)
        restored = set(await self.adopt_orphans())
        if self.restoring & wanted:
            self._track(self._recover())
        refused = {sid: self.refused[sid] for sid in sorted(wanted) if sid in self.refused}
        return sorted(wanted & restored), refused

    def held(self) -> list[str]:
        """Every session this front's workers hold (ended ones too), and those it is
        restoring: none of them is another's to restore."""
        return sorted(set(self.seats.where) | self.restoring)

    async def live_journals(self) -> list[str]:
        """Ids of every journal in the state dir whose session has not ended (a worker
        reads them). Raises RuntimeError while no worker is up: an empty answer would say
        that none is live."""
        workers = self.up()
        if not workers:
            raise RuntimeError("no session worker is up to read the journals; ask again")
        return list(await self.pool.call(workers[0], "live_journals"))

    async def create_session(self, **request: Any) -> PlacedSession:
        """Create a session on the least loaded worker; `request` holds `create_session`'s
        fields. Raises ProtocolError as `create_session` does, or when no worker is up."""
        return await self._create("create", request)

    async def _create(self, method: str, *args: Any) -> PlacedSession:
        # One create at a time: each worker reads the ids the others gave from the journals.
        async with self._create_lock:
            workers = self.up()
            try:
                name = self.seats.least_loaded((w.name for w in workers), self.shares)
            except ValueError as exc:
                raise ProtocolError(ErrorCode.CAPACITY, f"{exc}; retry later") from exc
            return await self._made(self.worker(name), method, *args)

    async def create_on(self, worker: Worker, method: str, *args: Any) -> PlacedSession:
        """A session made on `worker` by its handler `method` (a fork, on its source's
        worker: `admin.py`), one at a time with creates. Raises ProtocolError as `create`."""
        async with self._create_lock:
            return await self._made(worker, method, *args)

    async def _made(self, worker: Worker, method: str, *args: Any) -> PlacedSession:
        answer = await self.call(worker, method, *args)
        refused(answer)
        created = msgspec.convert(answer, PlacedSession)  # plain data from the worker
        session_id = created.session_id
        self.seats.seat(worker.name, [Seat(session_id, True, dict(created.tokens))])
        await self._seated(worker, [session_id], new_only=False)
        links = SessionLinks() if self.gaia2_ports is None else self.gaia2_links(session_id)
        given = {name: link for name, link in links.fields().items() if link is not None}
        return msgspec.structs.replace(
            created, **given, url=self.ws_url(session_id), worker=worker.name
        )

    def gaia2_links(self, session_id: str) -> SessionLinks:
        """The session's `gaia2_cli_url` (`--gaia2-ports`), or why it has none."""
        port = None if self.gaia2_ports is None else self.gaia2_ports.port_of(session_id)
        if port is None:
            return SessionLinks(gaia2_cli_error="no free port in --gaia2-ports: widen the range")
        return SessionLinks(gaia2_cli_url=bare_url(port))

    async def locate(self, session_id: str) -> Worker | None:
        """The worker holding `session_id`, asking every worker again on a miss."""
        name = self.seats.held(session_id)
        if name is None and session_id not in self.restoring:
            await self.refresh()
            name = self.seats.held(session_id)
        return None if name is None else self.worker(name)

    # -- connections -------------------------------------------------------------------------

    async def _on_connection(self, ws: ServerConnection) -> None:
        assert isinstance(ws, DivertingConnection)
        path = urlsplit(ws.request.path if ws.request is not None else "/").path
        authorization = ws.request.headers.get("Authorization") if ws.request else None
        openenv = locate_openenv(path, authorization)
        if openenv is not None:
            await self._hand_openenv(ws, openenv[0])
            return
        session_id = session_id_of(path) or ""
        if ws.pipelined():
            await _refuse(ws, None, CloseCode.BAD_HELLO, "send hello after the upgrade's response")
            return
        evicted = asyncio.Event()
        self.admission.on_evict(ws, evicted.set)
        read = await self._read_hello(ws, evicted)
        if read is None:
            return
        (opcode, payload, taken) = read
        worker = await self.locate(session_id)
        # Until the start-up sessions are placed, a session may be one not placed yet: retry.
        starting = not self.serving
        known = (
            worker is not None
            or starting
            or session_id in self.refused
            or session_id in self.restoring
        )
        verdict = judge(opcode, payload, session_id, self.tokens, known)
        if isinstance(verdict, Refusal):
            frame = encode_server_frame(error_frame(verdict.error), _encoding(opcode))
            reason = f"{verdict.error.code.value}: {verdict.error.message}"
            await _refuse(ws, frame, verdict.code, reason)
            return
        if session_id in self.refused and worker is None:
            error = ProtocolError(
                ErrorCode.SESSION_ENDED,
                f"session {session_id!r} cannot resume: {self.refused[session_id]}",
            )
            frame = encode_server_frame(error_frame(error), _encoding(opcode))
            await _refuse(ws, frame, CloseCode.SESSION_NOT_FOUND, error.message)
            return
        if worker is None and starting:
            reason = f"the server is starting its sessions; {_RETRY}"
            await _refuse(ws, None, CloseCode.CAPACITY, reason)
            return
        if session_id in self.restoring or worker is None or worker.side is None:
            reason = f"session {session_id!r} is being restored on another worker; {_RETRY}"
            await _refuse(ws, None, CloseCode.CAPACITY, reason)
            return
        rest = bytes(ws.raw[taken:])
        if len(rest) > REST_BYTES:
            reason = f"more than {REST_BYTES} bytes before the welcome; wait for it"
            await _refuse(ws, None, CloseCode.TOO_LARGE, reason)
            return
        await self._hand(ws, worker, session_id, verdict, rest, path)

    async def _relay_admin(self, ws: DivertingConnection, worker: Worker, handoff: Handoff) -> None:
        """An admin's connection: the worker gets one end of a socketpair, as it would the
        socket, and the front relays (`admin.py`)."""
        if await self._worker_gone(ws, worker):
            return
        mine, theirs = socket.socketpair()
        with theirs:
            passed = await self._pass(worker, handoff, theirs.fileno())
        if not passed:
            mine.close()
            await _refuse(ws, None, CloseCode.CAPACITY, f"the session's worker went; {_RETRY}")
            return
        ws.give_back()
        self.admission.leave(ws)
        config = self.config
        upstream = await worker_end(
            mine,
            max_size=2 * config.max_frame_bytes,
            close_timeout=config.close_timeout,
            write_limit=config.write_limit,
        )
        encoding = Encoding.JSON if handoff.text else Encoding.MSGPACK
        await relay(ws, upstream, encoding, self.admin, config.max_frame_bytes)

    async def _hand_openenv(self, ws: DivertingConnection, token: str) -> None:
        """OpenEnv's `/ws` (its token checked before the upgrade, `routes.py`): no hello to
        read; the socket goes at once to the session's worker, or for the admin's token to
        the least loaded one (whose episodes then make fresh sessions there)."""
        who = self.tokens.identify(token)
        if who is None:  # revoked since the upgrade
            await _refuse(ws, None, CloseCode.UNAUTHORIZED, "the token is not valid")
            return
        role, session_id = who
        if session_id is not None:
            worker = await self.locate(session_id)
        else:
            up = self.up()
            name = self.seats.least_loaded((w.name for w in up), self.shares) if up else None
            worker = None if name is None else self.worker(name)
        if worker is None or worker.side is None:
            await _refuse(ws, None, CloseCode.CAPACITY, f"no worker holds it now; {_RETRY}")
            return
        handoff = Handoff(
            session_id=session_id or "",
            role=role,
            hello=b"",
            text=True,
            rest=bytes(ws.raw),
            path="/openenv/ws",  # without the token
            openenv=True,
        )
        await self._send_socket(ws, worker, handoff)

    async def _read_hello(
        self, ws: DivertingConnection, evicted: asyncio.Event
    ) -> tuple[int, bytes, int] | None:
        """The hello's frame (opcode, payload, bytes it took), or None once the socket was
        refused or closed."""
        config = self.config
        loop = asyncio.get_running_loop()
        deadline = loop.time() + config.hello_timeout
        extended = False  # once: its bytes had reached the front by the deadline
        skipped = 0
        while True:
            try:
                found = client_frame(memoryview(ws.raw)[skipped:])
            except BadFrame as exc:
                await _refuse(ws, None, CloseCode.BAD_HELLO, f"{exc}; send hello first")
                return None
            if found is not None:
                opcode, payload, taken = found
                if opcode in DATA_OPCODES:
                    return opcode, payload, skipped + taken
                if opcode == CLOSE_OPCODE:
                    ws.give_back()  # websockets answers the client's close
                    return None
                skipped += taken  # a ping or pong before the hello: nothing to answer
                continue
            ws.arrived.clear()
            waiting: asyncio.Future[Any] = asyncio.ensure_future(ws.arrived.wait())
            stopped: asyncio.Future[Any] = asyncio.ensure_future(evicted.wait())
            closed: asyncio.Future[Any] = asyncio.ensure_future(
                asyncio.shield(ws.connection_lost_waiter)
            )
            done, _ = await asyncio.wait(
                {waiting, stopped, closed},
                timeout=max(0.0, deadline - loop.time()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            for future in (waiting, stopped, closed):
                future.cancel()
            if closed in done:
                return None
            if stopped in done:
                reason = (
                    f"evicted: the server's {config.max_pending_hellos} places for connections "
                    "that have not said hello are taken by newer ones; reconnect and send hello "
                    "first"
                )
                await _refuse(ws, None, CloseCode.HELLO_TIMEOUT, reason)
                return None
            # The deadline passed while bytes waited on the front's own work (a held loop):
            # those it read as the deadline passed are looked at first; those still unread in
            # the kernel get one more hello_timeout (as `Connection._receive_hello`'s). A
            # client that sent nothing, or part of a frame and stalled, is closed.
            if not done and ws.arrived.is_set():
                continue
            if not done and not extended and sockets.unread(ws):
                extended = True
                deadline = loop.time() + config.hello_timeout
                continue
            if not done:
                reason = f"no hello within {config.hello_timeout:g} s; send hello first"
                await _refuse(ws, None, CloseCode.HELLO_TIMEOUT, reason)
                return None

    async def _hand(
        self,
        ws: DivertingConnection,
        worker: Worker,
        session_id: str,
        verdict: Verdict,
        rest: bytes,
        path: str,
    ) -> None:
        relayed = verdict.role is Role.ADMIN  # `admin.py`: the front reads the rest itself
        handoff = Handoff(
            session_id=session_id,
            role=verdict.role,
            hello=verdict.hello,
            text=verdict.text,
            rest=b"" if relayed else rest,
            path=path,
        )
        if relayed:
            ws.raw[:] = rest
            await self._relay_admin(ws, worker, handoff)
        else:
            await self._send_socket(ws, worker, handoff)

    async def _send_socket(self, ws: DivertingConnection, worker: Worker, handoff: Handoff) -> None:
        if await self._worker_gone(ws, worker):
            return
        fd = detach(ws)
        if fd is None:  # it has not even taken the upgrade's response in: dropped
            sockets.abort(ws)
            return
        await self._send_fd(worker, handoff, fd)

    async def _send_fd(self, worker: Worker, handoff: Handoff, fd: int) -> None:
        """Hand `fd` (closed here after) to `worker` with `handoff`."""
        assert worker.side is not None
        try:
            await self._pass(worker, handoff, fd)
        finally:
            os.close(fd)

    async def _worker_gone(self, ws: DivertingConnection, worker: Worker) -> bool:
        """Whether `worker` has ended, its pool not knowing yet (`ws` then refused, as while
        its sessions are restored)."""
        side = worker.side
        assert side is not None
        if not peer_gone(side):
            return False
        reason = f"the session's worker has ended and is being replaced; {_RETRY}"
        await _refuse(ws, None, CloseCode.CAPACITY, reason)
        return True

    async def _pass(self, worker: Worker, handoff: Handoff, fd: int) -> bool:
        """Send `handoff` with `fd` to `worker`; False if it went meanwhile."""
        assert worker.side is not None
        try:
            await send(worker.side, handoff, fd)
        except OSError as exc:  # the worker went meanwhile: the client reconnects
            logger.info("could not hand a socket to %s: %s", worker.name, exc)
            return False
        self.handed += 1
        return True

    async def _hand_gaia2(self, conn: socket.socket, head: bytes | HttpRefusal) -> None:
        """A connection on the shared gaia2-cli port: its first head judged (`gaia2.py`),
        then the socket to the session's worker, unread, for that request; or the refusal
        answered here, as the adapter answers (gaia2-cli's error shape)."""
        screen = self.gaia2_screen
        verdict = head if isinstance(head, HttpRefusal) else gaia2.judge(head, self.tokens, screen)
        if isinstance(verdict, HttpRefusal):
            await self._refuse_gaia2(conn, verdict)
            return
        session_id = verdict.session_id
        worker = await self.locate(session_id)
        if worker is None and session_id not in self.restoring:
            gone = f"no session {session_id[:64]!r} (it ended and was discarded, or never was)"
            await self._refuse_gaia2(conn, HttpRefusal(404, "not_found", gone))
            return
        handoff = Handoff(session_id=session_id, role=verdict.role, gaia2_shared=True)
        await self._hand_http(conn, worker, handoff)

    async def _hand_http(
        self, conn: socket.socket, worker: Worker | None, handoff: Handoff
    ) -> None:
        """Hand an HTTP connection of gaia2-cli's to `worker`, unread; while no worker can
        take it (its session being restored), 503 with Retry-After, and closed."""
        side = None if worker is None else worker.side
        session_id = handoff.session_id
        if worker is None or side is None or session_id in self.restoring or peer_gone(side):
            message = f"session {session_id!r} is being restored on another worker; {_RETRY}"
            retry = HttpRefusal(503, ErrorCode.CAPACITY.value, message, (("Retry-After", "1"),))
            await self._refuse_gaia2(conn, retry)
            return
        await self._send_fd(worker, handoff, conn.detach())

    async def _refuse_gaia2(self, conn: socket.socket, refused: HttpRefusal) -> None:
        """Answer `refused` in gaia2-cli's error shape, with the adapter's headers, and
        close."""
        body = {"ok": False, "error": refused.message, "code": str(refused.code)}
        headers = {**dict(API_HEADERS), **dict(refused.headers)}
        await close_with(conn, refused.status, body, headers, linger=self.config.close_timeout)

    async def _hand_port(self, session_id: str, port: int, conn: socket.socket) -> None:
        """A connection accepted on `session_id`'s gaia2-cli port: to its worker, unread
        (`ports.py`)."""
        worker = await self.locate(session_id)
        handoff = Handoff(session_id=session_id, role=Role.USER, gaia2_port=port)
        await self._hand_http(conn, worker, handoff)


def _encoding(opcode: int) -> Encoding:
    return Encoding.JSON if opcode == TEXT_OPCODE else Encoding.MSGPACK


async def _refuse(
    ws: DivertingConnection, frame: str | bytes | None, code: int, reason: str
) -> None:
    """Before a hand-off: websockets reads the socket again, the error frame (if any) goes,
    then the closing handshake with `code`."""
    ws.give_back()
    with anyio.move_on_after(ws.close_timeout or 1.0):
        try:
            if frame is not None:
                await ws.send(frame)
            await ws.close(code, reason.encode()[:123].decode(errors="ignore"))
        except Exception:  # the peer went: nothing to say to it
            return
