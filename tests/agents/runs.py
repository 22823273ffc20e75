"""ARE's default agent run two ways on the tiny Gaia2 dataset, against one stub LLM.

* :func:`in_process`: ARE's own ``ScenarioRunner`` (``are-benchmark run``'s per-scenario
  runner) with ``--agent default``, under ``areasync.gaia2.runner.virtual_clock`` (ARE's
  Environment on a virtual wall; ``tests/gaia2/test_parity.py`` checks it against ARE's
  threaded run);
* :func:`over_the_socket`: a real service on loopback, one fast session per scenario, and
  ``areasync.agents.are.agent.run_are_agent`` attached to it as agent (plus a controller, as
  the admin token allows), in this process.

Both import each scenario as the session and Gaia2's runner do (``import_mode=benchmark``, no
judge). A run records what the stub received (every request, in order), ARE's event log in
the conformance normal form, and the agent's tool calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from areasync.agents.are.agent import AgentOptions, GenerationTime, run_are_agent
from areasync.bridge.scenarios import loading as scenarios
from areasync.client import connect
from areasync.conformance.normal_form import LogEntry, normalized_log
from areasync.engine.clock import REAL_WALL, Wall
from areasync.gaia2.dataset import BASICS, SPECS, scenario_json
from areasync.gaia2.stub_llm import AGENT_MODEL, StubLLM
from areasync.protocol import Role
from areasync.service import Service, ServiceConfig
from tests.bounds import PROCESS_S

MODEL = f"openai/{AGENT_MODEL}"
WAIT = PROCESS_S  # a whole run, before the test fails instead of hanging

# A sixth scenario: tiny_email's world, a task whose script reads and fails too (see READS).
READS_ID = "tiny_reads"
READS_MARKER = replace(SPECS["tiny_email"], scenario_id=READS_ID).marker
_NO_SUCH_ID = "0" * 32


def read_steps() -> list[dict[str, Any]]:
    """Tool calls whose observations are ARE objects and whose failures are the apps' own:
    what the model reads in-process must be what it reads over the socket."""
    email = {
        "action": "EmailClientV2__send_email",
        "action_input": {"recipients": ["bob@example.com"], "subject": "Hi", "content": "Hi"},
    }
    return [
        {"action": "EmailClientV2__list_emails", "action_input": {"folder_name": "SENT"}},
        email,
        {"action": "EmailClientV2__list_emails", "action_input": {"folder_name": "SENT"}},
        {
            "action": "EmailClientV2__get_email_by_index",
            "action_input": {"idx": 0, "folder_name": "SENT"},
        },
        {
            "action": "EmailClientV2__search_emails",
            "action_input": {"query": "Hi", "folder_name": "SENT"},
        },
        {"action": "EmailClientV2__get_email_by_id", "action_input": {"email_id": _NO_SUCH_ID}},
        {"action": "EmailClientV2__get_email_by_index", "action_input": {"folder_name": "SENT"}},
        {"action": "ContactsApp__get_current_user_details", "action_input": {}},
        {
            "action": "AgentUserInterface__send_message_to_user",
            "action_input": {"content": "Done."},
        },
    ]


# The ids ARE generates (uuid4, or its 32 hex digits).
_IDS = re.compile(
    r"(?<![0-9a-f])(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})"
    r"(?![0-9a-f])"
)
_TEXTS: dict[str, str] = {}


def scenario_text(scenario_id: str) -> str:
    """The scenario's JSON, as the dataset writes it (built once per process)."""
    if scenario_id not in _TEXTS:
        if scenario_id == READS_ID:
            _TEXTS[scenario_id] = scenario_json(replace(SPECS["tiny_email"], scenario_id=READS_ID))
        else:
            _TEXTS[scenario_id] = scenario_json(SPECS[scenario_id])
    return _TEXTS[scenario_id]


@dataclass
class Run:
    requests: list[dict[str, Any]]  # what the stub received, in order
    log: list[LogEntry]  # ARE's event log, conformance normal form
    calls: list[tuple[str, dict[str, Any]]]  # the agent's tool calls: (public name, args)
    validation: Any = None  # in-process: ScenarioRunner's result; socket: ended.validation
    report: Any = None  # over the socket: the agent's report
    extra: dict[str, Any] = field(default_factory=dict)


