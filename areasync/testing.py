"""pytest plugin: an areasync server, clients and in-process simulations as fixtures.

Installing areasync registers this module with pytest (entry point ``pytest11``), so a test
suite needs no conftest to write::

    async def test_my_agent(areasync_server, areasync_client):
        agent = await areasync_client(role="agent")
        tools = await agent.list_tools()
        ...

Fixtures (all function-scoped):

``areasync_server``
    An in-process :class:`~areasync.service.Service` on a free loopback port, stopped after the
    test (sessions end, sockets close). Default: one session of ``scenario_tutorial`` in
    ``fast`` mode, traces in the test's ``tmp_path``. Configure it with
    ``@pytest.mark.areasync(scenario=..., mode=..., speed=..., oracle=..., **service_config)``
    (``scenario`` may be a registered id, a JSON path, JSON text, or a callable returning an
    ARE ``Scenario``, such as a Scenario subclass: ARE scenarios are single-use, so each test
    gets a fresh one; ``scenarios=[...]`` for several sessions; ``token=...`` fixes the admin
    token), by parametrizing ``areasync_server_options`` indirectly, or by overriding the
    ``areasync_server_options`` fixture. The value is an :class:`AreasyncServer`: URLs, the
    admin token, the sessions themselves (in-process: ``.simulation().env`` is the session's
    ARE environment) and ``create_session(...)`` for more.
``areasync_client``
    A factory: ``await areasync_client(role="agent", session=None, token=None, **options)``
    connects an :class:`areasync.client.Client` to the server's default session (or the one
    named) with the admin token (or the one given); every client is closed after the test.
``areasync_simulation``
    A factory for in-process simulations, no socket: ``areasync_simulation("scenario_tutorial",
    mode="manual", oracle=False)`` returns :meth:`Simulation.load`'s result.

Under pytest-asyncio the async fixtures work in both its ``auto`` and ``strict`` modes, and an
``async def`` test that uses them is marked ``asyncio`` automatically: no boilerplate.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import pytest

from areasync.client import Client, connect
from areasync.protocol import Role

if TYPE_CHECKING:
    from areasync.service import Service
    from areasync.service.sessions.session import Session
    from areasync.simulation import Simulation
    from areasync.simulation.loading import Loadable

try:
    import pytest_asyncio

    _async_fixture: Callable[..., Any] = pytest_asyncio.fixture
except ImportError:  # pragma: no cover - without pytest-asyncio, e.g. under anyio's plugin
    _async_fixture = pytest.fixture

__all__ = [
    "DEFAULT_SERVER_OPTIONS",
    "AreasyncServer",
    "ClientFactory",
    "SimulationFactory",
    "areasync_client",
    "areasync_server",
    "areasync_server_options",
    "areasync_simulation",
]

MARKER: Final = "areasync"
DEFAULT_SERVER_OPTIONS: Final[dict[str, Any]] = {
    "scenarios": ["scenario_tutorial"],
    "mode": "fast",
}
_ASYNC_FIXTURES: Final = frozenset({"areasync_server", "areasync_client"})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(scenario=None, scenarios=None, mode='fast', speed=1.0, oracle=False, "
        "**service_config): configure the areasync_server fixture for this test",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    """Mark ``async def`` tests that use the server fixtures ``asyncio`` (strict mode needs it)."""
    if not inspect.iscoroutinefunction(obj) or not collector.config.pluginmanager.has_plugin(
        "asyncio"
    ):
        return
    marks = {mark.name for mark in getattr(obj, "pytestmark", [])}
    if marks & {"asyncio", "anyio", "trio"}:
        return
    try:
        parameters = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return
    if _ASYNC_FIXTURES & parameters.keys():
        pytest.mark.asyncio(obj)


# -- the server -----------------------------------------------------------------------------


@dataclass
class AreasyncServer:
    """A running in-process server, as the ``areasync_server`` fixture yields it."""

    service: Service
    token: str  # the admin token: valid for every role of every session
    trace_dir: Path | None
    session_ids: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        assert self.service.port is not None
        return self.service.port

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:PORT``: health, API, schema, dashboard."""
        return self.service.http_url

    @property
    def session_id(self) -> str:
        """The default session: the first one created at start-up."""
        if not self.session_ids:
            raise LookupError("the server has no session: create one with create_session()")
        return self.session_ids[0]

    @property
    def url(self) -> str:
        """The WebSocket URL of the default session."""
        return self.session_url()

    def session_url(self, session_id: str | None = None) -> str:
        """``ws://127.0.0.1:PORT/sessions/{id}`` of a session (default: the default one)."""
        return self.service.ws_url(session_id or self.session_id)

    def session(self, session_id: str | None = None) -> Session:
        """The server's own session object (its ``sim`` is the running Simulation)."""
        found = self.service.registry.get(session_id or self.session_id)
        if found is None:
            raise LookupError(f"no session {session_id!r} on this server")
        return found

    def simulation(self, session_id: str | None = None) -> Simulation:
        """The Simulation a session runs (in-process: its ARE environment is ``.env``)."""
        return self.session(session_id).sim

    def tokens(self, session_id: str | None = None) -> dict[Role, str]:
        """A session's per-role tokens (the admin token works for every role too)."""
        return dict(self.session(session_id).tokens)

    def create_session(
        self,
        source: Loadable,
        *,
        mode: str | None = None,
        speed: float | None = None,
        oracle: bool | None = None,
        session_id: str | None = None,
        import_mode: str | None = None,
    ) -> str:
        """Start another session (any scenario source, including an ARE Scenario); its id.

        `import_mode` (auto, benchmark, plain) says how a JSON scenario is imported."""
        session = self.service.registry.create(
            source,
            mode=mode,
            speed=speed,
            oracle=oracle,
            session_id=session_id,
            import_mode=import_mode,
        )
        self.session_ids.append(session.id)
        return session.id


