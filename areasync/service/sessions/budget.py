"""What one session may take of the server over its life: its bounds, what it has used of
them, and the error that refuses a request past one.

Every token of a session may be held by hostile code, and what a session keeps grows with what
its clients send: its records (`sim.records`, which restarts and forks replay), its stream
(`sim.log`, kept whole for replay), its journal (read whole at every start). So each session
has three bounds over its life, `ServiceConfig` fields and `areasync serve` options:

- input (`max_session_input_bytes`): the bytes of its inputs (`sim.inputs`, encoded: tool
  names and arguments, user messages, controls), as JSON;
- journal (`max_session_journal_bytes`): the bytes of its journal's records
  (`SessionJournal.bytes`), with `--state-dir`;
- memory (`max_session_memory_bytes`): what it holds that grows with use, its records and its
  stream items, weighed as their JSON text plus `VALUE_BYTES` per value in it (`weight`). An
  estimate that costs one encoding, not the Python heap itself: a long string costs about its
  length either way, but many short values hold many times their encoded bytes, which the
  per-value charge brings close (docs/topics/security.md gives the ratios measured). The snapshots a
  session keeps for forks have their own bound (`SnapshotPolicy`).

And one per request (`max_call_bytes`): the frame of one `call_tool` or `send_user_message`.

How they hold. A request that adds to its session (`roles.MUTATING`; `stop` aside, which ends
it) is checked at the gate (`ConnectionCore`) against what it will add, estimated from its
frame's bytes (twice over for memory: its record and its event each hold its arguments): past
a bound it is refused with `session_limit_exceeded` (a call or message above
`max_call_bytes` with `too_large`), nothing runs and the session goes on. What a session makes
on its own can still take it past a bound: a tool's result (a small call, a large answer), the
records of realtime ticks, the lease an agent takes at each attach. That is no request to
refuse, so a session found past a bound when it logs a record is stopped (`Session`'s watch),
its `ended.reason` naming the bound, the amount and the option.

Measuring costs one JSON encoding of each record and stream item, once, at the next check (a
request at the gate, a record logged, a listing): nothing on the path that makes items.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import msgspec

from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.frames import CallTool, ClientFrame, SendUserMessage, Stop, frame_tag
from areasync.protocol.sessions import BoundUse

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig
    from areasync.simulation import Simulation
    from areasync.simulation.input_records import InputRecord

# The frames that carry what an agent or user writes: each above `max_call_bytes` is refused.
CALLS: frozenset[type[Any]] = frozenset({CallTool, SendUserMessage})

# What a value costs the Python heap beyond its text, about: an object's header (a str, an
# int), a list's slot or a dict's entry. Charged per `,`, `[` and `{` of its JSON text (an
# overestimate where text holds them: prose costs about twice its length).
VALUE_BYTES = 56

_encode = msgspec.json.Encoder().encode


def weight(value: Any) -> int:
    """What `value` is taken to hold in memory: its JSON text, plus `VALUE_BYTES` per value."""
    text = _encode(value)
    return len(text) + VALUE_BYTES * (text.count(b",") + text.count(b"[") + text.count(b"{"))


class Journaled(Protocol):
    """What the budget reads of a session's journal (`SessionJournal`)."""

    bytes: int


@dataclasses.dataclass(frozen=True, slots=True)
class Bound:
    """One of a session's bounds: what it counts, the `ServiceConfig` field that sets it."""

    what: str
    field: str
    limit: int

    @property
    def option(self) -> str:
        """The `areasync serve` option that sets it."""
        return "--" + self.field.replace("_", "-")

    def named(self) -> str:
        """The bound as an error message names it: its value, field and option."""
        return (
            f"{self.limit:,} bytes of {self.what} ({self.field}; the server's {self.option} "
            "raises it)"
        )


