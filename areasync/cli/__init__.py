"""The `areasync` command: run a scenario, print the protocol schema, serve sessions.

areasync run scenario_tutorial --mode fast --oracle
areasync bench run|judge|gaia2-run [are-benchmark's options] [--resume] [--retry N]
areasync bench report OUTPUT_DIR
areasync bench aggregate SHARD_DIR... --output_dir OUT
areasync schema
areasync serve [--scenario ID_OR_PATH ...]
areasync session create|stop|list --url ws://HOST:PORT --token ADMIN_TOKEN
areasync agent oracle --url ws://HOST:PORT --session ID --token TOKEN
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio

from areasync.agents.cli import add_agent_parser, run_agent
from areasync.bridge.judge.options import DEFAULT_JUDGE_MODEL
from areasync.bridge.operator_files import (
    DEFAULT_MAX_SCENARIO_BYTES,
    TooLargeError,
    check_file,
    names_a_file,
)
from areasync.cli.durable import add_cluster_options, add_durability_options
from areasync.cli.sessions import add_session_parser, run_session
from areasync.cli.workers import worker_count
from areasync.exits import exit_uncollected
from areasync.protocol.frames import ImportMode, Mode
from areasync.protocol.records import Validation
from areasync.service.ports import is_port, port_range_problems
from areasync.tempdirs import remove_ares_temp_dir_at_exit

IMPORT_MODE_HELP = (
    "how a JSON scenario is imported: benchmark = as Gaia2's runner does (ARE's "
    "import_from_json_to_benchmark + preprocess_scenario, no judge: a live agent reaches every "
    "turn), plain = ARE's plain import, auto (default) = benchmark for a multi-turn Gaia2 "
    "scenario run without --oracle, else plain"
)

MODE_HELP = (
    "how simulated time moves: fast = as fast as possible (standing still while an agent "
    "works), realtime = ARE's ticks paced by the wall clock at --speed, manual = only by a "
    "controller's tick/jump"
)
RUN_MODE_HELP = (
    "how simulated time moves: fast (default) = as fast as possible, realtime = ARE's ticks "
    "paced by the wall clock at --speed; manual is refused: `run` has no controller to move "
    "its clock"
)
# `run` has no controller, so in manual mode nothing would ever move the clock: refuse it at
# once rather than wait for ever (driving it by ticks would only be realtime unpaced, which
# --mode realtime --speed N already is).
MANUAL_RUN = (
    "--mode manual moves the clock only on a controller's tick or jump, and `areasync run` "
    "has no controller: it would wait for ever. Use --mode fast (as fast as possible) or "
    "--mode realtime --speed N; to step a scenario by hand, run `areasync serve --mode manual` "
    "and drive it with a controller"
)


def memory_limit(text: str) -> int | str:
    """argparse type of --memory-limit: bytes (`service.memory.parse_memory_limit`), or "none"."""
    from areasync.service.gate.memory import parse_memory_limit

    try:
        value = parse_memory_limit(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return "none" if value is None else value


def positive_bytes(text: str) -> int:
    """argparse type of --max-scenario-bytes: a whole number of bytes, at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of bytes (a whole number >= 1)")
    return value