def in_process(
    stub: StubLLM, scenario_id: str, generation: str = "measured", import_mode: str = "benchmark"
) -> Run:
    """ARE's ScenarioRunner with its default agent, on a virtual wall."""
    from are.simulation.agents.agent_log import ToolCallLog
    from are.simulation.scenario_runner import ScenarioRunner
    from are.simulation.scenarios.config import ScenarioRunnerConfig

    from areasync.gaia2.runner import own_wall, virtual_clock

    scenario = scenarios.load(scenario_text(scenario_id), import_mode=import_mode, oracle=False)
    config = ScenarioRunnerConfig(
        agent="default",
        model=MODEL,
        model_provider="local",
        endpoint=stub.endpoint,
        oracle=False,
        export=False,
        simulated_generation_time_mode=generation,
        use_custom_logger=False,
    )
    before = len(stub.requests)
    with virtual_clock() as holder, own_wall():
        result = ScenarioRunner().run(config, scenario)
    env = holder.last_environment
    assert env is not None
    calls = [
        (log.tool_name, dict(log.tool_arguments))
        for log in env.world_logs
        if isinstance(log, ToolCallLog)
    ]
    return Run(
        requests=stub.requests[before:], log=normalized_log(env), calls=calls, validation=result
    )


def service_config(**overrides: Any) -> ServiceConfig:
    fields: dict[str, Any] = {
        "port": 0,
        "admin_token": "test-admin-token",
        "trace_dir": None,
        "close_timeout": 2.0,
        "shutdown_grace": 1.0,
        "ping_interval": None,
    }
    fields.update(overrides)
    return ServiceConfig(**fields)


async def over_the_socket(
    stub: StubLLM,
    scenario_ids: list[str],
    *,
    generation: str = "measured",
    mode: str = "fast",
    speed: float = 1.0,
    controller: bool = True,
    on_session: Callable[[Any], None] | None = None,
    on_agent: Callable[[Any], None] | None = None,
    service_options: dict[str, Any] | None = None,
    import_mode: str = "benchmark",
    wall: Wall = REAL_WALL,
) -> dict[str, Run]:
    """ARE's default agent on one live session per scenario, one after another
    (``service_options``: more of the service's configuration; ``wall``: its sessions')."""
    runs: dict[str, Run] = {}
    async with Service(service_config(**(service_options or {})), [], wall=wall) as service:
        token = service.tokens.admin
        for scenario_id in scenario_ids:
            text = scenario_text(scenario_id)
            session = service.registry.create(text, mode=mode, speed=speed, import_mode=import_mode)
            if on_session is not None:
                on_session(session)
            url = service.ws_url(session.id)
            local = scenarios.load(text, import_mode=import_mode, oracle=False)
            options = AgentOptions(
                model=MODEL,
                provider="local",
                endpoint=stub.endpoint,
                generation_time=GenerationTime(generation),
            )
            before = len(stub.requests)
            with anyio.fail_after(WAIT):
                # Without a controller, the session's own agent token (the least it takes).
                agent_token = token if controller else session.tokens[Role.AGENT]
                async with connect(url, role="agent", token=agent_token, since=0) as agent:
                    if on_agent is not None:
                        on_agent(agent)
                    if controller:
                        async with connect(url, role="controller", token=token) as control:
                            report = await run_are_agent(agent, local, options, controller=control)
                    else:
                        report = await run_are_agent(agent, local, options)
            runs[scenario_id] = Run(
                requests=stub.requests[before:],
                log=normalized_log(session.sim.env),
                calls=[(call.tool, call.args) for call in report.calls],
                validation=report.validation,
                report=report,
            )
    return runs


def prompts(run: Run) -> list[str]:
    """Each request's messages as text, ids masked (each run makes its own uuids)."""
    return [_IDS.sub("<id>", json.dumps(r["messages"], sort_keys=True)) for r in run.requests]


# The scenarios both runs play: the dataset's first four.
SCENARIOS: tuple[str, ...] = BASICS
