"""A blocking facade over the async client, for code that is not async (many RL loops are not).

    with connect_sync(url, role="agent", token=T) as sim:
        tools = sim.list_tools()
        sim.call_tool("EmailClientV2__send_email", recipients=[...], subject="...")
        for note in sim.notifications(): ...

The async :class:`~areasync.client.async_client.Client` runs on an event loop in a background thread
(anyio's blocking portal); every method here submits the matching coroutine to that loop and
blocks until it finishes. Threads are fine on this side of the socket: the simulation itself
stays single-threaded in the server. Each method takes an optional ``timeout`` (wall seconds)
after which it raises TimeoutError; the request is then abandoned (its reply, if any, ignored).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from areasync.client.async_client import Client, connect
from areasync.client.sessions import CreatedSession, StoppedSession
from areasync.protocol import (
    ClientFrame,
    ClockState,
    EndedItem,
    EventRecord,
    NotificationRecord,
    StreamItem,
    ToolInfo,
    Validation,
)

__all__ = ["SyncClient", "connect_sync"]

T = TypeVar("T")


def connect_sync(url: str, **options: Any) -> SyncClient:
    """Connect and return a :class:`SyncClient`; same options as :func:`~areasync.client.connect`.

    Use it as a context manager, or call :meth:`SyncClient.close` when done.
    """
    return SyncClient(url, **options)


class SyncClient:
    """The async client's API, blocking. See the module docstring."""

    def __init__(self, url: str, **options: Any) -> None:
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal("asyncio")
        self._portal = self._portal_cm.__enter__()
        try:
            self._client_cm = self._portal.wrap_async_context_manager(connect(url, **options))
            self._client: Client = self._client_cm.__enter__()
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise
        self._open = True

    @property
    def client(self) -> Client:
        """The async client underneath (its properties are safe to read from this thread)."""
        return self._client

    def close(self) -> None:
        """Close the connection and stop the background event loop."""
        if not self._open:
            return
        self._open = False
        try:
            self._client_cm.__exit__(None, None, None)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(self, fn: Callable[[], Awaitable[T]], timeout: float | None) -> T:
        async def run() -> T:
            if timeout is None:
                return await fn()
            with anyio.fail_after(timeout):
                return await fn()

        return self._portal.call(run)

    # -- state (plain reads of the async client's attributes) ----------------------------

    @property
    def session_id(self) -> str:
        return self._client.session_id

    @property
    def seq(self) -> int:
        return self._client.seq

    @property
    def now(self) -> float:
        return self._client.now

    @property
    def ended(self) -> EndedItem | None:
        return self._client.ended

    # -- requests ------------------------------------------------------------------------

    def list_tools(self, *, timeout: float | None = None) -> list[ToolInfo]:
        return self._call(self._client.list_tools, timeout)

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        /,
        *,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> Any:
        """As the async ``call_tool``. ``timeout`` is wall seconds; a tool argument that is
        itself named ``timeout`` goes in the ``arguments`` mapping."""
        return self._call(lambda: self._client.call_tool(name, arguments, **kwargs), timeout)

    def wait_for_notification(
        self, timeout: int, *, wall_timeout: float | None = None
    ) -> list[NotificationRecord]:
        """ARE's wait (``timeout`` in simulated seconds); ``wall_timeout`` bounds the wall wait."""
        return self._call(lambda: self._client.wait_for_notification(timeout), wall_timeout)

    def idle(self, *, timeout: float | None = None) -> None:
        return self._call(self._client.idle, timeout)

    def get_state(
        self, apps: list[str] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        return self._call(lambda: self._client.get_state(apps), timeout)

    def send_user_message(self, content: str, *, timeout: float | None = None) -> Any:
        return self._call(lambda: self._client.send_user_message(content), timeout)

    def ping(self, *, timeout: float | None = None) -> float:
        return self._call(self._client.ping, timeout)

    def pause(self, *, timeout: float | None = None) -> ClockState:
        return self._call(self._client.pause, timeout)

    def resume(self, *, timeout: float | None = None) -> ClockState:
        return self._call(self._client.resume, timeout)

    def jump(
        self,
        *,
        to: float | None = None,
        by: float | None = None,
        inclusive: bool = True,
        timeout: float | None = None,
    ) -> ClockState:
        return self._call(lambda: self._client.jump(to=to, by=by, inclusive=inclusive), timeout)

    def next_event(self, *, timeout: float | None = None) -> ClockState:
        return self._call(self._client.next_event, timeout)

    def tick(self, n: int = 1, *, timeout: float | None = None) -> ClockState:
        return self._call(lambda: self._client.tick(n), timeout)

    def set_speed(self, speed: float, *, timeout: float | None = None) -> ClockState:
        return self._call(lambda: self._client.set_speed(speed), timeout)

    def stop(self, *, timeout: float | None = None) -> Validation | None:
        return self._call(self._client.stop, timeout)

    def create_session(
        self,
        scenario: str | None = None,
        *,
        scenario_json: str | None = None,
        mode: str = "realtime",
        speed: float = 1.0,
        oracle: bool = False,
        import_mode: str | None = None,
        timeout: float | None = None,
    ) -> CreatedSession:
        return self._call(
            lambda: self._client.create_session(
                scenario,
                scenario_json=scenario_json,
                mode=mode,
                speed=speed,
                oracle=oracle,
                import_mode=import_mode,
            ),
            timeout,
        )

    def stop_session(self, session_id: str, *, timeout: float | None = None) -> StoppedSession:
        return self._call(lambda: self._client.stop_session(session_id), timeout)

    def request(
        self,
        make: Callable[[int], ClientFrame],
        *,
        resend: bool = False,
        timeout: float | None = None,
    ) -> Any:
        return self._call(lambda: self._client.request(make, resend=resend), timeout)

    def wait_ended(self, *, timeout: float | None = None) -> EndedItem:
        return self._call(self._client.wait_ended, timeout)

    # -- the stream ----------------------------------------------------------------------

    def stream(self, since: int | None = None) -> Iterator[StreamItem]:
        """As the async ``stream()``: blocks for each next item; ends after ``ended``."""
        return self._iterate(lambda: self._client.stream(since))

    def events(self, since: int | None = None) -> Iterator[EventRecord]:
        return self._iterate(lambda: self._client.events(since))

    def notifications(self, since: int | None = None) -> Iterator[NotificationRecord]:
        return self._iterate(lambda: self._client.notifications(since))

    def _iterate(self, make: Callable[[], Any]) -> Iterator[Any]:
        iterator = self._portal.call(_make_iterator, make)
        try:
            while True:
                try:
                    yield self._portal.call(iterator.__anext__)
                except StopAsyncIteration:
                    return
        finally:
            if self._open:
                self._portal.call(iterator.aclose)


async def _make_iterator(make: Callable[[], Any]) -> Any:
    # Built on the loop's thread: the async generator belongs to that loop.
    return make()
