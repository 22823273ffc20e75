"""`areasync agent are`: ARE's default agent, driven by a model, playing a live session.

    areasync agent are --url ws://127.0.0.1:8765 --session ID --token T \\
        --model openai/M --provider local --endpoint http://127.0.0.1:8000/v1

The model options are `are-benchmark run`'s (`--model`, `--provider`, `--endpoint`,
`--max_turns`, `--simulated_generation_time_mode`; the dashed spellings work too), and ARE's
own engine builder makes the engine from them. The agent itself is `agent.py`; this module
checks what can be checked before the first generation (the server, the model's endpoint, the
session's state and tools) so that a mistake is one clear line, not eighty failed steps.

The parser imports nothing of ARE (`areasync --help` stays fast); `run_are` does.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread

from areasync.agents.shell import (
    add_connection_options,
    add_scenario_options,
    try_connect,
    wait_for_server,
)

PROG = "areasync agent are"
GENERATION_TIME_MODES = ("measured", "fixed")
WHEN_DONE = ("auto", "stop", "wait")
# Wall seconds to wait for the model's endpoint to accept a connection, at start.
ENDPOINT_TIMEOUT_S = 5.0


def add_are_parser(agents: Any) -> None:
    """Add `are` to the `areasync agent` subcommands."""
    are = agents.add_parser(
        "are",
        help="run ARE's own default agent (are-benchmark's --agent default) with a model",
        description=(
            "Connect as an agent and play the session with ARE's default agent, exactly as "
            "are-benchmark run --agent default builds it: the same prompt and tool "
            "descriptions, notifications from the session's stream, every tool call over the "
            "socket. The session's scenario is loaded locally for its tool descriptions "
            "(never run). Prints a JSON report; exits 1 if the agent failed or the session "
            "was lost."
        ),
    )
    add_connection_options(are)
    are.add_argument("--model", required=True, help="the model, as are-benchmark's --model")
    are.add_argument(
        "--provider",
        default=None,
        help="the model's provider, as are-benchmark's --provider (local: an OpenAI-"
        "compatible server at --endpoint; set OPENAI_API_KEY, to anything for a local one)",
    )
    are.add_argument("--endpoint", default=None, help="the model server's URL (e.g. .../v1)")
    add_scenario_options(are, purpose="for its tool descriptions and turns")
    are.add_argument(
        "--max-turns",
        "--max_turns",
        dest="max_turns",
        type=int,
        default=None,
        help="stop after this many turns (default: the scenario's number of turns, else "
        "until the session ends)",
    )
    are.add_argument(
        "--simulated-generation-time-mode",
        "--simulated_generation_time_mode",
        dest="generation_time",
        choices=GENERATION_TIME_MODES,
        default="measured",
        help="simulated time a generation takes, as ARE's: measured (what the engine reports; "
        "ARE's engines report none, so time stands still) or fixed (1 s; needs a controller "
        "or admin token, which moves the clock)",
    )
    are.add_argument(
        "--when-done",
        choices=WHEN_DONE,
        default="auto",
        help="once the agent's loop ends: stop the session (as ARE's runner stops its "
        "environment; needs a controller or admin token), or wait for it to end; auto "
        "(default): stop if the token allows it",
    )
    are.add_argument(
        "-v", "--verbose", action="store_true", help="log the agent's steps and ARE's warnings"
    )


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def endpoint_problem(endpoint: str, timeout: float = ENDPOINT_TIMEOUT_S) -> str | None:
    """Why the model server at ``endpoint`` cannot be reached, or None if it accepts
    connections."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"--endpoint {endpoint!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return None
    except OSError as exc:
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc) or "timed out"
        return (
            f"cannot reach the model at {endpoint} ({reason}): start the model server or "
            "check --endpoint"
        )


def _needs_openai_key(args: argparse.Namespace) -> bool:
    # ARE's local engine is LiteLLM's OpenAI client, which refuses to start without a key.
    return args.provider in (None, "local") and str(args.model).startswith("openai/")


