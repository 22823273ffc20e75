"""Agent-chosen regular expressions, matched by a matcher that stops at the call's deadline.

Why this exists. `MessagingApp__regex_search` and `MessagingAppV2__regex_search` compile the
agent's pattern with the standard library's `re` and search text the agent wrote itself (a
conversation's title): `(a+)+$`, say, against `"a" * 29 + "!"` backtracks for minutes, and `re`
does it in C holding the interpreter lock, where nothing can interrupt it (not even the call
watchdog, `areasync.bridge.watchdog`): every session of the server stood still.

What it does. The ARE modules that compile a pattern an agent chose (`ROUTED`, in
`regex_search`; a test sweeps ARE's apps for others) see, under their name `re`, a module of
this file's making: `compile` still checks the pattern with the standard library (so a bad
pattern fails with ARE's own `re.error` message), then compiles it with the `regex` package,
whose matching takes a `timeout`; `search` and `match` on such a pattern run with the time
left to the call that runs them (`Running.deadline`), and a match that runs out raises the
call's `OverTime`: the tool fails as any other that ran past its budget. Outside a call with
a budget (ARE's own runners, the conformance suite) there is no timeout. Everything else the
modules take from `re` is the standard library's.

Where the call runs in a greenlet of `areasync.bridge.offload.bridged` (the service runs the
`ROUTED` tools so: `ToolBox.offloads`), the match itself runs in a worker thread,
releasing the interpreter lock (`concurrent=True`), while the event loop serves every other
session; the session's own lane stays held. Elsewhere (a scenario's event in a tick, a replay)
it runs in place, still bounded by the timeout.

`regex` (version 0, its default) matches what `re` matches: the pattern is the same, and the
flags are carried over by name (their numbers differ). A pattern `re` accepts and `regex`
refuses is refused with `re.error`, saying so, rather than matched without a bound.
"""

from __future__ import annotations

import functools
import importlib
import re
import time
import types
from typing import Any

import regex  # type: ignore[import-untyped]
from are.simulation.types import EventRegisterer

from areasync.bridge.offload import inside_bridge, offload
from areasync.bridge.watchdog import watchdog

__all__ = ["ROUTED", "BoundedPattern", "install"]

ROUTED: dict[str, frozenset[str]] = {
    "are.simulation.apps.messaging": frozenset({"regex_search"}),
    "are.simulation.apps.messaging_v2": frozenset({"regex_search"}),
}
"""The ARE modules that compile a regular expression an agent chose, and the functions that
do (a test sweeps ARE's apps for others)."""

_FLAGS = ("ASCII", "IGNORECASE", "LOCALE", "MULTILINE", "DOTALL", "VERBOSE", "UNICODE")


def _regex_flags(flags: int) -> int:
    """`re`'s flags as `regex`'s (ASCII and DEBUG have other numbers there)."""
    result = 0
    for name in _FLAGS:
        if flags & getattr(re, name):
            result |= getattr(regex, name)
    return result


class BoundedPattern:
    """A compiled pattern whose searches stop at the running call's deadline."""

    __slots__ = ("compiled", "pattern")

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        checked = re.compile(pattern, flags)  # ARE's error message for a bad pattern
        try:
            self.compiled = regex.compile(pattern, _regex_flags(checked.flags))
        except regex.error as exc:
            raise re.error(
                f"this pattern is not supported by the server's bounded matcher ({exc}); "
                "write it without that construct"
            ) from None
        self.pattern = pattern

    def search(self, string: Any, *args: Any) -> Any:
        return _bounded(self.compiled.search, string, *args)

    def match(self, string: Any, *args: Any) -> Any:
        return _bounded(self.compiled.match, string, *args)

    def fullmatch(self, string: Any, *args: Any) -> Any:
        return _bounded(self.compiled.fullmatch, string, *args)

    def __repr__(self) -> str:
        return f"BoundedPattern({self.pattern!r})"


def _bounded(method: Any, string: Any, *args: Any) -> Any:
    running = watchdog.current()
    if running is None:
        return method(string, *args)
    left = running.deadline - time.monotonic()
    if left <= 0:
        raise running.out_of_time()
    search = functools.partial(method, string, *args, timeout=left, concurrent=True)
    try:
        if inside_bridge() and _events_as_outside():
            # In a worker thread, the session's greenlet switched out: the event loop serves
            # every other session meanwhile (this one's lane stays held).
            return watchdog.away(offload, search)
        return watchdog.stand_aside(search)
    except TimeoutError:
        raise running.out_of_time() from None


def _events_as_outside() -> bool:
    """Whether ARE's thread-local event flags are as other code on this thread expects to
    find them (events on, no capture): only then may it run while this call is switched out."""
    flags = EventRegisterer._thread_local
    return getattr(flags, "active", True) and not getattr(flags, "capture_mode", False)


def _compile(pattern: Any, flags: int = 0) -> BoundedPattern:
    if isinstance(pattern, BoundedPattern):
        return pattern
    if isinstance(pattern, re.Pattern):
        pattern, flags = pattern.pattern, pattern.flags
    return BoundedPattern(pattern, flags)


def _search(pattern: Any, string: Any, flags: int = 0) -> Any:
    return _compile(pattern, flags).search(string)


def _match(pattern: Any, string: Any, flags: int = 0) -> Any:
    return _compile(pattern, flags).match(string)


def _fullmatch(pattern: Any, string: Any, flags: int = 0) -> Any:
    return _compile(pattern, flags).fullmatch(string)


def _bounded_re() -> types.ModuleType:
    """A module that is `re` but for compile, search, match and fullmatch."""
    module = types.ModuleType("re", "The standard `re`, matching through areasync.bridge.patterns")
    module.__dict__.update({k: v for k, v in vars(re).items() if not k.startswith("__")})
    module.__dict__.update(compile=_compile, search=_search, match=_match, fullmatch=_fullmatch)
    return module


_BOUNDED_RE = _bounded_re()


def install() -> None:
    """Route the `ROUTED` modules' regular expressions through the bounded matcher (once per
    process; idempotent)."""
    for name in ROUTED:
        module = importlib.import_module(name)
        if module.__dict__.get("re") is not _BOUNDED_RE:
            module.re = _BOUNDED_RE  # type: ignore[attr-defined]
