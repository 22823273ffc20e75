"""An asyncio event loop on a thread of its own, for work that must not wait on the caller's.

The bench driver's event loop runs ARE's benchmark code as greenlets, which hold it for as
long as they compute; the worker pool must meanwhile see a worker die and restart it, and a
Ray host must keep serving its sessions while it runs a bench run. Each runs its part on a
`LoopThread`: coroutines are submitted from any thread (`submit`, `call`) or awaited from
another event loop (`run`: cancelling the awaiting task cancels the coroutine on this loop).

`context`, if given, is entered on the thread around the loop, and its value kept as `value`
(the bench's handlers: ARE's pipeline patched for the virtual clock, for the thread's life).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Generic, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")
V = TypeVar("V")


class LoopThread(Generic[V]):
    """An event loop running on a daemon thread (module docstring)."""

    def __init__(
        self, name: str, context: Callable[[], AbstractContextManager[V]] | None = None
    ) -> None:
        self.value: V
        self._context = context or nullcontext
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failure: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            with self._context() as value:
                self.value = value  # type: ignore[assignment]  # nullcontext's None when no context
                self._loop = loop
                self._ready.set()
                loop.run_forever()
        except BaseException as error:  # entering the context failed: the constructor raises it
            self._failure = error
            self._ready.set()
        finally:
            loop.close()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        """Run `coroutine` on the thread's loop; its future (from any thread)."""
        if self._loop is None or self._loop.is_closed():
            coroutine.close()
            raise RuntimeError(f"the {self._thread.name} thread has stopped")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coroutine` on the thread's loop and wait for its value (from another thread)."""
        return self.submit(coroutine).result(timeout)

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await `coroutine`, run on the thread's loop, from another event loop."""
        return await asyncio.wrap_future(self.submit(coroutine))

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop (tasks still on it are left) and wait for the thread to end."""
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # already closed
                self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
