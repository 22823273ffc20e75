"""The server's memory ceiling: no new session or fork once the process holds this much.

Every session holds its records, its stream and its snapshots for its life, and up to
`keep_ended` ended ones are kept for replay: a server admitting sessions up to `max_sessions`
may need more memory than the machine has (docs/reference/limits.md), and a host that swaps
serves every session badly. So admission (`create_session`,
`fork_session`, an OpenEnv reset: all through `SessionRegistry._admit`) reads the process's
resident memory (`/proc/self/statm`: one small read) and refuses with
`capacity` at or above `ServiceConfig.memory_limit` (`areasync serve --memory-limit`), before
anything is built. Sessions already running go on: the per-session bounds (`budget.py`) bound
what each may still grow.

The default is `DEFAULT_FRACTION` of the machine's memory, or of the memory limit of the
control group the server runs in (a container's), whichever is lower: the rest is left to the
kernel's page cache (journals are synced through it), to other processes and to what running
sessions grow by after their admission. Where `/proc` is missing (not Linux) resident memory
cannot be read and nothing is refused; give an explicit limit there anyway for the record.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from areasync.protocol.errors import ErrorCode, ProtocolError

DEFAULT_FRACTION = 0.75
"""The share of the machine's (or the control group's) memory the server may hold by default."""

_STATM = Path("/proc/self/statm")
# Control groups v2, then v1: the memory limit of the group the process runs in.
_CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]i?b?|b)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
MEMORY_LIMIT_FORMS = "a size (4G, 512M, 1073741824), a share of the machine's memory (75%), or none"


def resident_bytes() -> int | None:
    """The process's resident memory, in bytes (None where it cannot be read)."""
    try:
        fields = _STATM.read_text().split()
        return int(fields[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return None


def machine_memory_bytes() -> int | None:
    """The memory this process may use at most: the machine's, or its control group's limit if
    lower (None if neither can be read)."""
    try:
        physical: int | None = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        physical = None
    limits = [physical] if physical else []
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():  # "max" (v2) means none; v1 says none with a huge number
            limits.append(int(text))
    return min(limits) if limits else None


def default_memory_limit() -> int | None:
    """`DEFAULT_FRACTION` of `machine_memory_bytes()` (None if that is unknown)."""
    total = machine_memory_bytes()
    return None if total is None else int(total * DEFAULT_FRACTION)


def parse_memory_limit(text: str) -> int | None:
    """`--memory-limit`'s value in bytes (`MEMORY_LIMIT_FORMS`; none or 0: no ceiling);
    ValueError saying what is accepted otherwise."""
    value = text.strip().lower()
    if value in ("none", "0", ""):
        return None
    if value.endswith("%"):
        try:
            share = float(value[:-1]) / 100
        except ValueError:
            share = float("nan")
        total = machine_memory_bytes()
        if not 0 < share <= 1:
            raise ValueError(f"--memory-limit {text!r}: a share must be from 0% to 100%")
        if total is None:
            raise ValueError(
                f"--memory-limit {text!r}: this machine's memory cannot be read; give a size"
            )
        return int(total * share)
    match = _SIZE.fullmatch(value)
    if match is None:
        raise ValueError(f"--memory-limit must be {MEMORY_LIMIT_FORMS}, got {text!r}")
    number, unit = match.groups()
    return int(float(number) * _UNITS[(unit or "")[:1]])


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def ceiling_refusal(limit: int | None, what: str) -> ProtocolError | None:
    """The `capacity` refusal of `what` (a new session, a fork) when the process's resident
    memory is at or above `limit`; None below it, or with no limit, or where it cannot be read."""
    if limit is None:
        return None
    resident = resident_bytes()
    if resident is None or resident < limit:
        return None
    return ProtocolError(
        ErrorCode.CAPACITY,
        f"the server holds {mib(resident)} of memory, at its ceiling of {mib(limit)} "
        f"(memory_limit; the server's --memory-limit sets it): it starts no {what} until "
        "sessions end and free theirs; stop one with stop_session, or retry later",
    )
