"""The `areasync` command's parser: the whole argparse tree, built in one place.

`areasync --help`, every command's `--help` and docs/reference/cli.md (`python -m
areasync.reference`) all come from `build_parser`; the commands (`run.py`, `serve.py`,
`schema.py`, `sessions.py`, the agents') only read the namespace it parses. Building it imports
no ARE: a type or a default that needs more imports it when called (`values.py`, `tunables.py`),
so that `areasync --help` and the front process stay lean.

`bench run|judge|gaia2-run|report|aggregate` are not in it: they parse their own arguments
(`bench.py`), so `bench` here is only its line in the help.
"""

from __future__ import annotations

import argparse
from typing import Any

from areasync.agents.cli import add_agent_parser
from areasync.bridge.judge.options import DEFAULT_JUDGE_MODEL
from areasync.bridge.operator_files import DEFAULT_MAX_SCENARIO_BYTES
from areasync.cli.durable import add_cluster_options, add_durability_options
from areasync.cli.sessions import add_session_parser
from areasync.cli.tunables import add_tunable_options
from areasync.cli.values import directory, memory_limit, port_number, port_range, positive_bytes
from areasync.protocol.frames import ImportMode, Mode

__all__ = ["DESCRIPTION", "build_parser", "command_paths", "subcommands"]

DESCRIPTION = "The `areasync` command: run a scenario, print the protocol schema, serve sessions."

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


def build_parser() -> argparse.ArgumentParser:
    """The `areasync` command's argparse tree: a subparser per command, `dest="command"`."""
    parser = argparse.ArgumentParser(prog="areasync", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command")
    _add_run_parser(sub)
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
    _add_serve_parser(sub)
    return parser


def command_paths(parser: argparse.ArgumentParser) -> list[tuple[str, ...]]:
    """Every command of the tree, as the words that name it (`()` for `areasync` itself), each
    before its own subcommands, in the order their help lists them."""
    found: list[tuple[str, ...]] = []

    def walk(node: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, child in subcommands(node).items():
            walk(child, (*path, name))

    walk(parser, ())
    return found


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """`parser`'s subcommands' parsers by name, in their help's order ({} if it has none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices: dict[str, argparse.ArgumentParser] = action.choices
            return choices
    return {}


def _add_run_parser(sub: Any) -> None:
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


def _add_serve_parser(sub: Any) -> None:
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
    add_tunable_options(serve)
