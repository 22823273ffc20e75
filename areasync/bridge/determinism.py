"""A session's randomness and wall-clock reads, made a function of its seed and creation time.

A session must be a pure function of how it was created and of its inputs, so that it can be
replayed bit for bit (`areasync.simulation.replay`), in this process or another. ARE draws on
three sources that are not:

* `uuid.uuid4()` (about 40 uses: event ids, action ids, ids its apps and scenarios make). Every
  ARE module calls it as `uuid.uuid4`, so the module attribute is replaced, once per process, by
  a function that draws from the running session's own `random.Random(seed)` when a session's
  code runs, and from the operating system otherwise;
* `App.set_seed` seeds each app's rng with `hash(f"{seed}_{name}")`, which PYTHONHASHSEED salts
  per process: inside a session it uses a CRC-32 of the same string instead;
* wall-clock reads: `Scenario.start_time` defaults to `datetime.now()` and ARE's dataclasses
  default their timestamps to `time.time()`. Inside a session, ARE's own code reading
  `time.time()` (or `datetime.now()` in `are.simulation.scenarios.scenario`) gets the session's
  time: its creation time while it loads, its virtual clock once it has one.

"The running session" is the sandbox's context variable (`areasync.bridge.sandbox.audit`): it is set
whenever a session's code runs (loading, every command, every batch of engine steps), and it
follows the context, so two sessions in one process, or in two threads, each draw from their own
stream in their own order. Code outside a session, ARE's own runners included, is unaffected.

A call whose work is no part of the session's runs `outside_session`: the judge's LLM request
(litellm draws uuid4s for its own bookkeeping) is made by a live run and not by its replay,
which answers it from its records; drawing from the session's stream there would shift every
id drawn after it.

Not covered, and documented as such: default arguments ARE evaluates when it is imported
(`MessagingApp.add_message_with_time`'s `message_time`, `EmailClientApp`'s `email_time`) hold the
process's import time; a scenario that relies on them is not replayable in another process.
"""

from __future__ import annotations

import contextvars
import datetime as _datetime
import random
import secrets
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from typing import Any, TypeVar

from are.simulation.apps.app import App
from are.simulation.scenarios import scenario as _are_scenario

from areasync.bridge.sandbox import audit as _sandbox
from areasync.engine.clock import VirtualClock, to_s

__all__ = ["SessionEntropy", "install", "outside_session", "session_entropy", "stable_app_seed"]

T = TypeVar("T")

_real_uuid4 = uuid.uuid4
# What `uuid.UUID(int=..., version=4)` clears and sets: the variant (RFC 4122) and the version.
_VERSION_4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_VERSION_4_SET = (0x8000 << 48) | (4 << 76)
_new_uuid = object.__new__
_set_attribute = object.__setattr__
_real_time = time.time
_real_set_seed = App.set_seed
_installed = False
# Set while a call made for a session is no part of its state (`outside_session`).
_outside: contextvars.ContextVar[bool] = contextvars.ContextVar("areasync_outside", default=False)
_install_lock = threading.Lock()


class SessionEntropy:
    """One session's ids and time: a seeded uuid4 stream, its creation time, its clock."""

    __slots__ = ("_rng", "clock", "created_at", "seed")

    def __init__(self, seed: int, created_at: float) -> None:
        self.seed = seed
        self.created_at = created_at
        self._rng = random.Random(seed)
        # Set once the session's environment exists: from then on its code reads simulated time.
        self.clock: VirtualClock | None = None

    def uuid4(self) -> uuid.UUID:
        # `uuid.UUID(int=..., version=4)`, bit for bit, without its argument checks (a
        # session draws one per event and three per tool call).
        value = self._rng.getrandbits(128) & _VERSION_4_CLEAR | _VERSION_4_SET
        made = _new_uuid(uuid.UUID)
        _set_attribute(made, "int", value)
        _set_attribute(made, "is_safe", uuid.SafeUUID.unknown)
        return made

    def time(self) -> float:
        """What `time.time()` answers the session's ARE code: never binds the clock (a reading
        nobody logs must not change what later readings may be, see `areasync.engine.clock`)."""
        clock = self.clock
        if clock is None:
            return self.created_at
        return to_s(clock.latest_us())


def session_entropy(seed: int | None = None, created_at: float | None = None) -> SessionEntropy:
    """A session's entropy (installing the routing first): a random 63-bit seed if None, the
    wall's epoch seconds now if `created_at` is None."""
    install()
    return SessionEntropy(
        secrets.randbits(63) if seed is None else seed,
        _real_time() if created_at is None else created_at,
    )


def stable_app_seed(seed: int, name: str) -> int:
    """ARE's app seed (`hash(f"{seed}_{name}") % 2**32`) without the per-process salt."""
    return zlib.crc32(f"{seed}_{name}".encode()) % (2**32)


def outside_session(fn: Callable[[], T]) -> T:
    """`fn()` drawing ids and reading time as code outside any session does (see the module
    docstring); the session's sandbox still applies."""
    token = _outside.set(True)
    try:
        return fn()
    finally:
        _outside.reset(token)


def _entropy() -> SessionEntropy | None:
    # The sandbox first: in a thread running a garbage collection's finalizers it is None
    # without a context variable being read (see `areasync.bridge.sandbox.audit._on_gc`).
    box = _sandbox.current()
    if box is None or _outside.get():
        return None
    entropy: SessionEntropy | None = box.entropy
    return entropy


def _uuid4() -> uuid.UUID:
    # `_entropy()` written out: a session draws one per event and three per tool call.
    box = _sandbox.current()
    entropy = None if box is None or _outside.get() else box.entropy
    return _real_uuid4() if entropy is None else entropy.uuid4()


def _time() -> float:
    entropy = _entropy()
    if entropy is None:
        return _real_time()
    # Only ARE's code reads the session's time: the event loop, logging and the server's own
    # bookkeeping keep the wall clock while a session runs.
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if not caller.startswith("are."):
        return _real_time()
    return entropy.time()


def _set_seed(app: App, seed: int) -> None:
    if _entropy() is None:
        _real_set_seed(app, seed)
        return
    app.seed = stable_app_seed(seed, app.name)
    app.rng = random.Random(app.seed)


class _SessionDatetimeClass:
    """`datetime.datetime` for one ARE module: `now()` is the session's time in a session."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_datetime.datetime, name)

    def __call__(self, *args: Any, **kwargs: Any) -> _datetime.datetime:
        return _datetime.datetime(*args, **kwargs)

    @staticmethod
    def now(tz: _datetime.tzinfo | None = None) -> _datetime.datetime:
        entropy = _entropy()
        if entropy is None:
            return _datetime.datetime.now(tz)
        return _datetime.datetime.fromtimestamp(entropy.time(), tz)


class _SessionDatetimeModule:
    """The `datetime` module as one ARE module sees it (see `_SessionDatetimeClass`)."""

    datetime = _SessionDatetimeClass()

    def __getattr__(self, name: str) -> Any:
        return getattr(_datetime, name)


def install() -> None:
    """Route ARE's uuid4, app seeds and wall-clock reads through the running session (once)."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        uuid.uuid4 = _uuid4
        time.time = _time
        App.set_seed = _set_seed
        # `Scenario.start_time`'s default factory reads `datetime.datetime.now()` through the
        # module's global `datetime`.
        _are_scenario.datetime = _SessionDatetimeModule()
        _installed = True
