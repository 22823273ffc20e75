"""ARE's JSON event import (`Scenario.process_events`) in time linear in the number of events.

Why: ARE builds a JSON scenario's events one `add_event` at a time, in dependency order, and
before each one re-checks the whole graph built so far: it recomputes every event's turn with a
breadth-first search over all events (`build_event_id_to_turn_idx`), looks predecessors up by a
scan of the event list, walks the connected part of the graph for an end-of-turn message, scans
every hint for a duplicate. Quadratic: an uploaded scenario of a few thousand events held the
server's event loop for minutes (docs/topics/performance.md, "Imports").

What: the same events, dependencies, hints and checks, with the checks' answers kept as the graph
grows instead of recomputed. It builds every event exactly as ARE would (ARE's own
`_create_event`, in ARE's own order), then replays ARE's checks in that order against running
aggregates, raising the very exception ARE would have raised first (same type, same message):

- `validate_predecessors` is ARE's own method, given the predecessors found through an id index
  (it only looks predecessors up in the list it is given);
- the single-branch rule for `send_message_to_agent`/`send_message_to_user` ("only one branch of
  the events graph...") asks whether an end-of-turn or user message lies outside the connected
  part of the predecessors: a union-find with a count of such messages per part;
- the time rules (`validate_events_dag_message_to_user_time`) need each event's turn and its
  accumulated time within its turn (`accumulate_times_from_event`, over the turn's events in
  the order of the turn map's keys: a dependency later in that order reads 0).

  Turn values: ARE's map at any step gives the events added so far the values of the final
  graph's map. Events are added after all their dependencies and before all their successors,
  so the events not yet added never lie on a path the search takes to one already added: the
  search visits the added ones in the same order (the final search's visit order restricted to
  them) with the same values. So the turns are computed once, with ARE's own
  `build_event_id_to_turn_idx`.

  Key order is another matter: the map is a defaultdict, and a visited event reading a
  dependency the search has not visited yet inserts that dependency's key then and there. An
  event's key sits at the first of these touches: its own visit, or the visit of a successor
  met before it (just after that successor's key, in dependency-list order). Only successors
  already added touch it at a given step, so its key starts at its own visit when it is added
  and moves earlier each time a successor the search meets before it is added. A move changes
  its own accumulated time (its dependencies now after it read 0) and the times of its
  successors it now precedes, and from them whatever comes after them in the map: those are
  retimed in map order, stopping where a time does not change (an absolute time never does).
  Common graphs (fan-in, the search meeting an event before some of its dependencies) move
  keys often but retime a handful of events per move; a graph built to cascade every move
  through a whole turn costs up to that turn's size per move, which ARE pays at every step.

  Each step then reads per-turn running values: the largest time (first in map order, as
  `max` picks it), the first end-of-turn message in map order, whether every time is 0 or 1 s,
  the first event (in map order) set before its predecessors' time.

Event ids must be unique for this to hold (ARE looks events up by id; with two events of one id
it mixes their dependencies up): `vet_json` refuses a scenario that repeats one.

`tests/bridge/scenarios/test_event_import.py` checks that every scenario ARE's `process_events`
refuses is refused with the same exception, and that every one it accepts gives the same events.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from typing import Any

from are.simulation.scenarios import scenario as are_scenario
from are.simulation.scenarios.scenario_imported_from_json.benchmark_scenario import (
    BenchmarkScenarioImportedFromJson,
)
from are.simulation.scenarios.scenario_imported_from_json.scenario import (
    ScenarioImportedFromJson,
)
from are.simulation.types import AbstractEvent, EventTimeComparator, EventType, Hint, HintType

_EVENT_TYPES = (EventType.AGENT, EventType.ENV, EventType.USER, EventType.CONDITION)
_AUI_FUNCTIONS = ("send_message_to_agent", "send_message_to_user")


class _Step:
    """One `add_event` call of ARE's process_events: its arguments, then the event it made."""

    __slots__ = (
        "app_name",
        "comparator",
        "event",
        "event_id",
        "event_time",
        "event_type",
        "function_name",
        "parameters",
        "predecessor_ids",
        "relative_time",
    )

    def __init__(self, data: Any) -> None:
        # Exactly ARE's reading of an exported event (Scenario.process_events).
        self.app_name = ""
        self.function_name = ""
        self.parameters: dict[str, Any] = {}
        if data.action:
            self.app_name = data.action.app
            self.function_name = data.action.function
            self.parameters = (
                {arg.name: {"value": arg.value, "type": arg.value_type} for arg in data.action.args}
                if data.action.args
                else {}
            )
        self.predecessor_ids: list[str] = list(data.dependencies)
        self.event_type: EventType = getattr(EventType, data.event_type)
        self.event_id: str = data.event_id
        self.relative_time = data.event_relative_time
        self.event_time = data.event_time if self.relative_time is None else None
        comparator = getattr(data, "event_time_comparator", None)
        try:
            self.comparator = EventTimeComparator(comparator) if comparator else None
        except ValueError:
            are_scenario.logger.warning(f"Invalid event_time_comparator value: {comparator}")
            self.comparator = None
        self.event: AbstractEvent | None = None


