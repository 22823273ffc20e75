"""gaia2-cli's ten app CLIs, and a wait, as commands acting on an areasync session.

Why: gaia2-cli's runtimes (OpenClaw, Hermes, mini-swe) give their agent one tool, a shell, with
ten app CLIs on its `PATH`: `calendar contacts emails messages chats rent-a-flat city cabs
shopping cloud-drive`. Upstream's CLIs act on JSON state files in a container; these act on a
live areasync session, as its agent, through the session's gaia2-cli adapter (`POST
/call_tool`), so the same agent prompt and the same shell commands drive ARE's own apps on the
session's clock, judged by ARE. `areasync gaia2-cli bin DIR` writes the eleven commands into
DIR (`PATH=DIR:$PATH`); each is `areasync gaia2-cli <name> ...`.

The commands are upstream's, as its CLIs (Click groups) document them: each command, its
options (aliases included: emails' `--folder`, cloud-drive's `--path1`) and its defaults are
written down in `commands.py`, with the ARE function it calls. Each CLI finds its app
among the session's apps by upstream's names for it (canonical and aliases,
`gaia2_cli.app_registry`). Upstream's outputs are printed (`shapes.py`): its records'
fields in its order, its status around a write's result, cloud-drive's `cat` and `tree` as
text. A usage error, `--help` and `schema` are Click's (`usage.py`: exit status 2 for a
usage error) and need no session. A failure is upstream's `cli_error`: the app's own message
on stderr (ARE's exception text; cloud-drive's in upstream's words), exit status 1; a session
that cannot be reached, exit 2.

`gaia2-wait` is the primitive upstream lacks: it waits on the session's virtual clock
(`SystemApp__wait_for_notification`, `--timeout` simulated seconds, the agent's turn handed
back meanwhile) and prints what the agent was told meanwhile; `gaia2-wait --idle` says the
agent is done for now, without waiting.

Environment, as upstream's runtimes set it: `GAIA2_ADAPTER_URL`, the session's adapter URL with
the agent's token (`http://HOST:PORT/gaia2/<agent token>`: areasync's addition, since an
areasync adapter serves many sessions), else `GAIA2_ADAPTER_PORT` (upstream's: the adapter at
`http://127.0.0.1:PORT`, which acts as the user: the adapter refuses the app commands there,
saying to use the agent's token).
`GAIA2_STATE_DIR`: each successful command appends upstream's line to `events.jsonl` there,
tagged with `GAIA2_EVENT_ID` when set (`log.py`). A command imports nothing of ARE or of
the server.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any, Final

from areasync.agents.are.results import app_error_text
from areasync.agents.gaia2 import log as gaia2_log
from areasync.agents.gaia2.commands import Command, Kind, command, opt, schema
from areasync.agents.gaia2.shapes import Text
from areasync.agents.gaia2.usage import USAGE_STATUS, UsageError, help_page, parse, wants_help

# Each CLI, and the names its app has in Gaia2 scenarios (upstream's canonical name, aliases).
APPS: Final[dict[str, tuple[str, ...]]] = {
    "calendar": ("CalendarApp", "Calendar"),
    "contacts": ("ContactsApp", "Contacts"),
    "emails": ("EmailClientV2", "EmailClientApp", "Mail", "Emails"),
    "messages": ("MessagingAppV2", "Messages"),
    "chats": ("Chats",),
    "rent-a-flat": ("ApartmentListingApp", "RentAFlat"),
    "city": ("CityApp", "City"),
    "cabs": ("CabApp", "Cabs"),
    "shopping": ("ShoppingApp", "Shopping"),
    "cloud-drive": ("CloudDriveApp", "CloudDrive", "Files", "SandboxLocalFileSystem"),
}
WAIT: Final = "gaia2-wait"
COMMANDS: Final = (*APPS, WAIT)

_WAIT_TOOL: Final = "SystemApp__wait_for_notification"
_TIMEOUT_S: Final = 3600.0  # wall seconds one request may take (a long wait included)


class ToolError(Exception):
    """What the command failed on, said as upstream's `cli_error` says it; `status`: exit."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# -- the adapter --------------------------------------------------------------------------


