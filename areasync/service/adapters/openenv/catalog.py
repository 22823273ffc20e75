"""Which scenarios an OpenEnv client may start: the registered ids and the operator's directory.

A scenario is named by a client in three ways, each resolved here and nowhere else:

- `initialize{scenario_path}` (the OpenEnv ARE plan's action): a registered scenario id, or a
  `.json` file under the directory the operator named (`--scenario-dir`), given relative to it.
  Never any other file of the server: an absolute path, a `..` that leaves the directory, a
  symbolic link that resolves outside it, anything but a regular `.json` file, or a file above
  `max_scenario_bytes` is refused, saying why; nothing is read then.
- OpenEnv's Task API (`GET <base>/areasync/splits`, `POST <base>/areasync/tasks`...): the split
  `registered` holds the registered ids; each folder of the directory that holds `.json` files
  is a split named by its path relative to the directory (ARE's dataset layout
  `<config>/<split>/<id>.json` gives `execution/validation`; files at its top form the split
  `scenarios`), its tasks the files in name order.
- `reset(split=..., index=...)`, OpenEnv's way to start a task of the Task API.

A file's text then goes through `create_session` as inline JSON: the same vetting, limits and
import as any untrusted scenario. Listing a directory and reading a file are blocking: the
callers run them off the event loop (`anyio.to_thread`).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from areasync.bridge.scenarios.loading import registered_ids
from areasync.service.adapters.openenv.paths import ENV_NAME

REGISTERED = "registered"  # the split of the registered scenario ids
TOP = "scenarios"  # the split of the files at the top of the directory
MAX_FILES = 100_000  # files a listing looks at, at most (a bound on one request's work)


class CatalogError(Exception):
    """A scenario or split that cannot be started or listed; the message says why and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Split(msgspec.Struct, kw_only=True):
    """One of the Task API's splits (OpenEnv normalizes a split to `{name, type}`)."""

    name: str
    type: str  # train | validation | test (OpenEnv's split types)
    num_tasks: int


class Task(msgspec.Struct, kw_only=True):
    """One task: what `initialize{scenario_path}` (or `reset(split, index)`) starts."""

    id: str
    index: int
    split: str
    scenario_path: str


@dataclasses.dataclass(frozen=True, slots=True)
class Catalog:
    """The scenarios of one server: `directory` is the operator's (None: registered ids only)."""

    directory: Path | None
    max_bytes: int

    # -- listing (blocking) -------------------------------------------------------------------

    def splits(self) -> list[Split]:
        files = self._files()
        out = [Split(name=REGISTERED, type="validation", num_tasks=len(registered_ids()))]
        for name, paths in files.items():
            out.append(Split(name=name, type=_split_type(name), num_tasks=len(paths)))
        return out

    def tasks(self, split: str) -> list[Task]:
        if split == REGISTERED:
            paths = registered_ids()
        else:
            found = self._files().get(split)
            if found is None:
                raise CatalogError(self._no_split(split))
            paths = found
        return [
            Task(id=PurePosixPath(p).stem, index=i, split=split, scenario_path=p)
            for i, p in enumerate(paths)
        ]

    def task(self, split: str, index: int) -> Task:
        tasks = self.tasks(split)
        if not 0 <= index < len(tasks):
            raise CatalogError(
                f"split {split!r} has {len(tasks)} tasks: index {index} is not one of them "
                f"(0 to {len(tasks) - 1}; POST <base>/{ENV_NAME}/num_tasks counts them)"
            )
        return tasks[index]

    def _no_split(self, split: str) -> str:
        names = [s.name for s in self.splits()]
        return f"no split {split[:80]!r}: this server's splits are {', '.join(names)}"

    def _files(self) -> dict[str, list[str]]:
        """The directory's `.json` files by split (relative folder), each list in name order."""
        root = self.directory
        if root is None:
            return {}
        found: dict[str, list[str]] = {}
        seen = 0
        for folder, dirs, names in os.walk(root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            relative = PurePosixPath(Path(folder).relative_to(root).as_posix())
            for name in sorted(names):
                if name.startswith(".") or not name.endswith(".json"):
                    continue
                seen += 1
                if seen > MAX_FILES:
                    return found
                split = TOP if str(relative) == "." else str(relative)
                found.setdefault(split, []).append(str(relative / name))
        return dict(sorted(found.items()))

    # -- one scenario (blocking) --------------------------------------------------------------

    def resolve(self, scenario_path: str) -> tuple[str | None, str | None]:
        """(registered id, JSON text) named by `scenario_path`; exactly one is set."""
        if scenario_path in registered_ids():
            return scenario_path, None
        root = self.directory
        if root is None:
            raise CatalogError(
                f"scenario_path {scenario_path[:120]!r} is not a registered scenario id, and this "
                "server names no scenario directory: use a registered id (GET "
                f"<base>/{ENV_NAME}/splits, split {REGISTERED!r}), or start the server with "
                "--scenario-dir DIR to let clients start the .json files under DIR"
            )
        return None, self._read(root, scenario_path)

    def _read(self, root: Path, scenario_path: str) -> str:
        relative = PurePosixPath(scenario_path)
        outside = (
            not scenario_path
            or "\x00" in scenario_path
            or "\\" in scenario_path
            or relative.is_absolute()
            or ".." in relative.parts
        )
        if outside:
            raise CatalogError(
                f"scenario_path {scenario_path[:120]!r} is neither a registered id nor a path "
                "relative to the server's scenario directory (no leading /, no .., forward "
                f"slashes): the tasks of GET <base>/{ENV_NAME}/splits name the files it holds"
            )
        base = root.resolve()
        try:
            target = (base / relative).resolve(strict=True)
        except (OSError, RuntimeError):
            raise CatalogError(
                f"no scenario {scenario_path[:120]!r}: it is neither a registered id nor a file "
                f"under the server's scenario directory (POST <base>/{ENV_NAME}/tasks lists them)"
            ) from None
        if not target.is_relative_to(base) or target.suffix != ".json" or not target.is_file():
            raise CatalogError(
                f"scenario_path {scenario_path[:120]!r} is not a .json file inside the server's "
                "scenario directory (a link that leads out of it is refused): name one of the "
                f"files POST <base>/{ENV_NAME}/tasks lists"
            )
        size = target.stat().st_size
        if size > self.max_bytes:
            raise CatalogError(
                f"scenario {scenario_path[:120]!r} is {size} bytes, above this server's "
                f"{self.max_bytes} (max_scenario_bytes)"
            )
        return target.read_text(encoding="utf-8", errors="replace")


def _split_type(name: str) -> str:
    """OpenEnv's split type for a folder name: its last part when it is one of them."""
    last = PurePosixPath(name).name
    return last if last in ("train", "validation", "test") else "validation"


def as_json(value: Any) -> Any:
    """Structs as plain JSON values."""
    return msgspec.to_builtins(value)
