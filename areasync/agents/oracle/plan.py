"""The oracle agent's plan: what ARE's own oracle run of a scenario did, as tool calls.

ARE scenarios carry their expected agent behaviour as ``OracleEvent``s whose times are relative
to their dependencies; only running the scenario tells when each one happens. So the plan comes
from ARE's own oracle run, done in-process on the virtual clock (``Simulation.load(...,
oracle=True)``, the same engine as a fast session): every completed AGENT event whose id is an
OracleEvent's is one action, with its time, tool and resolved arguments. This is the ARE-facing
half of the oracle agent (it loads ARE); ``areasync.agents.oracle.agent`` performs the plan over a
client connection and needs nothing from ARE.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from areasync.protocol import EventRecord

__all__ = ["OracleAction", "OraclePlan", "oracle_plan", "oracle_plan_in_thread"]


@dataclass(frozen=True)
class OracleAction:
    """One tool call of the oracle: at ``time`` seconds after the scenario's start."""

    time: float
    tool: str  # public name, as list_tools shows it
    app: str  # the app and method behind it, as the event log shows them
    function: str
    args: dict[str, Any]
    event_id: str
    return_value: Any = None
    failed: bool = False  # the call raised in the oracle run too
    # ARE ran it before everything else due at its time: make it there, ahead of those items
    # (pace jump: after an exclusive jump; see the module docstring).
    before_tick: bool = False


@dataclass
class OraclePlan:
    """What ARE's oracle run of a scenario did, as seen from the agent's side."""

    scenario_id: str
    start_time: float
    actions: list[OracleAction]
    events: list[EventRecord]  # the oracle run's whole log, in execution order
    initial_state: dict[str, Any]
    end_time: float  # relative time of the oracle run's last event
    simulation: Any = None  # the finished in-process oracle Simulation (for comparisons)


async def oracle_plan(source: Any, *, import_mode: str = "auto") -> OraclePlan:
    """Run ``source`` (registered id, JSON path or text, or a fresh Scenario) in oracle mode,
    in-process, and extract its oracle actions.

    A JSON scenario is imported as the live session imports it for an agent (``import_mode``
    as the session's, resolved for a run without the oracle): a Gaia2 benchmark import's turn
    conditions decide when the agent must end a turn.
    """
    # Imported here: the client side of areasync does not otherwise need ARE loaded.
    from are.simulation.types import OracleEvent

    from areasync.bridge.scenarios import loading as scenarios
    from areasync.simulation import Simulation

    scenario = scenarios.load(source, import_mode=import_mode, oracle=False)
    simulation = Simulation.load(scenario, mode="fast", oracle=True)
    scenario = simulation.scenario
    oracle_ids = {event.event_id for event in scenario.events if isinstance(event, OracleEvent)}
    initial_state = simulation.get_state()
    public_names = {tool.name: str(tool._public_name) for tool in simulation.env.get_tools()}
    await simulation.run()
    start = float(simulation.env.start_time or 0.0)
    completed = {str(event.event_id): event for event in simulation.env.event_log.list_view()}
    records = simulation.events()
    actions = _oracle_actions(records, completed, oracle_ids, public_names, start)
    return OraclePlan(
        scenario_id=str(scenario.scenario_id),
        start_time=start,
        actions=actions,
        events=records,
        initial_state=initial_state,
        end_time=max((record.time - start for record in records), default=0.0),
        simulation=simulation,
    )


async def oracle_plan_in_thread(source: Any, *, import_mode: str = "auto") -> OraclePlan:
    """:func:`oracle_plan`, made in a worker thread on an event loop of its own.

    For a caller whose event loop holds open sockets: the plan loads and runs the whole
    scenario (a Gaia2 one is megabytes of JSON and seconds of CPU, many more on a busy
    machine), and meanwhile the caller's loop must go on answering its server's keepalive
    pings, or the server closes the socket as stalled. Raises what :func:`oracle_plan` raises.
    """
    plan = partial(oracle_plan, source, import_mode=import_mode)
    return await anyio.to_thread.run_sync(anyio.run, plan)


def _oracle_actions(
    records: list[EventRecord],
    completed: dict[str, Any],
    oracle_ids: set[str],
    public_names: dict[str, str],
    start: float,
) -> list[OracleAction]:
    """The oracle run's completed OracleEvents, in execution order, as tool calls."""
    actions = []
    busy_times: set[float] = set()  # times at which ARE had run something else already
    for record in records:
        if record.event_type != "AGENT" or record.event_id not in oracle_ids:
            busy_times.add(record.time)
            continue
        action = completed[record.event_id].action
        internal_name = f"{record.app}__{record.function}"
        args = dict(action.resolved_args or action.args or {})
        args.pop("self", None)
        actions.append(
            OracleAction(
                time=record.time - start,
                tool=public_names.get(internal_name, internal_name),
                app=str(record.app),
                function=str(record.function),
                args=_plain(args),
                event_id=record.event_id,
                return_value=record.return_value,
                failed=record.exception is not None,
                before_tick=record.time not in busy_times,
            )
        )
    return actions


def _plain(value: Any) -> Any:
    from areasync.bridge.convert import to_plain

    return to_plain(value)