class LinearEventImport:
    """Mixed into ARE's JSON scenario classes: `process_events` in linear time (see above)."""

    events: list[AbstractEvent]
    hints: list[Hint] | None
    start_time: float | None

    def process_events(self, events: list[Any]) -> None:
        # Build first, then check: a step's checks see only the events added before it, and
        # raise before the build's own exception if ARE's would have.
        steps, failure = self._build(events)
        _Checks(self).run(steps)
        if failure is not None:
            raise failure
        if len(self.events) != len(events):
            raise ValueError(
                f"An error occurred while processing the events, please check the logs "
                f"(got {len(self.events)} events, expected {len(events)} events)."
            )

    def _build(self, events: list[Any]) -> tuple[list[_Step], BaseException | None]:
        """ARE's loop without its per-event checks: ARE's dependency order (Kahn's algorithm,
        first in first out), ARE's events. Returns the steps whose checks ARE would have run,
        and the exception a step raised (building stops there)."""
        scenario: Any = self
        graph: dict[str, list[str]] = defaultdict(list)
        in_degree: dict[str, int] = defaultdict(int)
        first_by_id: dict[str, Any] = {}
        for event in events:
            in_degree[event.event_id] = in_degree.get(event.event_id, 0)
            first_by_id.setdefault(event.event_id, event)
            for dependency in event.dependencies:
                graph[dependency].append(event.event_id)
                in_degree[event.event_id] += 1
        added: dict[str, AbstractEvent] = {}
        for existing in self.events:
            added.setdefault(existing.event_id, existing)
        hinted = {hint.associated_event_id for hint in self.hints or []}
        steps: list[_Step] = []
        queue = deque(event for event in events if in_degree[event.event_id] == 0)
        while queue:
            data = queue.popleft()
            try:
                step = _Step(data)
            except Exception as exc:
                return steps, exc
            if step.event_type not in _EVENT_TYPES:
                return steps, ValueError("event_type must be one of AGENT, ENV, USER, CONDITION")
            steps.append(step)  # its checks come before its event is made
            try:
                new_event = scenario._create_event(
                    step.app_name,
                    step.function_name,
                    step.parameters,
                    step.event_type,
                    step.event_id,
                    step.relative_time,
                    step.event_time,
                    step.comparator,
                )
            except Exception as exc:
                return steps, exc
            for predecessor_id in step.predecessor_ids:
                predecessor = added.get(predecessor_id)
                assert predecessor is not None, "couldn't find predecessor"
                new_event.dependencies.append(predecessor)
                predecessor.successors.append(new_event)
            self.events.append(new_event)
            added.setdefault(new_event.event_id, new_event)
            step.event = new_event
            if step.function_name == "send_message_to_agent":
                self._hint(hinted, new_event.event_id, HintType.TASK_HINT)
            if new_event.event_type == EventType.ENV:
                self._hint(hinted, new_event.event_id, HintType.ENVIRONMENT_HINT)
            for dependent_id in graph[step.event_id]:
                in_degree[dependent_id] -= 1
                if in_degree[dependent_id] == 0:
                    queue.append(first_by_id[dependent_id])
        return steps, None

    def _hint(self, hinted: set[str], event_id: str, hint_type: HintType) -> None:
        """ARE's `_add_hint` with a set of the hinted ids rather than a scan of every hint."""
        if not self.hints:
            self.hints = []
        if event_id not in hinted:
            self.hints.append(
                Hint(hint_type=HintType(hint_type), content="", associated_event_id=event_id)
            )
            hinted.add(event_id)


