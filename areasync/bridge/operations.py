"""Whether an app's function writes: ARE's operation type, read off the app's class.

ARE marks each tool method of an app `OperationType.READ` or `WRITE` (its `event_registered`
decorator sets `__operation_type__` on the function, which `functools.wraps` carries to every
wrapper), and its event log keeps it in each action. A stream's `EventRecord` does not carry it;
what needs it (gaia2-cli's `events.jsonl`, whose `w` decides which actions a judge compares)
asks here, by the names a record has: two attribute lookups on the app's class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from are.simulation.types import OperationType


def writes(apps: Mapping[str, Any], app: str, function: str) -> bool:
    """Whether `apps[app].function` is a write (False for an unknown app or function)."""
    instance = apps.get(app)
    if instance is None:
        return False
    method = getattr(type(instance), function, None)
    return getattr(method, "__operation_type__", None) == OperationType.WRITE