@pytest.fixture
def areasync_server_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """How ``areasync_server`` is configured: defaults < ``@pytest.mark.areasync`` < indirect
    parametrization. Override this fixture to change the defaults of a whole module."""
    options: dict[str, Any] = dict(DEFAULT_SERVER_OPTIONS)
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(
                f"@pytest.mark.{MARKER} takes keyword arguments only, e.g. "
                f"@pytest.mark.{MARKER}(scenario='scenario_tutorial', mode='manual')"
            )
        options.update(marker.kwargs)
    param = getattr(request, "param", None)
    if isinstance(param, dict):
        options.update(param)
    return options


def _service_config(options: dict[str, Any], trace_dir: Path) -> tuple[Any, list[Any]]:
    from areasync.service import ServiceConfig
    from areasync.service.gate.auth import new_token

    options = dict(options)
    scenario = options.pop("scenario", None)
    scenarios = options.pop("scenarios", None)
    if scenario is not None:
        scenarios = [scenario]
    # ARE scenarios are single-use, and a marker's arguments are built once per module: a
    # callable (a Scenario subclass, a factory function) gives each test a fresh one.
    scenarios = [
        source() if callable(source) and not isinstance(source, str | os.PathLike) else source
        for source in scenarios or []
    ]
    fields: dict[str, Any] = {
        "port": 0,
        "admin_token": options.pop("token", None) or new_token(16),
        "trace_dir": trace_dir,
        "close_timeout": 2.0,
        "shutdown_grace": 1.0,
    }
    fields.update(options)
    return ServiceConfig(**fields), scenarios


@_async_fixture
async def areasync_server(
    areasync_server_options: dict[str, Any], tmp_path: Path
) -> AsyncIterator[AreasyncServer]:
    """An in-process areasync server on a free port (see the module docstring)."""
    from areasync.service import Service

    config, scenarios = _service_config(areasync_server_options, tmp_path / "traces")
    async with Service(config, scenarios) as service:
        yield AreasyncServer(
            service=service,
            token=service.tokens.admin,
            trace_dir=config.trace_dir,
            session_ids=list(service.registry.sessions),
        )


# -- clients --------------------------------------------------------------------------------


class ClientFactory(Protocol):
    """``await areasync_client(role="agent", session=None, token=None, **connect_options)``."""

    def __call__(
        self,
        role: Role | str = Role.AGENT,
        *,
        session: str | None = None,
        token: str | None = None,
        **options: Any,
    ) -> Awaitable[Client]: ...


@_async_fixture
async def areasync_client(areasync_server: AreasyncServer) -> AsyncIterator[ClientFactory]:
    """A factory of clients connected to ``areasync_server``; all closed after the test."""
    clients: list[Client] = []

    async def factory(
        role: Role | str = Role.AGENT,
        *,
        session: str | None = None,
        token: str | None = None,
        **options: Any,
    ) -> Client:
        client = await connect(
            areasync_server.session_url(session),
            role=role,
            token=token or areasync_server.token,
            **options,
        )
        clients.append(client)
        return client

    try:
        yield factory
    finally:
        for client in reversed(clients):
            await client.aclose()


# -- in-process simulations -----------------------------------------------------------------


class SimulationFactory(Protocol):
    """``areasync_simulation(source="scenario_tutorial", **Simulation.load options)``."""

    def __call__(self, source: Any = "scenario_tutorial", /, **options: Any) -> Simulation: ...


@pytest.fixture
def areasync_simulation() -> Iterator[SimulationFactory]:
    """A factory of in-process :class:`~areasync.simulation.Simulation`s (no socket)."""
    from areasync.simulation import Simulation

    def factory(source: Any = "scenario_tutorial", /, **options: Any) -> Simulation:
        return Simulation.load(source, **options)

    yield factory
