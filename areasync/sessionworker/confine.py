"""What a session worker may do once the kernel confines it (`areasync/workers/confine.py`).

A session worker runs agents' tool calls in ARE's apps: hostile code may run in it. Its pool
applies this confinement to each worker process as it starts (`workers/worker.py`), after
the fork and once it holds its channels, before its handlers exist and before any thread
runs; nothing in the process can lift it afterwards. The rule:

* **Read:** Python, areasync and ARE (`confine.runtime_paths()`), the operator's `--scenario`
  JSON files, and its own `/proc/<pid>/` (its memory ceiling reads `statm`). Nothing else:
  no other process's `/proc/<pid>/` (the front's environment), no home directory, no state
  dir's `admin-token`.
* **Write:** its journals (`STATE_DIR/sessions/`), its busy records (`STATE_DIR/busy/`,
  `busy.py`), the trace directory, and its own temp dir under the front's `tmp_under`, where
  ARE's file-system apps make their sandboxes (`bridge.sandbox.paths.own_are_sandboxes`).
  Never the state dir itself.
* **Network:** none: its connections reach it already accepted, over its side channel. With
  a judge (`--judge_endpoint`/`--judge_provider`), TCP to the judge's port only, and UDP for
  name resolution when the endpoint is named by a host name.
* **Limits:** `MEMORY_BYTES` of address space; descriptors enough for every connection and
  session a worker may hold (`files_for`), within the hard limit it inherited.

`--require-confinement` refuses to start where the kernel cannot apply all of it; without it
a worker applies what the kernel has and the front's start-up line says what was left out.
"""

from __future__ import annotations

import resource
from collections.abc import Sequence
from pathlib import Path

import msgspec

from areasync.service.config import ServiceConfig
from areasync.sessionworker.busy import BUSY_DIR
from areasync.workers.confine import Confinement, endpoint_reach, session_worker_confinement

__all__ = ["MEMORY_BYTES", "files_for", "session_confinement", "writable_dirs"]

# A bound on a runaway allocation, far above what a worker holds (docs/topics/performance.md),
# not a budget.
MEMORY_BYTES = 16 << 30
# Descriptors beyond its sockets: journals, ARE's files, the interpreter's own.
_SPARE_FILES = 1024


def writable_dirs(config: ServiceConfig, state_dir: Path) -> tuple[Path, ...]:
    """The directories a session worker writes: its journals, its busy records and the trace
    directory (absolute). Each must exist before a worker confines itself (`make_dirs`)."""
    dirs = [state_dir / "sessions", state_dir / BUSY_DIR]
    if config.trace_dir is not None:
        dirs.append(config.trace_dir)
    return tuple(path.resolve() for path in dirs)


def files_for(config: ServiceConfig) -> int:
    """The descriptors a worker may hold: every connection a front may hand it, a journal per
    session, and `_SPARE_FILES`; at most the hard limit the worker inherited."""
    wanted = config.max_connections + 2 * config.max_sessions + _SPARE_FILES
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def session_confinement(
    config: ServiceConfig,
    state_dir: Path,
    tmp_under: Path,
    *,
    readable: Sequence[Path] = (),
    required: bool = False,
) -> Confinement:
    """The confinement of the session workers of a front serving `config` with journals in
    `state_dir` (module docstring); `readable`: the operator's scenario files."""
    ports: tuple[int, ...] = ()
    resolve = False
    if config.judge is not None:
        port, resolve = endpoint_reach(config.judge_endpoint)
        ports = (port,)
    journals, *others = writable_dirs(config, state_dir)
    spec = session_worker_confinement(
        str(journals),
        tuple(str(path) for path in others),
        str(tmp_under),
        connect_ports=ports,
        required=required,
    )
    return msgspec.structs.replace(
        spec,
        read_only=tuple(str(path.resolve()) for path in readable),
        datagrams=resolve,
        memory_bytes=MEMORY_BYTES,
        files=files_for(config),
        own_proc=True,
    )
