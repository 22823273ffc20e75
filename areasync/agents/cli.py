"""`areasync agent ...`: reference agents run from a shell against a live session.

    areasync agent oracle --url ws://127.0.0.1:8765 --session scenario_tutorial --token T
    areasync agent are --url ws://127.0.0.1:8765 --session ID --token T --model M --provider P

`oracle` is here; `are` (ARE's own default agent, driven by a model) is in `are/cli.py`.

The subcommand is added to the `areasync` parser by `add_agent_parser`; `run_agent` handles it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from areasync.protocol import ImportMode, Role

if TYPE_CHECKING:
    from areasync.client import Client


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
    _add_connection_options(oracle)
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


def _add_connection_options(parser: argparse.ArgumentParser) -> None:
    """The options every agent takes to reach its session."""
    parser.add_argument(
        "--url",
        required=True,
        help="the server (ws://HOST:PORT) or a session URL (ws://HOST:PORT/sessions/ID)",
    )
    parser.add_argument("--session", default=None, help="session id (if --url is the server)")
    parser.add_argument("--token", required=True, help="the session's agent token, or admin")
    parser.add_argument(
        "--wait",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="wall seconds to wait for the server to accept connections before giving up "
        "(default 10; it may start after the agent)",
    )
    parser.add_argument("--encoding", choices=["json", "msgpack"], default="msgpack")


def add_scenario_options(parser: argparse.ArgumentParser, *, purpose: str) -> None:
    """--scenario and --import-mode: the session's scenario, loaded as the session loaded it."""
    parser.add_argument(
        "--scenario",
        default=None,
        help="the session's scenario (registered id, JSON file); default: the session's "
        "scenario id as a registered scenario",
    )
    parser.add_argument(
        "--import-mode",
        choices=[mode.value for mode in ImportMode],
        default="auto",
        help=f"how --scenario's JSON is imported, {purpose}: the session's own import mode "
        "(the server's --import-mode or create_session's; auto by default)",
    )


def session_url(url: str, session: str | None) -> str:
    """A session's WebSocket URL from a server URL and a session id (or a full session URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(
            f"--url {url!r} is not a WebSocket URL: use ws://HOST:PORT (or wss://), e.g. "
            "ws://127.0.0.1:8765"
        )
    base = url.rstrip("/")
    if "/sessions/" in base:
        if session is not None and not base.endswith(f"/sessions/{session}"):
            raise ValueError(f"--url {url} names a session already; drop --session {session}")
        return base
    if session is None:
        raise ValueError("--session is required when --url is the server's address")
    return f"{base}/sessions/{session}"


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
    from areasync.agents.oracle.agent import Pace, oracle_plan, run_oracle_agent
    from areasync.bridge.scenarios.loading import ScenarioError
    from areasync.client import AreasyncError, connect

    options: dict[str, Any] = {"token": args.token, "encoding": args.encoding}
    if not await wait_for_server(url, args.wait, prog="areasync agent oracle"):
        return 1
    try:
        async with connect(url, role=Role.AGENT, **options) as sim:
            try:
                plan = await oracle_plan(
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
            # read the apps' state, which helps the agent map ids (see oracle.py).
            controller = observer = None
            if args.pace != "wait":
                controller = await _try_connect(url, Role.CONTROLLER, options)
                if controller is None and args.pace == "jump":
                    print(
                        "areasync agent oracle: --pace jump needs a controller or admin token",
                        file=sys.stderr,
                    )
                    return 2
            if controller is None:
                observer = await _try_connect(url, Role.OBSERVER, options)
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


async def wait_for_server(url: str, limit: float, *, prog: str) -> bool:
    """Wait (at most ``limit`` wall seconds) until ``url``'s host accepts TCP connections.

    Says once on stderr what it is waiting for, and gives up with a message saying what to do;
    False then. The client's own retries are meant for a server that went away for a moment,
    and are silent: a server that is not up at all deserves a word.
    """
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    server = f"{parts.scheme}://{parts.netloc}"
    said = False
    last: OSError | None = None
    with anyio.move_on_after(limit):
        while True:
            try:
                stream = await anyio.connect_tcp(host, port)
            except OSError as exc:
                last = exc
                if not said:
                    print(
                        f"{prog}: waiting for the server at {server} ({_reason(exc)}); retrying "
                        f"for up to {limit:g} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    said = True
                await anyio.sleep(0.25)
                continue
            await stream.aclose()
            return True
    print(
        f"{prog}: no server answered at {server} within {limit:g} s"
        f"{f' ({_reason(last)})' if last else ''}: start it (`make serve` or `areasync serve`), "
        "check --url, or wait longer with --wait SECONDS",
        file=sys.stderr,
    )
    return False


def _reason(exc: BaseException) -> str:
    # anyio reports "All connection attempts failed" and chains the socket's own error.
    while exc.__cause__ is not None:
        exc = exc.__cause__
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno > 0:
        return os.strerror(errno).lower()  # "connection refused"
    return str(exc) or type(exc).__name__


async def _try_connect(url: str, role: Role, options: dict[str, Any]) -> Client | None:
    """A client in ``role`` if the token is valid for it, else None."""
    from areasync.client import UnauthorizedError, connect

    try:
        return await connect(url, role=role, **options)
    except UnauthorizedError:
        return None
