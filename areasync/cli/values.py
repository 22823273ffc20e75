"""The argparse types of the `areasync` command's options: each value checked as it is parsed.

A bad value is refused by argparse before anything starts (a front, its workers, ARE's import),
in one line naming the flag and saying what it accepts. The durability options' types are in
`durable.py`, beside those options.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from areasync.service.ports import is_port, port_range_problems

__all__ = ["directory", "memory_limit", "port_number", "port_range", "positive_bytes"]


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
