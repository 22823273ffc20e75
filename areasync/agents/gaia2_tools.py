"""gaia2-cli's ten app CLIs, and a wait, as commands acting on an areasync session.

Why: gaia2-cli's runtimes (OpenClaw, Hermes, mini-swe) give their agent one tool, a shell, with
ten app CLIs on its `PATH`: `calendar contacts emails messages chats rent-a-flat city cabs
shopping cloud-drive`. Upstream's CLIs act on JSON state files in a container; these act on a
live areasync session, as its agent, through the session's gaia2-cli adapter (`POST
/call_tool`), so the same agent prompt and the same shell commands drive ARE's own apps on the
session's clock, judged by ARE. `areasync gaia2-cli bin DIR` writes the eleven commands into
DIR (`PATH=DIR:$PATH`); each is `areasync gaia2-cli <name> ...`.

The commands keep upstream's names, subcommands and options: `calendar add-event --title T
--start-datetime "2024-10-16 12:00:00" ...`, `emails send-email --recipients '["a@b.c"]'
--subject S --content C`. A subcommand is the ARE function's name in kebab case (upstream's
rule, `gaia2_cli.daemon.cli_executor.build_cli_cmd`), but for the few upstream renamed
(`_RENAMED`); an option is an argument's name in kebab case; a value is JSON when the ARE
argument is a list or a dict (upstream's CLIs take JSON there), a number when it is one, and
an argument of type bool is a flag (`--saved-only`) or takes true/false. Each command finds its
app among the session's apps by upstream's names for it (canonical and aliases,
`gaia2_cli.app_registry`), and its arguments' types from the session's tools (`GET /tools`).

Output: upstream's `json_output` (JSON, indent 2) of what ARE's tool returned; where upstream
prints a status around it, so does the command (`_STATUS`: `{"status": "success", "event_id":
...}`, emails' `{"status": "ok", "email_id": ...}`, cabs' `{"status": "success", "data":
...}`). What upstream's CLIs compute themselves is not reproduced: shopping's `checkout` has no
`total`, `get-discount-code-info` prints ARE's value, cloud-drive's paths are the ones given,
and reads print ARE's objects as they are. A failure is upstream's
`cli_error`: its message on stderr, exit status 1; a session that cannot be reached, exit 2.

`gaia2-wait` is the primitive upstream lacks: it waits on the session's virtual clock
(`SystemApp__wait_for_notification`, `--timeout` simulated seconds, the agent's turn handed
back meanwhile) and prints what the agent was told meanwhile; `gaia2-wait --idle` says the
agent is done for now, without waiting.

Environment, as upstream's runtimes set it: `GAIA2_ADAPTER_URL`, the session's adapter URL with
the agent's token (`http://HOST:PORT/gaia2/<agent token>`: areasync's addition, since an
areasync adapter serves many sessions), else `GAIA2_ADAPTER_PORT` (upstream's: the adapter at
`http://127.0.0.1:PORT`, which acts as the user: its commands can read, not act).
Stdlib only: a command imports nothing of ARE or of the server.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Final

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

# Upstream's subcommands that are not the function's name in kebab case.
_RENAMED: Final[dict[tuple[str, str], str]] = {
    ("calendar", "add-event"): "add_calendar_event",
    ("calendar", "get-event"): "get_calendar_event",
    ("calendar", "delete-event"): "delete_calendar_event",
    ("calendar", "get-events"): "get_calendar_events_from_to",
    ("calendar", "today-events"): "read_today_calendar_events",
    ("calendar", "get-events-by-tag"): "get_calendar_events_by_tag",
    ("shopping", "search-products"): "search_product",
}

# Upstream's commands that print a status around the result: (status, key, arg), printed as
# {"status": status, key: ARE's return value}, or the argument `arg` when one is named, or the
# return value's own keys when `key` is "*". Every other command prints the return value.
_STATUS: Final[dict[tuple[str, str], tuple[str, str, str | None]]] = {
    **{
        ("rent-a-flat", f): ("success", "data", None)
        for f in (
            "list_all_apartments",
            "get_apartment_details",
            "list_saved_apartments",
            "search_apartments",
        )
    },
    **{
        ("cabs", f): ("success", "data", None)
        for f in (
            "get_quotation",
            "list_rides",
            "order_ride",
            "get_current_ride_status",
            "get_ride",
            "get_ride_history",
            "get_ride_history_length",
        )
    },
    ("cabs", "user_cancel_ride"): ("success", "message", None),
    **{
        ("city", f): ("success", "data", None)
        for f in ("get_crime_rate", "get_api_call_count", "get_api_call_limit")
    },
    ("calendar", "add_calendar_event"): ("success", "event_id", None),
    ("calendar", "delete_calendar_event"): ("success", "message", None),
    ("contacts", "add_new_contact"): ("success", "contact_id", None),
    ("contacts", "edit_contact"): ("success", "message", None),
    ("contacts", "delete_contact"): ("success", "message", None),
    **{
        ("emails", f): ("ok", "email_id", None)
        for f in ("send_email", "forward_email", "reply_to_email", "move_email", "delete_email")
    },
    ("emails", "download_attachments"): ("ok", "downloaded", None),
    ("shopping", "list_all_products"): ("success", "*", None),
    ("shopping", "get_product_details"): ("success", "product", None),
    ("shopping", "search_product"): ("success", "products", None),
    ("shopping", "remove_from_cart"): ("success", "item_id", None),
    ("shopping", "list_cart"): ("success", "cart", None),
    ("shopping", "checkout"): ("success", "order_id", None),
    ("shopping", "get_all_discount_codes"): ("success", "discount_codes", None),
    ("shopping", "list_orders"): ("success", "orders", None),
    ("shopping", "get_order_details"): ("success", "order", None),
    ("shopping", "cancel_order"): ("success", "order_id", None),
    **{
        ("cloud-drive", f): ("success", "path", "path")
        for f in ("mkdir", "makedirs", "rm", "rmdir")
    },
}

_WAIT_TOOL: Final = "SystemApp__wait_for_notification"
_TIMEOUT_S: Final = 3600.0  # wall seconds one request may take (a long wait included)


class ToolError(Exception):
    """What the command failed on, said as upstream's `cli_error` says it; `status`: exit."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# -- the adapter --------------------------------------------------------------------------


