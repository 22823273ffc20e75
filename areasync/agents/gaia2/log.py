"""`$GAIA2_STATE_DIR/events.jsonl`: each command's action, as upstream's CLIs log it.

Why: upstream's CLIs append one line per successful command to `events.jsonl` in the state
directory a runtime gives them (`GAIA2_STATE_DIR`), and tag it with `GAIA2_EVENT_ID` when set
(upstream's replay and daemon set it before each command, to find an oracle event's return
value by its id). A runtime or a grader written for gaia2-cli reads that file. Here the
session's own stream and trace are the record the judge reads; this file is the runtime's copy
in upstream's format, written only when `GAIA2_STATE_DIR` is set:

    {"t": simulated seconds, "app": the session's app name, "fn": ARE's function,
     "args": its arguments, "w": whether the command writes, "ret": ARE's value,
     "event_id": GAIA2_EVENT_ID (only when set)}

A failed command logs nothing (upstream's fail before they log). Appends are serialized by an
exclusive lock on `events.lock` beside the file, as upstream's are, so concurrent commands
never interleave a line. The directory's other contents upstream keeps there (a JSON state
file per app, `filesystem/` for cloud-drive) are not written: the session holds the apps'
state, and cloud-drive acts on the session's own sandbox.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

STATE_DIR: Final = "GAIA2_STATE_DIR"
EVENT_ID: Final = "GAIA2_EVENT_ID"


def entry(
    app: str,
    function: str,
    args: Mapping[str, Any],
    ret: Any,
    write: bool,
    time: float | None,
    event_id: str | None,
) -> dict[str, Any]:
    """One line of `events.jsonl` (module docstring)."""
    line: dict[str, Any] = {
        "t": time,
        "app": app,
        "fn": function,
        "args": dict(args),
        "w": write,
        "ret": ret,
    }
    if event_id:
        line["event_id"] = event_id
    return line


def append(state_dir: str, line: dict[str, Any]) -> None:
    """Append `line` to `state_dir/events.jsonl` under the lock (OSError if it cannot)."""
    folder = Path(state_dir)
    text = json.dumps(line) + "\n"
    with open(folder / "events.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            fd = os.open(folder / "events.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