def _quiet_are(verbose: bool) -> None:
    """ARE logs routine warnings (tools it removes, turns it sets) on every run: keep stderr
    for what the user must read, unless -v."""
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("are").setLevel(logging.INFO if verbose else logging.ERROR)
    logging.getLogger("LiteLLM").setLevel(logging.INFO if verbose else logging.ERROR)
    logging.getLogger("areasync.agents").setLevel(logging.INFO if verbose else logging.WARNING)


def _import_are() -> None:
    """Import what playing a session needs of ARE (`run_are` calls it off the event loop)."""
    import areasync.agents.are.agent
    import areasync.bridge.scenarios.loading  # noqa: F401


async def run_are(args: argparse.Namespace, url: str) -> int:
    """`areasync agent are`: the process exit status."""
    from areasync.protocol import Role

    _quiet_are(args.verbose)
    if args.max_turns is not None and args.max_turns < 1:
        _say(f"--max-turns must be at least 1, got {args.max_turns}")
        return 2
    if args.endpoint is not None and (problem := endpoint_problem(args.endpoint)):
        _say(problem)
        return 1
    if _needs_openai_key(args) and not os.environ.get("OPENAI_API_KEY"):
        _say(
            f"--model {args.model} goes through LiteLLM's OpenAI client, which needs "
            "OPENAI_API_KEY: set it (to anything, for a local server)"
        )
        return 2
    if not await wait_for_server(url, args.wait, prog=PROG):
        return 1

    from areasync.client import AreasyncError, connect

    options: dict[str, Any] = {"token": args.token, "encoding": args.encoding}
    try:
        # since=0: every notification of the session, also those sent before the agent came.
        async with connect(url, role=Role.AGENT, since=0, **options) as sim:
            state = sim.welcome.clock.state
            if state in ("stopped", "failed"):
                _say(
                    f"session {sim.session_id!r} has already ended ({state}): create a new one "
                    "(areasync session create ...) and run the agent on it"
                )
                return 1
            # ARE is imported only now (the checks above answer in a fraction of a second),
            # and off the event loop, which must go on answering the server's keepalive
            # pings while ARE is imported: tens of seconds on a busy machine.
            await anyio.to_thread.run_sync(_import_are)
            from areasync.agents.are.agent import (
                AgentOptions,
                GenerationTime,
                ToolMismatchError,
                WhenDone,
                run_are_agent,
            )
            from areasync.bridge.scenarios.loading import ScenarioError
            from areasync.bridge.scenarios.loading import load as load_scenario

            source = args.scenario or sim.scenario_id
            try:
                # Off the event loop: a Gaia2 scenario takes seconds to build, and the socket's
                # reader must go on meanwhile (ARE is not in use on the loop's thread).
                scenario = await anyio.to_thread.run_sync(
                    partial(load_scenario, source, import_mode=args.import_mode, oracle=False)
                )
            except ScenarioError as exc:
                _say(
                    f"{exc}. Pass the session's scenario with --scenario (the JSON file it "
                    "was started from)."
                )
                return 2
            controller = await try_connect(url, Role.CONTROLLER, options)
            try:
                if controller is None and args.when_done == "stop":
                    _say("--when-done stop needs a controller or admin token")
                    return 2
                if controller is None and args.generation_time == "fixed":
                    _say(
                        "--simulated-generation-time-mode fixed moves the clock by 1 s per "
                        "generation, which needs a controller or admin token"
                    )
                    return 2
                agent_options = AgentOptions(
                    model=args.model,
                    provider=args.provider,
                    endpoint=args.endpoint,
                    max_turns=args.max_turns,
                    generation_time=GenerationTime(args.generation_time),
                )
                report = await run_are_agent(
                    sim,
                    scenario,
                    agent_options,
                    controller=controller,
                    when_done=WhenDone(args.when_done),
                    on_warning=_say,
                )
            except ToolMismatchError as exc:
                _say(
                    f"{exc}. Pass the session's scenario with --scenario (and --import-mode "
                    "as the session imported it)."
                )
                return 2
            finally:
                if controller is not None:
                    await controller.aclose()
    except (AreasyncError, ValueError) as exc:
        _say(str(exc))
        return 1
    print(json.dumps(report.to_json(), default=str), flush=True)
    if report.error is not None:
        _say(f"the agent failed: {report.error}")
        return 1
    return 0