def adapter_url(environ: dict[str, str]) -> str:
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


def parse_options(words: Sequence[str], types: dict[str, str | None]) -> dict[str, Any]:
    """`--kebab-name value` words as ARE arguments, converted by each argument's type."""
    args: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--"):
            raise ToolError(f"unexpected argument {word!r}: options are --name value")
        name, eq, inline = word[2:].partition("=")
        arg = name.replace("-", "_")
        if arg not in types:
            known = ", ".join("--" + a.replace("_", "-") for a in types) or "none"
            raise ToolError(f"no such option --{name}; the options are {known}")
        kind = (types[arg] or "").lower()
        if eq:
            raw: str | None = inline
        elif kind == "bool" and (i + 1 >= len(words) or words[i + 1].startswith("--")):
            raw = None  # a flag
        elif i + 1 < len(words):
            i += 1
            raw = words[i]
        else:
            raise ToolError(f"option --{name} needs a value")
        args[arg] = _value(raw, kind, name)
        i += 1
    return args


def _value(raw: str | None, kind: str, name: str) -> Any:
    if raw is None:
        return True
    if kind == "bool":
        if raw.lower() in ("true", "1", "yes"):
            return True
        if raw.lower() in ("false", "0", "no"):
            return False
        raise ToolError(f"--{name} is true or false, not {raw!r}")
    if kind.startswith(("list", "dict")) or kind.startswith(("tuple", "set")):
        try:
            return json.loads(raw)
        except ValueError:
            raise ToolError(f'--{name} takes JSON ({kind}), e.g. \'["a", "b"]\'') from None
    if kind in ("int", "float"):
        try:
            return int(raw) if kind == "int" else float(raw)
        except ValueError:
            raise ToolError(f"--{name} takes a number ({kind}), not {raw!r}") from None
    return raw


def app_tools(cli: str, tools: list[dict[str, Any]]) -> tuple[str, dict[str, dict[str, Any]]]:
    """The session's app for `cli`, and its tools by function name."""
    names = APPS[cli]
    by_app: dict[str, dict[str, dict[str, Any]]] = {}
    for tool in tools:
        app, _, function = str(tool["name"]).partition("__")
        by_app.setdefault(app, {})[function] = tool
    for name in names:
        if name in by_app:
            return name, by_app[name]
    raise ToolError(
        f"{cli}: this session has no such app (its apps are {', '.join(sorted(by_app))})"
    )


def run_app(cli: str, words: Sequence[str], base: str) -> Any:
    """`cli words...` on the session at `base`: what it prints."""
    tools = _call(base, "GET", "/tools")["tools"]
    app, functions = app_tools(cli, tools)
    renamed = {f: c for (x, c), f in _RENAMED.items() if x == cli}
    commands = {renamed.get(f, f.replace("_", "-")): f for f in functions}
    if not words or words[0] in ("-h", "--help", "help"):
        return {"commands": sorted(commands)}
    command, options = words[0], words[1:]
    if command == "schema":
        return [_schema(c, functions[f]) for c, f in sorted(commands.items())]
    function = commands.get(command)
    if function is None:
        raise ToolError(
            f"No such command '{command}'. The commands are: {', '.join(sorted(commands))}"
        )
    types = {arg["name"]: arg.get("type") for arg in functions[function].get("args", [])}
    args = parse_options(options, types)
    answer = _call(base, "POST", "/call_tool", {"app": app, "action": function, "args": args})
    if not answer.get("ok"):
        raise ToolError(str(answer.get("error", "the action failed")))
    return printed(_STATUS.get((cli, function)), answer.get("value"), args)


def printed(status: tuple[str, str, str | None] | None, value: Any, args: dict[str, Any]) -> Any:
    """What a command prints of ARE's `value` (`_STATUS`)."""
    if status is None:
        return value
    word, key, arg = status
    if key == "*" and isinstance(value, dict):
        return {"status": word, **value}
    return {"status": word, key: args.get(arg) if arg is not None else value}


def _schema(command: str, tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "command": command,
        "function": str(tool["name"]).partition("__")[2],
        "description": tool.get("description", ""),
        "parameters": [
            {
                "name": "--" + a["name"].replace("_", "-"),
                "type": a.get("type"),
                "required": a.get("required", True),
                "help": a.get("description"),
            }
            for a in tool.get("args", [])
        ],
    }


def run_wait(words: Sequence[str], base: str) -> Any:
    """`gaia2-wait [--timeout S] | --idle`: what the agent was told while it waited."""
    if list(words) == ["--idle"]:
        _call(base, "POST", "/idle", {})
        return {"status": "idle"}
    timeout = parse_options(words, {"timeout": "float"}).get("timeout", 60.0)
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
        base = adapter_url(env)
        output = run_wait(argv[1:], base) if argv[0] == WAIT else run_app(argv[0], argv[1:], base)
    except ToolError as exc:
        print(exc, file=sys.stderr)
        return exc.status
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
                "areasync.agents.gaia2_tools import main; "
                f'sys.exit(main(sys.argv[1:]))\' {name} "$@"\n'
            )
        os.chmod(path, 0o755)
        written.append(path)
    return written


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