class SessionBudget:
    """What one session has used of its bounds (module docstring)."""

    def __init__(self, session_id: str, sim: Simulation, config: ServiceConfig) -> None:
        self.session_id = session_id
        self.sim = sim
        self.journal: Journaled | None = None  # set once the session has a journal
        self.call_limit = config.max_call_bytes
        self.input = Bound(
            "input (tool calls, user messages, controls)",
            "max_session_input_bytes",
            config.max_session_input_bytes,
        )
        self.journal_bound = Bound(
            "journal", "max_session_journal_bytes", config.max_session_journal_bytes
        )
        self.memory = Bound(
            "records and stream items held in memory",
            "max_session_memory_bytes",
            config.max_session_memory_bytes,
        )
        self.input_bytes = 0
        self.record_bytes = 0
        self.item_bytes = 0
        # How far each list has been measured.
        self._inputs = self._records = self._items = 0
        # Set when the session is found past a bound: its watch stops it then.
        self.changed = anyio.Event()
        self._check_due = False  # a check is scheduled for the end of the current stretch

    # -- measuring ---------------------------------------------------------------------------

    def on_record(self, record: InputRecord) -> None:
        """A record was logged (a `record_listeners` hook): the bounds are checked once the
        stretch that logged it is over (`_check`, called back by the event loop), and the
        session's watch is woken only if it is past one: a task switch per record was a
        sixth of a tool call's CPU. Outside an event loop (a replay run in a worker thread)
        the watch is woken to check, as before."""
        if self._check_due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.changed.set()
            return
        self._check_due = True
        loop.call_soon(self._check)

    def _check(self) -> None:
        self._check_due = False
        if self.past() is not None:
            self.changed.set()

    def measure(self) -> None:
        """Count what was logged since the last measure."""
        sim = self.sim
        inputs, records, items = sim.inputs, sim.records, sim.log.items
        for i in range(self._inputs, len(inputs)):
            self.input_bytes += len(_encode(inputs[i]))
        for i in range(self._records, len(records)):
            self.record_bytes += weight(records[i])
        for i in range(self._items, len(items)):
            self.item_bytes += weight(items[i])
        self._inputs, self._records, self._items = len(inputs), len(records), len(items)

    def used(self) -> dict[Bound, int]:
        """Each bound (the journal's only with a journal) and what the session has used of it."""
        self.measure()
        used = {self.input: self.input_bytes, self.memory: self.record_bytes + self.item_bytes}
        if self.journal is not None:
            used[self.journal_bound] = self.journal.bytes
        return used

    def describe(self) -> dict[str, BoundUse]:
        """Each bound's use and limit, by field (for `/api/sessions`)."""
        return {bound.field: BoundUse(n, bound.limit) for bound, n in self.used().items()}

    # -- enforcing ---------------------------------------------------------------------------

    def refusal(self, frame: ClientFrame, size: int) -> ProtocolError | None:
        """Why the request `frame` (`size` bytes as received) must be refused, or None."""
        kind = type(frame)
        if kind is Stop:
            return None  # ending the session is always allowed: it frees what it holds
        tag = frame_tag(frame)
        if kind in CALLS and size > self.call_limit:
            return ProtocolError(
                ErrorCode.TOO_LARGE,
                f"this `{tag}` is {size:,} bytes, above the server's {self.call_limit:,}-byte "
                "limit for one tool call or user message (max_call_bytes; the server's "
                "--max-call-bytes raises it); nothing was run: send less",
            )
        for bound, used in self.used().items():
            adds = 2 * size if bound is self.memory else size
            if used + adds > bound.limit:
                return ProtocolError(
                    ErrorCode.SESSION_LIMIT_EXCEEDED,
                    f"session {self.session_id!r} has used {used:,} of its {bound.named()}; "
                    f"this {size:,}-byte `{tag}` would take it past that bound: nothing was run, "
                    "and the session goes on (its stream can be read; `stop` ends it)",
                )
        return None

    def past(self) -> str | None:
        """Why the session is past one of its bounds (what it made on its own took it there:
        it must stop), or None."""
        for bound, used in self.used().items():
            if used > bound.limit:
                return (
                    f"it reached {used:,} bytes, past its bound of {bound.named()}: what it made "
                    "on its own (a tool's results, ticks, leases) took it there"
                )
        return None