class _Checks:
    """ARE's per-event checks of `add_event`, replayed in order on running aggregates."""

    def __init__(self, scenario: Any) -> None:
        self.scenario = scenario
        self.start: float = scenario.start_time or 0
        self.by_id: dict[str, AbstractEvent] = {}
        self.added: set[str] = set()
        # Union-find over the undirected event graph, with its AUI messages counted per part.
        self.parent: dict[str, str] = {}
        self.aui_in: dict[str, int] = {}
        self.aui_total = 0
        # The final graph's turns (ARE's own search): the same values at every step.
        self.turn: dict[str, int] = scenario.build_event_id_to_turn_idx()
        self.visit = _visit_order(scenario.events)
        # Each added event's key position in ARE's turn map at the current step (see above).
        self.position: dict[str, tuple[int, int]] = {}
        self.time: dict[str, float] = {}
        self.members: dict[int, int] = defaultdict(int)
        self.not_zero_or_one: dict[int, int] = defaultdict(int)
        # Per turn: (-time, position, id, time) of its events, stale entries skipped when read.
        self.by_time: dict[int, list[tuple[float, tuple[int, int], str, float]]] = defaultdict(list)
        self.ends_of_turn: dict[int, set[str]] = defaultdict(set)
        self.too_early: dict[int, dict[str, ValueError]] = defaultdict(dict)

    def run(self, steps: list[_Step]) -> None:
        for step in steps:
            self._check(step)
            if step.event is not None:
                self._add(step.event)

    # -- ARE's three checks ------------------------------------------------------------------

    def _check(self, step: _Step) -> None:
        predecessors = [self.by_id[i] for i in step.predecessor_ids if i in self.by_id]
        self.scenario.validate_predecessors(
            step.predecessor_ids, step.function_name, step.event_type, predecessors
        )
        self._single_branch(step)
        self._message_to_user_time(step)

    def _single_branch(self, step: _Step) -> None:
        if not are_scenario.SPECIAL_RULE_FOR_SEND_MESSAGE_EVENTS:
            return
        if step.function_name not in _AUI_FUNCTIONS:
            return
        roots = {self._find(i) for i in step.predecessor_ids if i in self.added}
        inside = sum(self.aui_in[root] for root in roots)
        if self.aui_total - inside > 0:
            raise ValueError(
                "Only one branch of the events graph should contain send_message_to_agent or "
                "send_message_to_user events. Found multiple branches with send_message_to_agent "
                "or send_message_to_user events."
            )

    def _message_to_user_time(self, step: _Step) -> None:
        if not are_scenario.EVENT_TIME_VALIDATION_REQUIRED:
            return
        predecessor_ids = step.predecessor_ids
        if not predecessor_ids:
            return
        predecessor_turns = [self.turn[i] for i in predecessor_ids]
        if not predecessor_turns:
            raise ValueError("No valid predecessor turns found.")
        if len(set(predecessor_turns)) != 1:
            raise ValueError("Predecessor events do not belong to the same turn.")
        turn = predecessor_turns[0]
        if self.members[turn] and not self.not_zero_or_one[turn]:
            return  # every time in the turn is 0 or 1 s: ARE skips the time rules
        too_early = self.too_early[turn]
        if too_early:  # ARE's accumulation stops at the first one in turn-map order
            raise too_early[min(too_early, key=self.position.__getitem__)]
        times = self.time
        latest_predecessor = max(times.get(i, 0) for i in predecessor_ids)
        relative, absolute = step.relative_time, step.event_time
        if step.function_name == "send_message_to_user":
            latest = self._latest(turn)
            if relative:
                if latest_predecessor + relative < latest:
                    raise ValueError(
                        f"send_message_to_user event's time ({latest_predecessor + relative}) "
                        f"should be the maximum of the turn ({latest})."
                    )
            elif absolute and absolute < latest:
                raise ValueError(
                    f"send_message_to_user event's time ({absolute}) should be the maximum "
                    f"of the turn ({latest})."
                )
            return
        ends = self.ends_of_turn[turn]
        if not ends:
            return
        end_of_turn = min(ends, key=self.position.__getitem__)
        if end_of_turn in predecessor_ids:
            return
        end_time = times.get(end_of_turn, 0)
        if relative:
            if end_time < latest_predecessor + relative:
                raise ValueError(
                    f"New event's time ({latest_predecessor + relative}) exceeds "
                    f"send_message_to_user event's time ({end_time})."
                )
        elif absolute and end_time < absolute:
            raise ValueError(
                f"New event's time ({absolute}) exceeds send_message_to_user event's "
                f"time ({end_time})."
            )

    def _latest(self, turn: int) -> float:
        """`max(accumulated_times.values())` over the turn: the first largest in map order."""
        heap = self.by_time[turn]
        while True:
            _, position, event_id, time = heap[0]
            if self.position[event_id] == position and _same(self.time[event_id], time):
                return time
            heapq.heappop(heap)

    # -- the running aggregates --------------------------------------------------------------

    def _add(self, event: AbstractEvent) -> None:
        scenario = self.scenario
        event_id = event.event_id
        self.by_id.setdefault(event_id, event)
        is_aui = scenario._is_event_send_message_to_agent(
            event
        ) or scenario._is_event_send_message_to_user(event)
        self.parent[event_id] = event_id
        self.aui_in[event_id] = int(bool(is_aui))
        self.aui_total += int(bool(is_aui))
        for dependency in event.dependencies:
            self._union(event_id, dependency.event_id)
        # ARE's search visits this event and reads its dependencies' keys: one it has not
        # visited yet gets its key now, earlier than it had (see above).
        visit = self.visit[event_id]
        self.position[event_id] = (visit, 0)
        for index, dependency in enumerate(event.dependencies):
            touched = (visit, 1 + index)
            if touched < self.position[dependency.event_id]:
                self._move(dependency, touched)
        self.added.add(event_id)
        turn = self.turn[event_id]
        self.members[turn] += 1
        if not (event.event_relative_time == 1 or event.event_relative_time == 0):
            self.not_zero_or_one[turn] += 1
        if scenario.is_send_message_to_user(event):
            self.ends_of_turn[turn].add(event_id)
        self._retime(event)

    def _move(self, event: AbstractEvent, position: tuple[int, int]) -> None:
        """`event`'s key moved earlier: retime it, the successors it now precedes, and what
        their new times reach, in map order (only events after a changed one can change)."""
        self.position[event.event_id] = position
        turn = self.turn[event.event_id]
        pending: list[tuple[tuple[int, int], str, AbstractEvent]] = []
        queued: set[str] = set()

        def follow(changed: AbstractEvent) -> None:
            after = self.position[changed.event_id]
            for successor in changed.successors:
                successor_id = successor.event_id
                if (
                    successor_id in self.added
                    and successor_id not in queued
                    and self.turn[successor_id] == turn
                    and self.position[successor_id] > after
                ):
                    queued.add(successor_id)
                    heapq.heappush(pending, (self.position[successor_id], successor_id, successor))

        self._retime(event)
        follow(event)  # its successors between its old and new key now read its time
        while pending:
            _, _, successor = heapq.heappop(pending)
            if self._retime(successor):
                follow(successor)

    def _retime(self, event: AbstractEvent) -> bool:
        """ARE's `accumulate_times_from_event` for one event of its turn, from its dependencies'
        times: a dependency later in the map (or in another turn) reads 0. Whether it changed."""
        event_id = event.event_id
        turn = self.turn[event_id]
        position = self.position[event_id]
        latest_predecessor = max(
            (
                (self.time[d.event_id] if self.position[d.event_id] < position else 0.0)
                if self.turn[d.event_id] == turn
                else 0
                for d in event.dependencies
            ),
            default=self.start,
        )
        too_early = self.too_early[turn]
        too_early.pop(event_id, None)
        if event.event_time is not None:
            if event.event_time < latest_predecessor:
                too_early[event_id] = ValueError(
                    f"Event {event_id} has an absolute time of {event.event_time}, "
                    f"which is less than the maximum predecessor time of {latest_predecessor}."
                )
            time = event.event_time
        else:
            time = latest_predecessor + (event.event_relative_time or 0)
        old = self.time.get(event_id)
        self.time[event_id] = time
        heapq.heappush(self.by_time[turn], (-time, position, event_id, time))
        return old is None or not _same(old, time)

    def _find(self, event_id: str) -> str:
        root = event_id
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[event_id] != root:  # path compression
            self.parent[event_id], event_id = root, self.parent[event_id]
        return root

    def _union(self, a: str, b: str) -> None:
        root_a, root_b = self._find(a), self._find(b)
        if root_a != root_b:
            self.parent[root_b] = root_a
            self.aui_in[root_a] += self.aui_in.pop(root_b)


