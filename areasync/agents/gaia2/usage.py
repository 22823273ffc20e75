"""A command line read as upstream's Click groups read it: options, help, and usage errors.

Why: upstream's app CLIs are Click groups, so an agent that types a wrong command gets Click's
answer (`Usage: ...`, `Try 'calendar get-event --help' for help.`, `Error: Missing option
'--event-id'.`, exit status 2) and `--help` prints Click's help page. These commands answer the
same way, from the command table (`commands.py`), without Click (a command imports
nothing but the standard library).

Sans-I/O: `parse` returns ARE's arguments or raises `UsageError`, `help_page` returns text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from areasync.agents.gaia2.commands import CLIS, HELP, Command, Kind, Option

USAGE_STATUS: Final = 2  # Click's exit status for a usage error
_HELP_LINE: Final = ("--help", "Show this message and exit.")


class UsageError(Exception):
    """A command line upstream's Click would refuse: `str()` is Click's whole message."""

    def __init__(self, message: str, cli: str, command: Command | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.cli = cli
        self.command = command

    def __str__(self) -> str:
        where = self.cli if self.command is None else f"{self.cli} {self.command.name}"
        usage = f"[OPTIONS]{'' if self.command else ' COMMAND [ARGS]...'}"
        return f"Usage: {where} {usage}\nTry '{where} --help' for help.\n\nError: {self.message}"


def wants_help(words: Sequence[str]) -> bool:
    return "--help" in words


def parse(cli: str, command: Command, words: Sequence[str]) -> dict[str, Any]:
    """ARE's arguments for `command` from its option `words`: every option given, and
    upstream's default for each one not given (None: not passed, ARE's own applies)."""
    by_flag = {flag: option for option in command.options for flag in option.flags}
    given: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--") or word == "--":
            raise UsageError(f"Got unexpected extra argument ({word})", cli, command)
        flag, eq, inline = word.partition("=")
        option = by_flag.get(flag)
        if option is None:
            raise UsageError(f"No such option: {flag}{_maybe(flag, by_flag)}", cli, command)
        if option.kind is Kind.FLAG:
            if eq:
                raise UsageError(f"Option '{flag}' does not take a value.", cli, command)
            given[option.arg] = True
        elif eq:
            given[option.arg] = _value(option, flag, inline, cli, command)
        elif i + 1 < len(words):
            i += 1
            given[option.arg] = _value(option, flag, words[i], cli, command)
        else:
            raise UsageError(f"Option '{flag}' requires an argument.", cli, command)
        i += 1
    for option in command.options:
        if option.arg in given:
            continue
        if option.required:
            raise UsageError(f"Missing option '{option.flags[0]}'.", cli, command)
        if option.default is not None:
            given[option.arg] = option.default
    return {o.arg: given[o.arg] for o in command.options if o.arg in given}  # upstream's order


def _maybe(flag: str, by_flag: dict[str, Option]) -> str:
    close = sorted(f for f in by_flag if f.startswith(flag[:4]))
    return f" Did you mean {close[0]}?" if close else ""


def _value(option: Option, flag: str, word: str, cli: str, command: Command) -> Any:
    kind = option.kind
    if kind is Kind.INT or kind is Kind.FLOAT:
        try:
            return int(word) if kind is Kind.INT else float(word)
        except ValueError:
            name = "integer" if kind is Kind.INT else "float"
            raise UsageError(
                f"Invalid value for '{flag}': {word!r} is not a valid {name}.", cli, command
            ) from None
    if kind is Kind.JSON or kind is Kind.LIST:
        try:
            return json.loads(word)
        except ValueError:
            if kind is Kind.LIST:  # upstream's fallback: words separated by commas
                return [part.strip() for part in word.split(",")]
            raise UsageError(
                f"Invalid value for '{flag}': not JSON: {word!r} (e.g. '[\"a\", \"b\"]')",
                cli,
                command,
            ) from None
    return word


# -- help pages, Click's layout ---------------------------------------------------------


def help_page(cli: str, command: Command | None = None) -> str:
    """`cli --help`, or `cli COMMAND --help`."""
    if command is None:
        rows = [(c.name, c.help) for c in sorted(CLIS[cli], key=lambda c: c.name)]
        return (
            f"Usage: {cli} [OPTIONS] COMMAND [ARGS]...\n\n  {HELP[cli]}\n\n"
            f"Options:\n{_table([_HELP_LINE])}\n\nCommands:\n{_table(rows)}\n"
        )
    rows = [(_flags(o), _option_help(o)) for o in command.options]
    return (
        f"Usage: {cli} {command.name} [OPTIONS]\n\n  {command.help}\n\n"
        f"Options:\n{_table([*rows, _HELP_LINE])}\n"
    )


def _flags(option: Option) -> str:
    names = ", ".join(option.flags)
    if option.kind is Kind.FLAG:
        return names
    metavar = {Kind.INT: "INTEGER", Kind.FLOAT: "FLOAT"}.get(option.kind, "TEXT")
    return f"{names} {metavar}"


def _option_help(option: Option) -> str:
    return f"{option.help}  [required]" if option.required else option.help


def _table(rows: Sequence[tuple[str, str]]) -> str:
    width = max(len(left) for left, _ in rows) + 2
    return "\n".join(f"  {left:<{width}}{right}".rstrip() for left, right in rows)
