"""`areasync serve`'s durability options: `--state-dir`, `--durability`, `--retention`, `--seed`.

Apart from `parser.py` so that it stays readable; each option's value is checked by argparse
(`type=`), so a bad one is refused before anything starts, with the flag's name and what it
accepts.
"""

from __future__ import annotations

import argparse
import math

DEFAULT_RETENTION_S = 7 * 86400.0


def durability(text: str) -> str:
    """`every` or `group:MS`, checked (the service parses it again into a `Durability`)."""
    from areasync.service.config import DURABILITY_CHOICES, parse_durability

    try:
        parse_durability(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {DURABILITY_CHOICES}, e.g. --durability group:0; got {text!r}"
        ) from None
    return text


def retention(text: str) -> float:
    """Seconds > 0, with an optional unit: `3600`, `90s`, `30m`, `12h`, `7d`."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    number, scale = text.strip(), 1.0
    if number[-1:].lower() in units:
        number, scale = number[:-1], units[number[-1].lower()]
    try:
        seconds = float(number) * scale
    except ValueError:
        seconds = math.nan
    if not (seconds > 0 and math.isfinite(seconds)):
        raise argparse.ArgumentTypeError(
            "expected a duration > 0: seconds, or a number with a unit s, m, h or d "
            f"(e.g. --retention 7d); got {text!r}"
        )
    return seconds


def seed(text: str) -> int:
    """A whole number 0 <= N < 2**63 (what a journal's `Created` record holds)."""
    from areasync.service.config import SEED_LIMIT

    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = -1
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 0 to 2**63-1 (e.g. --seed 42); got {text!r}"
        )
    return value


def add_durability_options(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group(
        "durability",
        "With --state-dir every session writes a journal there: its creation, every input "
        "(tool calls, user messages, controls) and its end. A request's reply, and any stream "
        "item an input caused, leave the server only once that input is durable. A session "
        "whose journal cannot be written is ended, its clients told why; the others go on.",
    )
    group.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="where session journals (DIR/sessions/) and the admin token (DIR/admin-token, "
        "mode 0600) are kept (default: none, sessions are not journaled)",
    )
    group.add_argument(
        "--durability",
        type=durability,
        default="group:0",
        metavar="every|group:MS",
        help="every: one fdatasync per record; group:MS: records within MS ms share one "
        "(group:0: those arriving while a sync runs share the next). Default group:0",
    )
    group.add_argument(
        "--retention",
        type=retention,
        default=DEFAULT_RETENTION_S,
        metavar="SECONDS",
        help="how long an ended session's journal is kept (seconds, or with a unit s/m/h/d; "
        "default 7d); swept at start-up and periodically",
    )
    group.add_argument(
        "--seed",
        type=seed,
        default=None,
        metavar="N",
        help="every session's seed (its generated ids, its apps' random draws): two servers "
        "given the same --seed and scenario make the same ids, so their traces compare "
        "exactly (default: a random seed per session; a restored session keeps its own)",
    )


def add_cluster_options(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group(
        "cluster (areasync[ray])",
        "With --ray, every node of a Ray cluster runs a host with its own session workers "
        "(--workers N per node, default one per CPU of that node, each confined as on one "
        "machine; --workers 0: its sessions in the host's process) and this process is the "
        "router clients connect to: a session's handshake is redirected (307) to its node. "
        "Needs --state-dir on a directory every node mounts: a lost node's sessions are "
        "restored on the others from their journals there.",
    )
    group.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="the Ray cluster to run on (its GCS address HOST:PORT, or `auto` for the one "
        "this machine belongs to)",
    )
