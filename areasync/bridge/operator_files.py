"""Files the operator hands areasync - a scenario, a dataset, a trace - and the limit on them.

Rule: a file the operator names on a command line (`areasync run FILE`, `areasync serve
--scenario FILE`, `areasync bench run -d DIR`) is read on the operator's behalf under the
operator's limit, `max_scenario_bytes` (`--max-scenario-bytes` on each of those commands),
never under a session's sandbox limits: `max_file_bytes` bounds what an agent's tools may
read, and a Gaia2-sized world is larger than any attachment. Agents cannot name such a file (a
client's `create_session` names a registered id or sends JSON text, held to the server's
`max_scenario_bytes` when admitted). The size is checked before anything is read (by `serve`,
before it starts anything); too big is one line: the file, its size, the limit and the flag that
raises it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from areasync.bridge.scenarios.vetting import MAX_JSON_BYTES, ScenarioError

# What `areasync run` and `areasync bench` read by default: the most scenario JSON areasync
# parses (`scenarios/vetting.py`); `areasync serve` has its own default (ServiceConfig), since it
# also bounds the JSON clients send.
DEFAULT_MAX_SCENARIO_BYTES = MAX_JSON_BYTES
FLAG = "--max-scenario-bytes"


class TooLargeError(ScenarioError):
    """An operator's file is above the operator's limit; nothing was read."""


def too_large(what: str, size: int, limit: int) -> str:
    """The one line that refuses `what` (`size` bytes) above `limit`."""
    return (
        f"{what} is {size} bytes, above the {limit}-byte limit for scenario files "
        f"(max_scenario_bytes); raise it with {FLAG} N"
    )


def names_a_file(source: object) -> bool:
    """Whether a scenario `source` names a JSON file (a path, or a string ending in `.json`
    that is not JSON text itself), as `load_scenario` reads it."""
    return isinstance(source, os.PathLike) or (
        isinstance(source, str) and source.endswith(".json") and not source.lstrip().startswith("{")
    )


def check_file(path: str | os.PathLike[str], limit: int, what: str | None = None) -> None:
    """Raise TooLargeError if the file at `path` is larger than `limit` bytes."""
    size = os.stat(path).st_size
    if size > limit:
        raise TooLargeError(too_large(what or f"scenario file {os.fspath(path)!r}", size, limit))


def dataset_files(root: str | os.PathLike[str]) -> Iterator[Path]:
    """The files of a dataset that ARE may read as scenarios: `root` itself if it is a file
    (a JSONL of trace references), else every `.json` under it (`DIR/<config>/<split>/`), in
    name order."""
    path = Path(root)
    if not path.is_dir():
        yield path
        return
    yield from sorted(p for p in path.rglob("*.json") if p.is_file())


def check_dataset(root: str | os.PathLike[str], limit: int) -> None:
    """Raise TooLargeError for the first file of the dataset at `root` above `limit` bytes."""
    for path in dataset_files(root):
        check_file(path, limit, f"dataset file {str(path)!r}")