def port_number(text: str) -> int:
    """argparse type of --port: an integer 0-65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not is_port(value):
        raise argparse.ArgumentTypeError(f"{value} is not a port: use 0-65535 (0: any free port)")
    return value


def port_range(text: str) -> tuple[int, int]:
    """argparse type of --gaia2-ports: FIRST-LAST, ports 1-65535, FIRST <= LAST."""
    first, sep, last = text.partition("-")
    try:
        ports = (int(first), int(last))
    except ValueError:
        ports = None
    if not sep or ports is None or port_range_problems(ports):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a range of ports: use FIRST-LAST, ports 1-65535 with FIRST <= "
            "LAST (e.g. 9100-9199: a port per session)"
        )
    return ports


def directory(text: str) -> Path:
    """argparse type of --scenario-dir: an existing directory."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory: name an existing one")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    # No argv: this is the process's own command (the `areasync` script, `python -m`).
    owns_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    remove_ares_temp_dir_at_exit()
    if argv[:1] == ["gaia2-cli"]:
        # gaia2-cli's app commands: stdlib only, so that each starts at once.
        from areasync.agents.gaia2.tools import main as gaia2_tools

        return gaia2_tools(argv[1:])
    if owns_process:
        exit_uncollected()  # a server or a run: ARE's heap is not collected as it exits
    if argv[:1] == ["bench"] and argv[1:2] in (["run"], ["judge"], ["gaia2-run"]):
        # are-benchmark's own options (click), so argparse never sees them; ARE is imported
        # only here.
        from areasync.gaia2.cli import main as bench

        return bench(argv[2:], command=argv[1], owns_process=owns_process)
    if argv[:2] == ["bench", "aggregate"]:
        from areasync.gaia2.shards import main as bench_aggregate

        return bench_aggregate(argv[2:])
    if argv[:2] == ["bench", "report"]:
        from areasync.gaia2.report import main as bench_report

        return bench_report(argv[2:], prog="areasync bench report")
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    handler = {
        "run": _cmd_run,
        "schema": _cmd_schema,
        "serve": _cmd_serve,
        "agent": run_agent,
        "session": run_session,
        "bench": _cmd_bench,
    }[args.command]
    return int(handler(args))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="areasync", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")

    run = sub.add_parser("run", help="run a scenario to its end and print its event log")
    run.add_argument("scenario", help="a registered scenario id, a JSON file, or JSON text")
    run.add_argument("--mode", choices=[m.value for m in Mode], default="fast", help=RUN_MODE_HELP)
    run.add_argument("--speed", type=float, default=1.0, help="realtime speed (sim s per wall s)")
    run.add_argument("--oracle", action="store_true", help="run the scenario's oracle events")
    run.add_argument(
        "--import-mode",
        choices=[m.value for m in ImportMode],
        default="auto",
        help=IMPORT_MODE_HELP,
    )
    run.add_argument(
        "--max-scenario-bytes",
        type=positive_bytes,
        default=DEFAULT_MAX_SCENARIO_BYTES,
        metavar="N",
        help="largest scenario file read, in bytes (default: %(default)s)",
    )
    run.add_argument("--json", action="store_true", help="print the event log as JSON lines")
    run.add_argument("--no-progress", action="store_true", help="never draw a progress bar")

    sub.add_parser("schema", help="print the areasync/1 protocol's JSON Schema")
    sub.add_parser(
        "bench",
        help="bench run|judge|gaia2-run [are-benchmark's options]: are-benchmark's commands "
        "on the virtual clock (areasync bench run --help, ...); bench report OUTPUT_DIR: "
        "gaia2-cli's per-run files and an HTML report for any run's output directory; bench "
        "aggregate DIR... --output_dir OUT: merge the shards of a `bench run --shard I/K`",
    )
    add_agent_parser(sub)
    add_session_parser(sub)

    serve = sub.add_parser(
        "serve",
        help="serve sessions over WebSocket (and the dashboard)",
        description="Serve one session per --scenario on ws://HOST:PORT/sessions/{id}, plus "
        "HTTP /health, /api/sessions, /api/schema, /metrics and the dashboard at /.",
    )
    serve.add_argument(
        "--scenario",
        action="append",
        default=None,
        metavar="ID_OR_PATH",
        help="a registered scenario id or an ARE JSON file (repeatable; default: "
        "scenario_tutorial); the session id is the id or the file's stem",
    )
    serve.add_argument(
        "--mode",
        choices=[m.value for m in Mode],
        default=None,
        help=MODE_HELP + " (default: realtime; fast for the default scenario_tutorial "
        "session, which then waits for its agent, or for Start on the dashboard)",
    )
    serve.add_argument("--speed", type=float, default=1.0, help="realtime speed (sim s per wall s)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback)")
    serve.add_argument("--port", type=port_number, default=8765, help="port (0: any free port)")
    serve.add_argument(
        "--gaia2-port",
        type=port_number,
        default=None,
        metavar="PORT",
        help="also serve gaia2-cli's HTTP+SSE adapter on this port (0: any free port): "
        "a harness's base URL is http://HOST:PORT/gaia2/<session token>, printed per session; "
        "with --ray every node's server serves it on this port (0: a free one on each node), "
        "and the router's /api/sessions/<id>/url gives a session's gaia2_url",
    )
    serve.add_argument(
        "--gaia2-ports",
        type=port_range,
        default=None,
        metavar="FIRST-LAST",
        help="serve each session's gaia2-cli adapter at the bare root of a port of its own "
        "from this range, http://127.0.0.1:PORT as gaia2-cli's runner reaches one (loopback "
        "only, the user's role, no token); printed per session, in create_session's result "
        "and GET /api/sessions (gaia2_cli_url); a session holds its port until it is discarded",
    )
    serve.add_argument(
        "--mcp-port",
        type=port_number,
        default=None,
        metavar="PORT",
        help="also serve each session's tools over MCP (Streamable HTTP) on this port (0: any "
        "free port): a session's URL is http://HOST:PORT/mcp/<session id>, with its agent's "
        "token in Authorization: Bearer; printed per session",
    )
    serve.add_argument(
        "--scenario-dir",
        type=directory,
        default=None,
        metavar="DIR",
        help="let OpenEnv clients start the .json scenarios under DIR by path "
        "(initialize{scenario_path}, relative to DIR) and list them by split (its folders) "
        "with OpenEnv's Task API; default: registered scenario ids only",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also accept browser pages of this origin (scheme://host[:port]; repeatable). "
        "Default: the server's own origins, and clients that send no Origin",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="also answer to this name in the Host header (HOST: any port, or HOST:PORT; "
        "repeatable). Default: the bound address; loopback names for a loopback bind; any IP "
        "address and localhost for 0.0.0.0 or ::",
    )
    serve.add_argument(
        "--trace-dir", default="traces", help="where ended sessions' ARE traces are written"
    )
    serve.add_argument(
        "--token",
        default=None,
        help="the admin token, valid for every role of every session (default: "
        "$AREASYNC_TOKEN, else random)",
    )
    serve.add_argument("--oracle", action="store_true", help="run the scenarios' oracle events")
    serve.add_argument(
        "--import-mode",
        choices=[m.value for m in ImportMode],
        default="auto",
        help=IMPORT_MODE_HELP + "; also the default of create_session",
    )
    judge = serve.add_argument_group(
        "judge (Gaia2's LLM judge; are-benchmark run's options)",
        "With them, a JSON scenario imported the benchmark way (--import-mode auto picks it for "
        "every scenario with oracle events, outside --oracle) is prepared exactly as "
        "are-benchmark run prepares it (ARE's preprocess_scenario_from_config: the oracle "
        "pre-run, GraphPerEventJudge, a duration of 1800 s, 420 s for Time scenarios), each "
        "later turn opens only once the judge accepts the previous one (a rejected turn ends "
        "the session), and `ended` carries ARE's verdict: validation.success true or false, "
        "and validation.rationale. A judge that fails ends the session with success false and "
        "the reason in validation.exception. Without them nothing is judged (success null).",
    )
    judge.add_argument(
        "--judge_model",
        default=None,
        metavar="MODEL",
        help=f"the judge's model (default: ARE's {DEFAULT_JUDGE_MODEL})",
    )
    judge.add_argument(
        "--judge_provider",
        default=None,
        metavar="PROVIDER",
        help="the judge model's provider, one of ARE's (local, openai, huggingface...); "
        "required with any --judge_* option (serve has no agent model to share it with)",
    )
    judge.add_argument(
        "--judge_endpoint",
        default=None,
        metavar="URL",
        help="URL of the judge model's endpoint (required with --judge_provider local, e.g. "
        "http://127.0.0.1:8000/v1)",
    )
    serve.add_argument(
        "--lease-timeout",
        type=float,
        default=300.0,
        help="fast mode: wall seconds an agent may hold its turn (default 300)",
    )
    serve.add_argument(
        "--lease-policy",
        choices=["release", "end"],
        default="release",
        help="fast mode: what an expired agent lease does (default: release)",
    )
    serve.add_argument(
        "--max-sessions", type=int, default=64, help="live sessions at most (default 64)"
    )
    serve.add_argument(
        "--memory-limit",
        type=memory_limit,
        default=None,
        metavar="SIZE",
        help="the server's resident memory at which create_session, fork_session and OpenEnv "
        "resets are refused with capacity: 4G, 512M, 75%% (of the machine's memory), or none "
        "(default: 75%% of the machine's memory or its container's limit, whichever is lower)",
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    add_durability_options(serve)
    add_cluster_options(serve)
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="run sessions in N worker processes behind this one (the front: it alone holds "
        "the admin token and accepts connections, then hands each socket to its session's "
        "worker); a worker that dies or whose event loop stays stuck past --tool-budget is "
        "restarted and its sessions restored from their journals. Each worker is confined "
        "by the kernel (Landlock, seccomp, no_new_privs, rlimits: what the kernel has, said "
        "at start-up). Default: one per CPU this process may use (with --ray: N on every "
        "node, default one per CPU of that node, behind the node's host). 0: every session "
        "in this process (with --ray, in each node's host process), unconfined (for "
        "debugging)",
    )
    serve.add_argument(
        "--require-confinement",
        action="store_true",
        help="refuse to start unless the kernel confines every session worker wholly "
        "(Landlock ABI 4 or later and seccomp; with --ray, on every node); refused with one "
        "process (--workers 0)",
    )
    limits = serve.add_argument_group(
        "limits and tuning",
        "ServiceConfig fields (defaults in parentheses; see docs/reference/limits.md)",
    )
    defaults = _service_defaults()
    for name, kind, meaning in SERVE_TUNABLES:
        default = getattr(defaults, name)
        limits.add_argument(
            "--" + name.replace("_", "-"),
            type=kind,
            default=None,
            metavar="N",
            help=f"{meaning} ({default})",
        )
    return parser


# ServiceConfig fields `areasync serve` exposes as --kebab-case options: (field, type, meaning).
SERVE_TUNABLES: list[tuple[str, type, str]] = [
    ("max_connections", int, "authenticated clients server-wide; beyond it the handshake gets 503"),
    (
        "max_pending_hellos",
        int,
        "sockets not yet past hello; when full the oldest idle is closed 4408",
    ),
    ("max_connections_per_session", int, "clients attached to one session"),
    ("max_bodies", int, "requests with a body in flight on a port; beyond it 503"),
    ("max_bodies_per_token", int, "requests with a body in flight per token; beyond it 429"),
    ("gaia2_max_streams", int, "gaia2-cli /events streams open at once; beyond it 503"),
    ("gaia2_streams_per_token", int, "gaia2-cli /events streams per token; beyond it 429"),
    ("gaia2_max_connections", int, "sockets open on the gaia2-cli port; beyond it reset"),
    ("gaia2_sse_lifetime", float, "wall seconds an /events stream lasts, then ends to resume"),
    ("http_idle_timeout", float, "wall seconds a gaia2-cli socket may wait between requests"),
    (
        "keep_ended",
        int,
        "ended sessions kept for replay and their artifacts (each holds its --gaia2-ports "
        "port); beyond it the oldest is discarded",
    ),
    (
        "openenv_idle_timeout",
        float,
        "wall seconds an OpenEnv client (a /ws, or a token's HTTP episode) may send nothing, "
        "then it is reaped",
    ),
    (
        "fork_within",
        float,
        "wall seconds a fork at any cut should take: sessions take snapshots this far apart",
    ),
    (
        "snapshot_overhead",
        float,
        "the most of a session's wall time its snapshots may take (0: none as it runs)",
    ),
    ("max_frame_bytes", int, "largest client frame, in bytes"),
    (
        "max_scenario_bytes",
        int,
        "largest scenario, in bytes of JSON: a --scenario file, or a create_session's inline one",
    ),
    ("max_file_bytes", int, "largest file a session's tools may read (attachment, document)"),
    ("max_call_bytes", int, "largest call_tool or send_user_message frame, in bytes"),
    (
        "max_session_input_bytes",
        int,
        "bytes of input (tool calls, user messages, controls) one session may take in its life",
    ),
    ("max_session_journal_bytes", int, "bytes one session's journal may hold"),
    (
        "max_session_memory_bytes",
        int,
        "bytes of records and stream items one session may hold (weighed: see "
        "docs/topics/security.md)",
    ),
    ("rate", float, "requests per second per connection (token bucket refill)"),
    ("burst", int, "requests a connection may make at once (token bucket size)"),
    ("rate_strikes", int, "rate_limited refusals (forgiven at rate/10 per s), then 4029"),
    ("max_lag", int, "stream items appended while a client's socket does not drain, then 4008"),
    ("handshake_timeout", float, "wall seconds to finish the WebSocket handshake"),
    ("hello_timeout", float, "wall seconds to send hello after the handshake"),
    ("write_timeout", float, "wall seconds a socket may take no bytes, then 4008"),
    ("ping_interval", float, "wall seconds between keepalive pings (unanswered: write_timeout)"),
    ("step_budget", float, "wall seconds of fast-mode steps between hand-outs to subscribers"),
    ("control_budget", float, "wall seconds a long jump/tick runs between yields"),
    ("max_ticks", int, "ticks one tick{n} may run; more is refused (split it)"),
    ("max_jump", float, "simulated seconds one jump may move the clock; more is refused"),
    (
        "tool_budget",
        float,
        "wall seconds one tool call or event may hold the server; then it is stopped "
        "(tool_budget_exceeded)",
    ),
    ("max_listing", int, "directory entries one tool call may list (tree, ls); more is refused"),
    ("max_files_created", int, "files and directories a session's tools may create"),
    ("shutdown_timeout", float, "wall seconds sessions get to stop at shutdown, then forced"),
]


def _service_defaults() -> Any:
    from areasync.service.config import ServiceConfig

    return ServiceConfig()


def _cmd_bench(args: argparse.Namespace) -> int:
    print(
        "usage: areasync bench run|judge|gaia2-run [are-benchmark's options] | areasync bench "
        "report OUTPUT_DIR (see --help)",
        file=sys.stderr,
    )
    return 2


def _cmd_schema(args: argparse.Namespace) -> int:
    from areasync.protocol.schema import render_schema

    sys.stdout.write(render_schema())
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    import logging
    import os
    from pathlib import Path

    from areasync.policies import LeasePolicy
    from areasync.protocol.frames import Mode
    from areasync.service.config import ServiceConfig

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.log_level != "debug":
        # ARE narrates scenario registration and every run at INFO: keep the banner readable.
        logging.getLogger("are").setLevel(logging.WARNING)
    try:
        config = ServiceConfig(
            host=args.host,
            port=args.port,
            gaia2_port=args.gaia2_port,
            gaia2_ports=args.gaia2_ports,
            scenario_dir=args.scenario_dir,
            mcp_port=args.mcp_port,
            allow_origins=tuple(args.allow_origin),
            allow_hosts=tuple(args.allow_host),
            admin_token=args.token or os.environ.get("AREASYNC_TOKEN") or None,
            trace_dir=Path(args.trace_dir) if args.trace_dir else None,
            mode=Mode(args.mode or _default_mode(args.scenario)),
            speed=args.speed,
            oracle=args.oracle,
            import_mode=ImportMode(args.import_mode),
            lease_timeout=args.lease_timeout,
            lease_policy=LeasePolicy(args.lease_policy),
            max_sessions=args.max_sessions,
            **_memory_limit(args.memory_limit),
            judge_model=args.judge_model,
            judge_provider=args.judge_provider,
            judge_endpoint=args.judge_endpoint,
            state_dir=Path(args.state_dir) if args.state_dir else None,
            durability=args.durability,
            retention=args.retention,
            seed=args.seed,
            **{
                name: getattr(args, name)
                for name, _, _ in SERVE_TUNABLES
                if getattr(args, name) is not None
            },
        )
    except ValueError as exc:
        print(f"areasync serve: {exc}", file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 0:
        print("areasync serve: --workers is a count of processes: 0 or more", file=sys.stderr)
        return 2
    workers = worker_count(args.workers)
    if args.require_confinement and not workers.count:
        print(
            "areasync serve: --require-confinement confines session worker processes; with "
            "--workers 0 every session runs in one process, unconfined: give --workers N "
            "(or leave it out), or leave out --require-confinement",
            file=sys.stderr,
        )
        return 2
    # An operator's scenario file too large is refused before anything starts (a front and its
    # workers, or ARE's import): the same line a session's creation would give.
    for source in args.scenario or []:
        if names_a_file(source) and os.path.isfile(source):
            try:
                check_file(source, config.max_scenario_bytes)
            except TooLargeError as exc:
                print(f"areasync serve: cannot create a session: {exc}", file=sys.stderr)
                return 2
    if args.ray:
        from areasync.cluster.cli import serve_cluster

        if workers.one_process is not None:
            print(workers.one_process, flush=True)
        # A count left out is resolved on each node: one worker per CPU of that node.
        return serve_cluster(
            args.ray, config, args.scenario or [], args.workers, args.require_confinement
        )
    if workers.count:
        from areasync.front.boot import boot_fork_server

        boot_fork_server()  # it imports ARE while the front (which imports none) starts below
        from areasync.front.cli import serve_front

        scenarios = args.scenario or ["scenario_tutorial"]
        # The workers' stops, then the pool's kill of what is left (workers/pool.py: STOP_S).
        return serve_front(
            config,
            workers.count,
            scenarios,
            shutdown_deadline(config) + 10.0,
            require_confinement=args.require_confinement,
        )
    assert workers.one_process is not None
    # Imported once the options are known good: a refusal above answers without loading ARE.
    from areasync.service.starting import ServiceError

    failures: list[BaseException] = []
    try:
        anyio.run(_serve, config, args.scenario or ["scenario_tutorial"], workers.one_process)
    except* ServiceError as group:
        # Task groups wrap what fails inside them (nested); report each ServiceError itself.
        failures.extend(_leaves(group))
    for failure in failures:
        print(f"areasync serve: {failure}", file=sys.stderr)
    return 2 if failures else 0


def _memory_limit(given: int | str | None) -> dict[str, Any]:
    """`memory_limit` for ServiceConfig: left out for its default, None for "none"."""
    if given is None:
        return {}
    return {"memory_limit": None if given == "none" else int(given)}


def _default_mode(scenarios: list[str] | None) -> str:
    # The default session is for someone who just typed `make serve`: in fast mode it waits,
    # time standing still, until an agent attaches or the dashboard's Start runs it (realtime
    # would run it to its end, unwatched, 20 s after start-up).
    return "fast" if scenarios is None else "realtime"


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


async def _serve(config: Any, scenarios: list[str], one_process: str) -> None:
    import logging

    from areasync.cli.signals import ShutdownSignals
    from areasync.service import Service
    from areasync.service.fdlimit import raise_open_files_limit
    from areasync.service.gc_policy import settle as settle_gc

    # Every socket is a file descriptor: raise the soft limit to the hard one, and say so.
    log = logging.getLogger("areasync.service")
    limit = raise_open_files_limit()
    if limit is not None:
        before, after = limit
        if after > before:
            log.info("open files limit raised from %d to %d (the hard limit)", before, after)
        # Every socket the ports may hold: authenticated, pending and parked (admission.py),
        # and the gaia2-cli and MCP ports'.
        sockets = config.max_connections + 5 * config.max_pending_hellos
        if config.gaia2_port is not None:
            sockets += config.gaia2_max_connections
        if config.mcp_port is not None:
            sockets += config.max_connections
        if after < sockets + 64:
            log.warning(
                "the open files limit (%d) is below the sockets the ports may hold (%d: "
                "max_connections + 5 x max_pending_hellos + gaia2_max_connections) + 64: "
                "accept() may fail before those limits are reached; raise `ulimit -n`",
                after,
                sockets,
            )

    service = Service(config, scenarios)
    signals = ShutdownSignals(
        saying=(
            "ending sessions, writing traces, closing connections"
            if config.state_dir is None
            else "suspending sessions in their journals, closing connections"
        ),
        answer_within=config.shutdown_timeout,
        shutdown_within=shutdown_deadline(config),
    )
    signals.install()
    async with anyio.create_task_group() as tg:

        async def serve(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            await service.serve(task_status=task_status)
            if service.suspended:
                print(
                    f"areasync: {service.suspended} session(s) suspended in their journals; "
                    f"start again with --state-dir {config.state_dir} to resume them",
                    file=sys.stderr,
                    flush=True,
                )
            tg.cancel_scope.cancel()  # served and shut down: stop waiting for a signal

        await tg.start(serve)
        settle_gc()
        # The note is the banner's second line, where a front's says what confines its workers.
        first, rest = service.banner().split("\n", 1)
        print(f"{first}\n{one_process}\n{rest}", flush=True)
        await signals.taken()
        service.shutdown()
        await anyio.sleep_forever()  # until `serve` returns and cancels the group


def shutdown_deadline(config: Any) -> float:
    """Wall seconds a shut-down may take before the process exits anyway: the sessions' stop
    bound, the close handshakes' and a margin (the service bounds each step itself; this is
    the backstop)."""
    return float(
        config.shutdown_timeout + config.shutdown_grace + config.close_timeout + 1.0 + 10.0
    )


def _cmd_run(args: argparse.Namespace) -> int:
    if args.mode == Mode.MANUAL.value:
        print(f"areasync run: {MANUAL_RUN}", file=sys.stderr)
        return 2
    from areasync.bridge.scenarios.loading import ScenarioError
    from areasync.simulation import Simulation

    try:
        sim = Simulation.load(
            args.scenario,
            mode=args.mode,
            oracle=args.oracle,
            speed=args.speed,
            import_mode=args.import_mode,
            max_scenario_bytes=args.max_scenario_bytes,
        )
    except ScenarioError as exc:
        print(f"areasync: {exc}", file=sys.stderr)
        return 2
    show_progress = sys.stderr.isatty() and not args.no_progress and not args.json
    validation = anyio.run(_run_with_progress, sim, show_progress)
    out = sys.stdout
    if args.json:
        import msgspec

        for record in sim.events():
            out.write(msgspec.json.encode(record).decode() + "\n")
    else:
        print_event_table(sim.events(), start=float(sim.env.start_time or 0.0), out=out)
    success = validation is not None and validation.success is True
    # ARE's "no validation" (success None): a benchmark import without a judge, as Gaia2's.
    unjudged = validation is not None and validation.success is None
    verdict = "PASSED" if success else "NOT JUDGED (no judge)" if unjudged else "FAILED"
    print(
        f"\nstate: {sim.state}   ticks: {sim.env.tick_count}   events: {len(sim.events())}   "
        f"validation: {verdict}",
        file=out,
    )
    if validation is not None and validation.exception:
        print(f"validation exception: {validation.exception}", file=out)
    if validation is not None and validation.rationale:
        print(f"rationale: {validation.rationale}", file=out)
    return 0 if success else 1  # non-zero unless validation passed


async def _run_with_progress(sim: Any, show: bool) -> Validation | None:
    if not show or sim.env.duration is None:
        return await sim.run()
    async with anyio.create_task_group() as tg:

        async def draw() -> None:
            while not sim.ended:
                _draw_bar(sim, sys.stderr)
                await anyio.sleep(0.1)

        tg.start_soon(draw)
        result = await sim.run()
        _draw_bar(sim, sys.stderr)
        sys.stderr.write("\n")
        tg.cancel_scope.cancel()
    return result


def _draw_bar(sim: Any, out: TextIO, width: int = 40) -> None:
    duration = float(sim.env.duration or 1.0)
    elapsed = max(0.0, sim.now - float(sim.env.start_time or 0.0))
    fraction = min(1.0, elapsed / duration)
    filled = int(fraction * width)
    out.write(
        f"\r[{'#' * filled}{'.' * (width - filled)}] {elapsed:8.1f}/{duration:.0f} s simulated"
    )
    out.flush()


def print_event_table(records: Sequence[Any], *, start: float, out: TextIO) -> None:
    """The event log as a fixed-width table: time since start, type, app.function, args, result."""
    header = f"{'t (s)':>9}  {'type':<10} {'app.function':<44} {'args / result'}"
    print(header, file=out)
    print("-" * len(header), file=out)
    for record in records:
        where = f"{record.app or '-'}.{record.function or '-'}"
        detail = _short(record.args)
        if record.exception:
            detail += f"  !! {record.exception}"
        elif record.return_value is not None:
            detail += f"  -> {_short(record.return_value)}"
        print(
            f"{record.time - start:>9.1f}  {record.event_type:<10} {where:<44} {detail}", file=out
        )


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