def _same(a: float, b: float) -> bool:
    """Equal and of one type: ARE's messages print 0 and 0.0 differently."""
    return type(a) is type(b) and a == b


def _visit_order(events: list[AbstractEvent]) -> dict[str, int]:
    """When ARE's breadth-first search over the final graph visits each event (its queue, its
    roots and successors in list order, visited events skipped when popped)."""
    order: dict[str, int] = {}
    queue = deque(event for event in events if not event.dependencies)
    while queue:
        event = queue.popleft()
        if event.event_id not in order:
            order[event.event_id] = len(order)
            queue.extend(s for s in event.successors if s.event_id not in order)
    return order


class LinearScenarioImportedFromJson(LinearEventImport, ScenarioImportedFromJson):
    """ARE's plain JSON scenario, its events imported in linear time."""


class LinearBenchmarkScenarioImportedFromJson(LinearEventImport, BenchmarkScenarioImportedFromJson):
    """ARE's benchmark JSON scenario, its events imported in linear time."""


def linear(scenario: ScenarioImportedFromJson) -> ScenarioImportedFromJson:
    """`scenario`, fresh from ARE's JSON importer, made to import its events in linear time.

    The importer instantiates ARE's classes itself; the subclass adds no field, so the instance
    changes class in place (it stays an instance of ARE's class for every `isinstance`).
    """
    if isinstance(scenario, LinearEventImport):
        return scenario
    if isinstance(scenario, BenchmarkScenarioImportedFromJson):
        scenario.__class__ = LinearBenchmarkScenarioImportedFromJson
    elif isinstance(scenario, ScenarioImportedFromJson):
        scenario.__class__ = LinearScenarioImportedFromJson
    return scenario
