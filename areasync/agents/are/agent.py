"""ARE's own default agent, playing a live session over the WebSocket.

``are-benchmark run --agent default`` builds its agent in ``ScenarioRunner._run_with_agent``:
ARE's ``AgentConfigBuilder`` config for ``default`` (its system prompt, 80 iterations), the
model as an ``LLMEngineConfig`` (ARE's ``LLMEngineBuilder`` makes the engine), a
``SimulatedGenerationTimeConfig`` for the generation time, ``max_turns``; then ARE's
``AgentBuilder`` builds an ``ARESimulationAgent`` around ARE's ReAct ``BaseAgent`` and the
runner calls ``run_scenario(scenario, notification_system=env.notification_system)``. This
module does exactly that, with the environment's parts backed by the session
(``session.py``) and the scenario's own tools calling the session: the model sees the prompt
it sees in-process (tool descriptions, notification policy, date, the scenario's additional
prompt) and the same conversation, turn after turn.

What needs the scenario itself. The session offers its tools over the protocol
(``list_tools``: public name, description, arguments), but not their return types, which
ARE's tool descriptions show (``Returns an output of type: ...``), nor the scenario's
additional system prompt or number of turns. So the agent loads the session's scenario
locally, as the session imported it (a registered id, or the JSON file with the same import
mode: what ``areasync agent oracle`` does too), takes every description from it, checks that
the session has the same tools with the same arguments, and never runs it: every call goes to
the session.

Two places where ARE's agent would block, both replaced by the session's stream:

* between turns ARE's loop polls its queue with ``time.sleep(1)``; here ``get_notifications``
  waits instead: the agent goes idle (a fast session runs on at once to what is due next) until
  the stream brings a notification or the session's end;
* ``SystemApp__wait_for_notification`` is an ordinary tool call, which the session answers
  when a notification arrives or its timeout passes in simulated time.

When the agent is done (its turns played, ``max_turns``, or the environment stopped) ARE's
runner stops the environment and validates; here a token that may (controller or admin) stops
the session, whose ``ended`` item carries the validation. Otherwise the agent goes idle and the
session ends on its own (at its duration, in a fast session at once).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import msgspec

from areasync.agents.are.session import (
    SessionEnvironment,
    SessionLink,
    ToolCall,
    session_tools,
)
from areasync.client import AreasyncError, BadStateError, Client, SessionEndedError
from areasync.protocol import ToolInfo, Validation

__all__ = [
    "AgentOptions",
    "AgentReport",
    "GenerationTime",
    "ToolMismatchError",
    "WhenDone",
    "run_are_agent",
]

logger = logging.getLogger("areasync.agents.are")


class GenerationTime(enum.StrEnum):
    """ARE's ``simulated_generation_time_mode``: how much simulated time a generation takes."""

    MEASURED = "measured"  # what the engine reports (ARE 1.2.0's engines report none: 0 s)
    FIXED = "fixed"  # ARE's SimulatedGenerationTimeConfig default: 1 s


class WhenDone(enum.StrEnum):
    """What the agent does with the session once its loop has ended."""

    AUTO = "auto"  # stop it if the token may (as ARE's runner stops its environment), else wait
    STOP = "stop"
    WAIT = "wait"  # go idle until the session ends by itself


@dataclass(frozen=True)
class AgentOptions:
    """``are-benchmark run``'s agent options, as ``ScenarioRunner`` passes them on."""

    model: str
    provider: str | None = None
    endpoint: str | None = None
    agent: str = "default"
    max_turns: int | None = None
    generation_time: GenerationTime = GenerationTime.MEASURED
    use_custom_logger: bool = False  # ARE's colourful logger writes to stdout: off by default


@dataclass
class AgentReport:
    """What the agent did in the session, and how the session ended."""

    session_id: str
    scenario_id: str
    model: str
    calls: list[ToolCall] = field(default_factory=list)
    output: Any = None  # the agent loop's result (its last turn's)
    error: str | None = None  # the agent loop raised (ARE's runner reports it the same way)
    ended_state: str | None = None
    validation: Validation | None = None
    reason: str | None = None
    generation_jumps: float = 0.0
    unapplied_generation_time: float = 0.0
    stopped_by_agent: bool = False
    world_logs: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "scenario_id": self.scenario_id,
            "model": self.model,
            "ok": self.ok,
            "error": self.error,
            "output": None if self.output is None else str(self.output),
            "ended": {
                "state": self.ended_state,
                "reason": self.reason,
                "validation": msgspec.to_builtins(self.validation),
                "stopped_by_agent": self.stopped_by_agent,
            },
            "generation_time": {
                "added": self.generation_jumps,
                "not_added": self.unapplied_generation_time,
            },
            "calls": [
                {"time": c.time, "tool": c.tool, "args": c.args, "error": c.error}
                for c in self.calls
            ],
        }


class ToolMismatchError(ValueError):
    """The session's tools are not the scenario's: the agent would describe tools wrongly."""


def check_tools(local: list[Any], remote: list[ToolInfo]) -> None:
    """Raise ToolMismatchError unless the session has each of ``local``'s tools (by public
    name) with the same argument names."""
    offered = {tool.name: [arg.name for arg in tool.args] for tool in remote}
    problems = []
    for tool in local:
        name = str(tool._public_name)
        if name not in offered:
            problems.append(f"{name} is missing")
        elif offered[name] != [arg.name for arg in tool.args]:
            problems.append(f"{name} takes {offered[name]}, not {[a.name for a in tool.args]}")
    if problems:
        shown = "; ".join(problems[:5]) + ("; ..." if len(problems) > 5 else "")
        raise ToolMismatchError(f"the session's tools are not the scenario's: {shown}")


