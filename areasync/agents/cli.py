"""`areasync agent ...`: reference agents run from a shell against a live session.

    areasync agent oracle --url ws://127.0.0.1:8765 --session scenario_tutorial --token T
    areasync agent are --url ws://127.0.0.1:8765 --session ID --token T --model M --provider P

`oracle` is here; `are` (ARE's own default agent, driven by a model) is in `are/cli.py`; what
both take (options, the session's URL, the wait for the server) in `shell.py`.

The subcommand is added to the `areasync` parser by `add_agent_parser`; `run_agent` handles it.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

import anyio

from areasync.agents.shell import (
    add_connection_options,
    add_scenario_options,
    session_url,
    try_connect,
    wait_for_server,
)
from areasync.protocol import Role


def add_agent_parser(sub: Any) -> None:
    """Add `agent` and its agents to the `areasync` command's subparsers."""
    agent = sub.add_parser("agent", help="run a reference agent against a live session")
    agents = agent.add_subparsers(dest="agent", required=True)
    oracle = agents.add_parser(
        "oracle",
        help="perform the scenario's oracle actions as tool calls at their oracle times",
        description=(
            "Connect as an agent and make the scenario's oracle tool calls at their oracle "
            "times, idling in between: the way a perfect agent would. Prints a JSON report; "
            "exits 1 if a call failed that did not fail in ARE's own oracle run."
        ),
    )
    add_connection_options(oracle)
    add_scenario_options(oracle, purpose="to plan as the session runs")
    oracle.add_argument(
        "--pace",
        choices=["auto", "wait", "jump"],
        default="auto",
        help="jump: move the clock to each action's time as a controller (exact; needs a "
        "controller or admin token); wait: SystemApp__wait_for_notification until then (the "
        "agent-only way; ARE logs the waits); auto (default): jump if the token allows it",
    )
    oracle.add_argument("-v", "--verbose", action="store_true", help="log each call to stderr")
    from areasync.agents.are.cli import add_are_parser

    add_are_parser(agents)


def run_agent(args: argparse.Namespace) -> int:
    """Run the agent chosen on the command line; the process exit status."""
    if args.verbose:
        logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
        logging.getLogger("areasync.agents").setLevel(logging.INFO)
    try:
        url = session_url(args.url, args.session)
    except ValueError as exc:
        print(f"areasync agent: {exc}", file=sys.stderr)
        return 2
    if args.agent == "are":
        from areasync.agents.are.cli import run_are

        status: int = anyio.run(run_are, args, url)
        return status
    result: int = anyio.run(_oracle, args, url)
    return result


async def _oracle(args: argparse.Namespace, url: str) -> int:
    from areasync.agents.oracle.agent import Pace, run_oracle_agent
    from areasync.agents.oracle.plan import oracle_plan_in_thread
    from areasync.bridge.scenarios.loading import ScenarioError
    from areasync.client import AreasyncError, connect

    options: dict[str, Any] = {"token": args.token, "encoding": args.encoding}
    if not await wait_for_server(url, args.wait, prog="areasync agent oracle"):
        return 1
    try:
        async with connect(url, role=Role.AGENT, **options) as sim:
            try:
                # Off the event loop: the plan loads and runs the scenario (seconds of CPU for
                # a Gaia2 one), and the socket must go on answering the server's pings.
                plan = await oracle_plan_in_thread(
                    args.scenario or sim.scenario_id, import_mode=args.import_mode
                )
            except ScenarioError as exc:
                print(
                    f"areasync agent oracle: {exc}. Pass the session's scenario with --scenario "
                    "(the JSON file it was started from).",
                    file=sys.stderr,
                )
                return 2
            # A controller moves the clock (pace jump); failing that, an observer may still
            # read the apps' state, which helps the agent map ids (see oracle/agent.py).
            controller = observer = None
            if args.pace != "wait":
                controller = await try_connect(url, Role.CONTROLLER, options)
                if controller is None and args.pace == "jump":
                    print(
                        "areasync agent oracle: --pace jump needs a controller or admin token",
                        file=sys.stderr,
                    )
                    return 2
            if controller is None:
                observer = await try_connect(url, Role.OBSERVER, options)
            if controller is None and sim.clock.mode == "manual":
                # An agent cannot move a manual clock: say why nothing happens for a while.
                print(
                    "areasync agent oracle: the session is in manual mode and this token cannot "
                    "move its clock: each action waits for a controller's tick or jump (or "
                    "pass a controller or admin token)",
                    file=sys.stderr,
                    flush=True,
                )
            try:
                pace = Pace.JUMP if controller is not None else Pace.WAIT
                report = await run_oracle_agent(
                    sim, plan, pace=pace, controller=controller, observer=observer
                )
            finally:
                for extra in (controller, observer):
                    if extra is not None:
                        await extra.aclose()
    except (AreasyncError, ValueError) as exc:
        print(f"areasync agent oracle: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report.to_json(), default=str))
    return 0 if report.ok else 1
