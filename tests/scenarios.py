"""Small ARE scenarios built for tests: events at chosen times on a tiny app of our own.

`TimelineScenario(times=[...], duration=...)` schedules one ENV event per entry, each calling
`TimelineApp.mark(label)` at `start + time`; the app also has a tool that raises, for the
"app raises" path. AgentUserInterface and SystemApp are registered as in every Gaia2 scenario.

`RunawayScenario` has an app whose tools cost whatever the caller asks: a pure-Python loop and
a standard-library `re` that backtracks in C (for the call budget and the signal tests; no
ARE app offers these, which is why they are made here).

`HostileScenario` has an app whose tools do what an agent's hostile code would: read a file
and open a TCP connection the ways the session's audit hook never sees (libc's own `open(2)`
through `ctypes`; a socket), so that only the kernel's confinement of a session worker stands
between them and the file or the network.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from are.simulation.apps.agent_user_interface import AgentUserInterface
from are.simulation.apps.app import App
from are.simulation.apps.system import SystemApp
from are.simulation.scenarios.scenario import Scenario
from are.simulation.tool_utils import OperationType, app_tool
from are.simulation.types import Action, Event, EventType, event_registered
from are.simulation.utils.type_utils import type_check


class TimelineApp(App):
    """Records which labels fired, in order."""

    def __init__(self, name: str | None = "TimelineApp") -> None:
        super().__init__(name)
        self.marks: list[str] = []

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.ENV)
    def fire(self, label: str) -> int:
        """The scheduled ENV events: record `label`."""
        self.marks.append(label)
        return len(self.marks)

    @type_check
    @app_tool()
    @event_registered(operation_type=OperationType.WRITE)
    def mark(self, label: str) -> int:
        """Record `label`; returns how many marks there are.

        :param label: what to record
        :returns: the number of marks so far
        """
        self.marks.append(label)
        return len(self.marks)

    @app_tool()
    @event_registered(operation_type=OperationType.READ)
    def count(self) -> int:
        """How many marks there are.

        :returns: the number of marks
        """
        return len(self.marks)

    @app_tool()
    @event_registered(operation_type=OperationType.WRITE)
    def explode(self, reason: str) -> None:
        """Always raises.

        :param reason: the message of the exception
        """
        raise RuntimeError(reason)

    def get_state(self) -> dict[str, Any]:
        return {"marks": list(self.marks)}

    def load_state(self, state_dict: dict[str, Any]) -> None:
        self.marks = list(state_dict["marks"])

    def reset(self) -> None:
        super().reset()
        self.marks = []


class TimelineScenario(Scenario):
    """One ENV event per time in `times` (seconds after the start)."""

    scenario_id: str = "areasync_test_timeline"
    start_time: float | None = 0.0
    duration: float | None = 30.0

    def __init__(self, times: list[float] | None = None, duration: float | None = 30.0) -> None:
        super().__init__()
        self.start_time = 0.0
        self.times = list(times or [])
        self.duration = duration

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        self.apps = [AgentUserInterface(), SystemApp(), TimelineApp()]

    def mark_label(self, i: int, t: float) -> str:
        """What the `i`th event, at `t`, marks (TimelineApp.fire's label)."""
        return f"t={t:g}"

    def mark_id(self, i: int) -> str:
        return f"mark-{i}"

    def build_events_flow(self) -> None:
        app = self.get_typed_app(TimelineApp)
        self.events = [
            Event(
                event_type=EventType.ENV,
                event_relative_time=float(t),
                action=Action(function=app.fire, args={"label": self.mark_label(i, t)}, app=app),
            ).with_id(self.mark_id(i))
            for i, t in enumerate(self.times)
        ]


def timeline(
    *times: float, duration: float | None = 30.0, initialize: bool = False
) -> TimelineScenario:
    scenario = TimelineScenario(list(times), duration=duration)
    if initialize:
        scenario.initialize()
    return scenario


RUNAWAY_STARTED = "runaway: started"
"""What a runaway tool prints on stdout before it runs (the signal tests wait for it)."""


class RunawayApp(TimelineApp):
    """`TimelineApp` (its `mark` keeps a note) with tools that run as long as they are asked
    to (see the module docstring)."""

    def __init__(self, name: str | None = "RunawayApp") -> None:
        super().__init__(name)

    @app_tool()
    @event_registered(operation_type=OperationType.READ)
    def spin(self, seconds: float) -> int:
        """Loop in Python for `seconds` of wall time.

        :param seconds: how long to loop
        :returns: how many times it looped
        """
        _announce()
        deadline = time.monotonic() + seconds
        turns = 0
        while time.monotonic() < deadline:
            turns += 1
        return turns

    @app_tool()
    @event_registered(operation_type=OperationType.READ)
    def backtrack(self, length: int) -> bool:
        """Match `(a|a)+$` against `"a" * length + "!"` with the standard library's `re`, which
        backtracks in C holding the interpreter lock (2 ** length steps).

        :param length: how many letters
        :returns: whether it matched (never)
        """
        _announce()
        return re.search(r"(a|a)+$", "a" * length + "!") is not None

    @app_tool()
    @event_registered(operation_type=OperationType.READ)
    def hang(self) -> bool:
        """Wait in C for what never comes (an event nobody sets), the interpreter lock released:
        the call watchdog cannot stop it, and other threads (a journal's writer) run meanwhile.

        :returns: never
        """
        _announce()
        threading.Event().wait()
        return True


def _announce() -> None:
    sys.stdout.write(RUNAWAY_STARTED + "\n")
    sys.stdout.flush()


class RunawayScenario(Scenario):
    """`RunawayApp`, and optionally two ENV events: a spin of `spin_seconds` at `spin_at`,
    then a mark at `mark_at`."""

    scenario_id: str = "areasync_test_runaway"
    start_time: float | None = 0.0
    duration: float | None = 30.0

    def __init__(
        self,
        spin_at: float | None = None,
        mark_at: float | None = None,
        spin_seconds: float = 600.0,
    ) -> None:
        super().__init__()
        self.start_time = 0.0
        self.duration = 30.0
        self.spin_at = spin_at
        self.mark_at = mark_at
        self.spin_seconds = spin_seconds

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        self.apps = [AgentUserInterface(), SystemApp(), RunawayApp()]

    def build_events_flow(self) -> None:
        app = self.get_typed_app(RunawayApp)
        planned = [
            ("spin", self.spin_at, app.spin, {"seconds": self.spin_seconds}),
            ("mark", self.mark_at, app.mark, {"label": "after the spin"}),
        ]
        self.events = [
            Event(
                event_type=EventType.ENV,
                event_relative_time=at,
                action=Action(function=function, args=args, app=app),
            ).with_id(event_id)
            for event_id, at, function, args in planned
            if at is not None
        ]


class HostileApp(App):
    """Tools that go around the audit hook (module docstring); each answers what it got, or
    `refused: <errno name>`."""

    def __init__(self, name: str | None = "HostileApp") -> None:
        super().__init__(name)

    @app_tool()
    @event_registered(operation_type=OperationType.READ)
    def read_file(self, path: str) -> str:
        """Read `path` with libc's open(2) and read(2), which raise no audit event.

        :param path: an absolute path
        :returns: `read: <its text>`, or `refused: <errno name>`
        """
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.open(os.fsencode(path), os.O_RDONLY)
        if fd < 0:
            return f"refused: {errno.errorcode[ctypes.get_errno()]}"
        try:
            return "read: " + os.read(fd, 1 << 16).decode(errors="replace")
        finally:
            os.close(fd)

    @app_tool()
    @event_registered(operation_type=OperationType.READ)
    def connect(self, port: int) -> str:
        """Open a TCP connection to `port` on the loopback address.

        :param port: the port
        :returns: `connected`, or `refused: <errno name>`
        """
        try:
            with socket.create_connection(("127.0.0.1", port)):
                return "connected"
        except OSError as exc:
            return f"refused: {errno.errorcode.get(exc.errno or 0, str(exc))}"


class HostileScenario(Scenario):
    """`HostileApp`, with no events."""

    scenario_id: str = "areasync_test_hostile"
    start_time: float | None = 0.0
    duration: float | None = 30.0

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        self.apps = [AgentUserInterface(), SystemApp(), HostileApp()]

    def build_events_flow(self) -> None:
        self.events = list[Event]()


def oversized_scenario_file(folder: Path, size: int) -> Path:
    """A Gaia2 scenario file (`tiny_email`, its oracle passes) padded with trailing whitespace
    to `size` bytes: as large as a Gaia2-sized world, written in a blink."""
    from areasync.gaia2.dataset import SPECS, scenario_json

    text = scenario_json(SPECS["tiny_email"]).encode()
    path = folder / "oversized.json"
    path.write_bytes(text + b" " * (size - len(text)))
    return path