class _ScenarioView:
    """The scenario as ``ARESimulationAgent.run_scenario`` reads it, with the session's tools."""

    def __init__(self, scenario: Any, tools: list[Any]) -> None:
        self._scenario = scenario
        self._tools = tools

    def get_tools(self) -> list[Any]:
        return list(self._tools)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scenario, name)


def build_agent(options: AgentOptions, env: SessionEnvironment) -> Any:
    """ARE's agent for ``options``, built the way ``ScenarioRunner._run_with_agent`` builds it."""
    from are.simulation.agents.agent_builder import AgentBuilder
    from are.simulation.agents.agent_config_builder import AgentConfigBuilder
    from are.simulation.agents.are_simulation_agent_config import (
        LLMEngineConfig,
        MainAgentConfig,
    )
    from are.simulation.types import SimulatedGenerationTimeConfig

    config = AgentConfigBuilder().build(agent_name=options.agent)
    base = config.get_base_agent_config()
    base.use_custom_logger = options.use_custom_logger
    base.llm_engine_config = LLMEngineConfig(
        model_name=options.model, provider=options.provider, endpoint=options.endpoint
    )
    base.simulated_generation_time_config = SimulatedGenerationTimeConfig(
        mode=options.generation_time.value
    )
    if isinstance(config, MainAgentConfig) and options.max_turns is not None:
        config.max_turns = options.max_turns
    # AgentBuilder reads time_manager, append_to_world_logs, pause, resume_with_offset.
    return AgentBuilder().build(agent_config=config, env=env)


def _wait_on_the_stream(agent: Any, link: SessionLink) -> None:
    """Make ``agent``'s idle polling wait on the session's stream instead of ``time.sleep(1)``.

    ``ARESimulationAgent.agent_loop`` sleeps a second whenever ``get_notifications`` finds
    nothing; this instance's ``get_notifications`` returns only once there is something (a
    user message, an environment notification, the environment's stop), going idle in the
    session meanwhile, so the loop never sleeps.
    """
    ares = agent.get_notifications

    def get_notifications(self: Any, notification_system: Any) -> tuple[Any, Any, Any]:
        found = ares(notification_system)
        while not any(found):
            link.wait_for_news()
            found = ares(notification_system)
        return found

    agent.get_notifications = types.MethodType(get_notifications, agent)


async def run_are_agent(
    client: Client,
    scenario: Any,
    options: AgentOptions,
    *,
    controller: Client | None = None,
    when_done: WhenDone | str = WhenDone.AUTO,
    on_warning: Callable[[str], None] | None = None,
) -> AgentReport:
    """Play the session ``client`` (agent role) is attached to with ARE's default agent.

    ``scenario`` is the session's scenario, loaded locally as the session imported it (an
    initialised ARE Scenario; it is never run). ``controller`` (a client of the same session
    in the controller or admin role) pauses a realtime clock while the model generates, adds
    the generation time (``fixed`` mode), and stops the session when the agent is done (see
    ``when_done``). The client should have been connected with ``since=0``, so that no
    notification sent before it attached is missed.
    """
    when_done = WhenDone(when_done)
    if when_done is WhenDone.STOP and controller is None:
        raise ValueError("when_done='stop' needs a controller client of the same session")
    link = SessionLink(client=client, controller=controller, on_warning=on_warning)
    local_tools = scenario.get_tools()
    check_tools(local_tools, await client.list_tools())
    env = SessionEnvironment(link)
    # Off the event loop, as every long step here: building imports ARE's model library
    # (LiteLLM), tens of seconds on a busy machine, and meanwhile the loop must answer the
    # server's keepalive pings, or the server closes the agent's socket as stalled and, in a
    # fast session, time runs on without it.
    agent = await anyio.to_thread.run_sync(build_agent, options, env)
    _wait_on_the_stream(agent, link)
    view = _ScenarioView(scenario, session_tools(local_tools, link))
    mode = client.clock.mode
    if controller is None and mode == "realtime":
        link.warn(
            "realtime",
            "the session runs in realtime and this token cannot pause its clock: simulated "
            "time runs on while the model generates (pass a controller or admin token)",
        )
    if controller is None and mode == "manual":
        link.warn(
            "manual",
            "the session is in manual mode: the agent waits for a controller's tick or jump "
            "whenever it is idle",
        )
    report = AgentReport(
        session_id=client.session_id, scenario_id=client.scenario_id, model=options.model
    )

    def play() -> Any:
        return agent.run_scenario(scenario=view, notification_system=env.notification_system)

    try:
        result = await anyio.to_thread.run_sync(play, abandon_on_cancel=True)
        report.output = result.output
    except Exception as exc:
        logger.debug("the agent failed", exc_info=True)
        report.error = f"{type(exc).__name__}: {exc}"
    report.calls = list(link.calls)
    report.generation_jumps = link.jumps
    report.unapplied_generation_time = link.unapplied
    report.world_logs = len(env.world_logs)
    if client.ended is None and link.lost is None:
        report.stopped_by_agent = await _finish(client, controller, when_done)
    ended = client.ended
    if ended is not None:
        report.ended_state = ended.state
        report.validation = ended.validation
        report.reason = ended.reason
    elif link.lost is not None and report.error is None:
        report.error = f"lost the session: {link.lost}"
    return report


async def _finish(client: Client, controller: Client | None, when_done: WhenDone) -> bool:
    """End the run as ARE's runner does (stop) or wait for the session to end; True if this
    agent stopped it."""
    stopped = False
    if controller is not None and when_done is not WhenDone.WAIT:
        try:
            await controller.stop()
            stopped = True
        except (BadStateError, SessionEndedError):
            pass  # it ended meanwhile
    else:
        with contextlib.suppress(SessionEndedError):
            await client.idle()
    with contextlib.suppress(AreasyncError):
        await client.wait_ended()
    return stopped
