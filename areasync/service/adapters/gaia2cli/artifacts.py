"""A session's gaia2-cli artifacts, `events.jsonl` and `daemon_status.json`, in upstream's formats.

gaia2-cli's runner reads two files of a finished run: `events.jsonl`, one line per action taken
on the apps (its CLIs' `log_action`, the adapter's `write_aui_event`), which its converter turns
into the completed events a judge or a leaderboard submission reads; and `daemon_status.json`,
the daemon's last word (its status, turns and verdict). An areasync session has no files: its
stream is the record. This module says, with no I/O, what line of `events.jsonl` each completed
event of the stream is, and what `daemon_status.json` holds; the adapter serves both
(`GET /events.jsonl`, `GET /daemon_status.json`) and writes them beside the session's trace when
it ends (`http.py`).

Each line is upstream's minimal CLI entry, keys in its order: `t` (the event's time: upstream's
CLIs run under libfaketime, so their clock is the simulated one), `app`, `fn`, `args`, `w` (a
write), `ret` (the return value), then `event_id` for what the environment did - ENV events as
`Event-ENV-...`, the user's messages as `Event-USER-...`: the ids a Gaia2 scenario's events
carry, which upstream's daemon sets through `GAIA2_EVENT_ID` and classifies by those prefixes;
an event of a registered ARE scenario, whose id is ARE's `ENV-App.fn-<uuid>`, gets the prefix
in place of its own (`Event-ENV-App.fn-<uuid>`), so upstream's tools class it the same) - and
`sim_t`, the simulated time as upstream's daemon parses it (`%Y-%m-%d %H:%M:%S`, UTC). The
agent's own actions carry no `event_id`, as upstream's CLIs write none. Only completed ones are
logged (upstream logs a CLI call once it succeeded): failed calls, condition checks,
validations and the stop are not actions on the apps. A user message (`send_message_to_agent`)
is a read, as upstream's adapter writes it ("to match the original Gaia2 framework's
AgentEventFilter").
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any, Final

from areasync.protocol.frames import EventItem

EVENTS_FILE: Final = "events.jsonl"
STATUS_FILE: Final = "daemon_status.json"
_ACTIONS: Final = frozenset({"AGENT", "ENV", "USER"})
_TO_AGENT: Final = "send_message_to_agent"

# Whether ARE's `app.function` writes (the bridge reads it off the app's method).
Writes = Callable[[str, str], bool]


def _is_action(item: object) -> bool:
    """Whether stream item `item` is a completed action on the apps (a line of its own)."""
    if type(item) is not EventItem:
        return False
    event = item.event
    return (
        event.event_type in _ACTIONS
        and event.exception is None
        and event.app is not None
        and event.function is not None
    )


def is_agents_line(item: object) -> bool:
    """Whether `item` is a line upstream's daemon counts in `num_events` (not the ENV's)."""
    return _is_action(item) and item.event.event_type != "ENV"  # type: ignore[attr-defined]


def event_line(item: object, writes: Writes) -> dict[str, Any] | None:
    """The `events.jsonl` entry of stream item `item`, if it is a completed action."""
    if not _is_action(item):
        return None
    assert type(item) is EventItem
    event = item.event
    assert event.app is not None and event.function is not None
    write = event.function != _TO_AGENT and writes(event.app, event.function)
    entry: dict[str, Any] = {
        "t": event.time,
        "app": event.app,
        "fn": event.function,
        "args": event.args,
        "w": write,
        "ret": event.return_value,
    }
    if event.event_type != "AGENT":
        entry["event_id"] = upstream_id(event.event_type, event.event_id)
    entry["sim_t"] = sim_t(event.time)
    return entry


def upstream_id(event_type: str, event_id: str) -> str:
    """`event_id` as upstream names an event of `event_type`: `Event-<type>-...`."""
    prefix = f"Event-{event_type}-"
    if event_id.startswith(prefix):
        return event_id
    return prefix + event_id.removeprefix(f"{event_type}-")


def sim_t(seconds: float) -> str:
    """Simulated time as upstream's daemon writes and parses it (faketime's format, UTC)."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def encode_line(entry: dict[str, Any]) -> bytes:
    return (json.dumps(entry) + "\n").encode()


def encode_status(status: dict[str, Any]) -> bytes:
    """`daemon_status.json` as upstream's daemon writes it (one JSON object, a newline)."""
    return (json.dumps(status) + "\n").encode()