def adapter_url(environ: Mapping[str, str]) -> str:
    url = environ.get("GAIA2_ADAPTER_URL", "").rstrip("/")
    if url:
        return url
    port = environ.get("GAIA2_ADAPTER_PORT", "")
    if port.isdigit():
        return f"http://127.0.0.1:{port}"
    raise ToolError(
        "no session to act on: set GAIA2_ADAPTER_URL to the session's gaia2-cli adapter URL "
        "with its agent token (http://HOST:PORT/gaia2/<agent token>; `areasync serve "
        "--gaia2-port PORT` prints the user's, create_session returns the agent's token)",
        2,
    )


def _call(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        with opener.open(request, timeout=_TIMEOUT_S) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            answer = json.loads(exc.read())
        except ValueError:
            answer = {}
        raise ToolError(str(answer.get("error") or f"HTTP {exc.code} from the adapter")) from None
    except (OSError, ValueError) as exc:
        raise ToolError(f"cannot reach the session's adapter at {_shown(base)}: {exc}", 2) from None


def _shown(base: str) -> str:
    """`base` without its token (a path segment after /gaia2/), for messages."""
    head, sep, _ = base.partition("/gaia2/")
    return head + (sep + "..." if sep else "")


# -- commands -----------------------------------------------------------------------------


def app_tools(cli: str, tools: list[dict[str, Any]]) -> tuple[str, set[str]]:
    """The session's app for `cli` (by upstream's names for it), and its functions."""
    by_app: dict[str, set[str]] = {}
    for tool in tools:
        app, _, function = str(tool["name"]).partition("__")
        by_app.setdefault(app, set()).add(function)
    for name in APPS[cli]:
        if name in by_app:
            return name, by_app[name]
    raise ToolError(
        f"{cli}: this session has no such app (its apps are {', '.join(sorted(by_app))})"
    )


def run_app(cli: str, words: Sequence[str], environ: Mapping[str, str]) -> Any:
    """`cli words...` on the session `environ` names: what it prints (`Text`, or JSON
    data). Help, `schema` and usage errors need no session, as upstream's need no state."""
    if not words or words[0] == "--help":
        return Text(help_page(cli))
    name, options = words[0], words[1:]
    if name == "schema":
        return schema(cli)
    found = command(cli, name)
    if found is None:
        raise UsageError(f"No such command '{name}'.", cli)
    if wants_help(options):
        return Text(help_page(cli, found))
    args = parse(cli, found, options)
    base = adapter_url(environ)
    app, functions = app_tools(cli, _call(base, "GET", "/tools")["tools"])
    if found.function not in functions:
        raise ToolError(f"{cli} {name}: this session's {app} has no {found.function}")
    if found.guard is not None:
        seen, _ = _act(base, app, found, {"path": args.get("path")}, found.guard.function)
        refusal = found.guard.refusal(seen, args)
        if refusal is not None:
            raise ToolError(refusal)
    value, time = _act(base, app, found, {**args, **dict(found.fixed)})
    if found.then is None:
        output = found.shape(value, args)
    else:
        reads = [_act(base, app, found, a, f)[0] for f, a in found.then.reads(value, args)]
        output = found.then.printed(value, args, reads)
    state_dir = environ.get(gaia2_log.STATE_DIR, "")
    if state_dir:
        line = gaia2_log.entry(
            app, found.function, args, value, found.write, time, environ.get(gaia2_log.EVENT_ID)
        )
        try:
            gaia2_log.append(state_dir, line)
        except OSError as exc:
            raise ToolError(
                f"the action was done, but {gaia2_log.STATE_DIR}={state_dir} cannot take its "
                f"line of events.jsonl ({exc}): point it at a writable directory, or unset it"
            ) from None
    return output


def _act(
    base: str, app: str, found: Command, args: Mapping[str, Any], function: str | None = None
) -> tuple[Any, float | None]:
    """ARE's `function` (the command's by default) called as the agent: (its value, the
    session's simulated time), or ToolError saying why as upstream's CLI says it."""
    function = function or found.function
    body = {"app": app, "action": function, "args": dict(args)}
    answer = _call(base, "POST", "/call_tool", body)
    if answer.get("ok"):
        return answer.get("value"), answer.get("time")
    raise ToolError(_why(f"{app}__{function}", str(answer.get("error")), found, args))


def _why(tool: str, error: str, found: Command, args: Mapping[str, Any]) -> str:
    """The app's own words for a failure (ARE's exception text, as upstream's CLIs print
    theirs); cloud-drive's missing path in upstream's words."""
    text = app_error_text(tool, error)
    for phrase, message in found.errors:
        if phrase in text:
            parent = posixpath.dirname(str(args.get("path", "")).rstrip("/"))
            return message.format_map(_Words(args, parent=parent))
    if len(text) > 1 and text[0] == text[-1] == "'":  # a KeyError's text is its key's repr
        text = text[1:-1]
    return _SANDBOX.sub("", text) or text


# Where ARE's file system keeps a session's files on this machine, as its errors name it: the
# agent sees paths from the drive's root, as upstream's errors show them.
_SANDBOX: Final = re.compile(
    r"[^\s'\"]*are_simulation_sandbox_[^/\s'\"]*(?:/are_simulation_fs_sandbox_[^/\s'\"]*)?"
)


class _Words(dict[str, Any]):
    """A message's words: the command's arguments (one it lacks reads as nothing)."""

    def __init__(self, args: Mapping[str, Any], **more: Any) -> None:
        super().__init__(args, **more)

    def __missing__(self, key: str) -> str:
        return ""


_WAIT: Final = Command(
    "",
    "wait_for_notification",
    "Wait on the session's clock; print what the agent was told meanwhile.",
    (
        opt("--timeout", kind=Kind.FLOAT, default=60.0, help="Simulated seconds, at most."),
        opt("--idle", kind=Kind.FLAG, help="Say the agent is done for now; do not wait."),
        opt(
            "--seen",
            kind=Kind.INT,
            help="With --idle: the seq of the last notification read; one after it keeps "
            "the agent's turn.",
        ),
    ),
)


def run_wait(words: Sequence[str], environ: Mapping[str, str]) -> Any:
    """`gaia2-wait [--timeout S] | --idle`: what the agent was told while it waited."""
    if wants_help(words):
        return Text(help_page(WAIT, _WAIT).replace(f"{WAIT}  [OPTIONS]", f"{WAIT} [OPTIONS]"))
    args = parse(WAIT, _WAIT, words)
    base = adapter_url(environ)
    if args["idle"]:
        seen = args.get("seen")
        _call(base, "POST", "/idle", {} if seen is None else {"seen": seen})
        return {"status": "idle"}
    timeout = args["timeout"]
    before = _call(base, "GET", "/notifications")["lastSeq"]
    answer = _call(
        base,
        "POST",
        "/call_tool",
        {"app": "SystemApp", "action": "wait_for_notification", "args": {"timeout": timeout}},
    )
    if not answer.get("ok"):
        raise ToolError(str(answer.get("error", "the wait failed")))
    told = _call(base, "GET", f"/notifications?after={before}")
    return {"notifications": told["notifications"]}


def main(argv: Sequence[str], environ: dict[str, str] | None = None) -> int:
    """`areasync gaia2-cli <command> ...`: prints its output, returns its exit status."""
    env = dict(os.environ) if environ is None else environ
    if len(argv) == 2 and argv[0] == "bin":
        for path in write_bin(argv[1]):
            print(path)
        return 0
    if not argv or argv[0] not in COMMANDS:
        usage = f"usage: areasync gaia2-cli {{{','.join(COMMANDS)}}} [ARGS...] | bin DIR"
        print(usage, file=sys.stderr)
        return 2
    try:
        output = run_wait(argv[1:], env) if argv[0] == WAIT else run_app(argv[0], argv[1:], env)
    except UsageError as exc:
        print(exc if argv[0] != WAIT else f"Error: {exc.message}", file=sys.stderr)
        return USAGE_STATUS
    except ToolError as exc:
        print(exc, file=sys.stderr)
        return exc.status
    if isinstance(output, Text):
        sys.stdout.write(output.text)
    else:
        print(json.dumps(output, indent=2))
    return 0


def write_bin(directory: str, python: str = sys.executable) -> list[str]:
    """Write each command as an executable script in `directory`: the paths written."""
    os.makedirs(directory, exist_ok=True)
    written = []
    for name in COMMANDS:
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as file:
            file.write(
                f"#!/bin/sh\nexec {_quoted(python)} -c 'import sys; from "
                "areasync.agents.gaia2.tools import main; "
                f'sys.exit(main(sys.argv[1:]))\' {name} "$@"\n'
            )
        os.chmod(path, 0o755)
        written.append(path)
    return written


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
