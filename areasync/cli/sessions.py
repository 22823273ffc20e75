"""`areasync session create|stop|fork|list`: a running server's sessions, with its admin token.

    areasync session create --url ws://127.0.0.1:8765 --token T scenario_tutorial --mode fast
    areasync session stop --url ws://127.0.0.1:8765 --token T SESSION_ID
    areasync session fork --url ws://127.0.0.1:8765 --token T SESSION_ID --at-seq 40
    areasync session list --url ws://127.0.0.1:8765 --token T

Each prints JSON on stdout (create and fork: the new session's id, its URL and a token per
role). The token
defaults to $AREASYNC_TOKEN, as `areasync serve`'s does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from areasync.protocol.frames import ImportMode, Mode

MODES = [m.value for m in Mode]
IMPORT_MODES = [m.value for m in ImportMode]


def add_session_parser(sub: Any) -> None:
    """Add `session` and its commands to the `areasync` command's subparsers."""
    session = sub.add_parser(
        "session",
        help="create, stop or list a running server's sessions (admin token)",
        description="Manage the sessions of a running `areasync serve` with its admin token.",
    )
    commands = session.add_subparsers(dest="session_command", required=True)
    create = commands.add_parser("create", help="create a session; prints its URL and tokens")
    stop = commands.add_parser("stop", help="stop a session; prints its validation and trace")
    fork = commands.add_parser(
        "fork", help="a new session replayed from another up to a seq or time; prints as create"
    )
    listing = commands.add_parser("list", help="list the sessions (GET /api/sessions)")
    for parser in (create, stop, fork, listing):
        parser.add_argument(
            "--url", default="ws://127.0.0.1:8765", help="the server (default: %(default)s)"
        )
        parser.add_argument(
            "--token",
            default=os.environ.get("AREASYNC_TOKEN"),
            help="the server's admin token (default: $AREASYNC_TOKEN)",
        )
    create.add_argument(
        "scenario", help="a registered scenario id, or an ARE/Gaia2 JSON file (sent inline)"
    )
    create.add_argument("--mode", choices=MODES, default="realtime", help="clock mode")
    create.add_argument("--speed", type=float, default=1.0, help="realtime speed")
    create.add_argument("--oracle", action="store_true", help="run the scenario's oracle events")
    create.add_argument(
        "--import-mode",
        choices=IMPORT_MODES,
        default=None,
        help="how a JSON scenario is imported (default: the server's)",
    )
    stop.add_argument("session_id", help="the session to stop")
    fork.add_argument("session_id", help="the session to fork")
    fork.add_argument(
        "--at-seq", type=int, default=None, help="cut where its stream had reached this seq"
    )
    fork.add_argument(
        "--at-time", type=float, default=None, help="cut before anything past this simulated time"
    )


def run_session(args: argparse.Namespace) -> int:
    """Run `areasync session ...`; the process exit status."""
    from areasync.client import AreasyncError

    prog = f"areasync session {args.session_command}"
    if not args.token:
        print(
            f"{prog}: no token: pass --token (the server's admin token) or set AREASYNC_TOKEN",
            file=sys.stderr,
        )
        return 2
    try:
        source = _source(args.scenario) if args.session_command == "create" else {}
        result = anyio.run(_run, args, source)
    except (AreasyncError, ValueError, OSError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2, default=str))
    return 0


def _source(scenario: str) -> dict[str, str]:
    """create_session's scenario field: a file's JSON is sent inline, anything else is an id."""
    path = Path(scenario)
    if scenario.endswith(".json") or path.is_file():
        return {"scenario_json": path.read_text()}
    return {"scenario": scenario}


async def _run(args: argparse.Namespace, source: dict[str, str]) -> Any:
    import msgspec

    from areasync.client import admin_url, connect, list_sessions

    if args.session_command == "list":
        return msgspec.to_builtins(await list_sessions(args.url, token=args.token))
    url = await admin_url(args.url, token=args.token)
    async with connect(url, role="admin", token=args.token, reconnect=False) as admin:
        if args.session_command == "stop":
            return msgspec.to_builtins(await admin.stop_session(args.session_id))
        if args.session_command == "fork":
            forked = await admin.fork_session(
                args.session_id, at_seq=args.at_seq, at_time=args.at_time
            )
            return msgspec.to_builtins(forked)
        created = await admin.create_session(
            **source,
            mode=args.mode,
            speed=args.speed,
            oracle=args.oracle,
            import_mode=args.import_mode,
        )
        return msgspec.to_builtins(created)
