"""Building a scenario inside its session's sandbox: shared by `build_scenario` and
`Simulation.load`.

The session's code runs in a sandbox (`areasync.bridge.sandbox.audit`) from the moment its scenario
is built: its apps may touch only its file-system apps' files. A scenario that fails to load
leaves nothing behind: what ARE created for it is removed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeAlias

from areasync.bridge.determinism import session_entropy
from areasync.bridge.environment import Scenario
from areasync.bridge.judge.options import JudgeOptions
from areasync.bridge.operator_files import DEFAULT_MAX_SCENARIO_BYTES
from areasync.bridge.sandbox.audit import Sandbox
from areasync.bridge.scenarios import loading as scenarios
from areasync.journal.sources import InlineScenario, RegisteredScenario, ResolvedScenario
from areasync.policies import DEFAULT_MAX_FILE_BYTES
from areasync.protocol.frames import ImportMode

Loadable: TypeAlias = str | os.PathLike[str] | Scenario | ResolvedScenario
"""What a scenario is loaded from: a registered id, a JSON file's path, JSON text, a Scenario, or
where one came from as data (`areasync.journal.sources`: a registered id, inline JSON)."""


def plain_source(source: Loadable) -> str | os.PathLike[str] | Scenario:
    """`source` as ARE's loading takes it (`areasync.bridge.scenarios.loading.load`): a resolved
    `Loadable` as its id or JSON text, anything else as it is."""
    match source:
        case RegisteredScenario(id=scenario_id):
            return scenario_id
        case InlineScenario(json=text):
            return text
    return source


def build_scenario(
    source: Loadable,
    *,
    import_mode: ImportMode | str = ImportMode.AUTO,
    oracle: bool = False,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    judge: JudgeOptions | None = None,
    seed: int | None = None,
    created_at: float | None = None,
    max_scenario_bytes: int = DEFAULT_MAX_SCENARIO_BYTES,
) -> tuple[Scenario, Sandbox]:
    """The initialised scenario of `source`, built inside a new sandbox, and that sandbox (for
    `Simulation.load(scenario, sandbox=...)`). It creates no event-loop object, so that a
    server can build an untrusted scenario in a worker thread: the sandbox's context variable
    follows the thread's copied context, so the guard covers the import there too. `judge`:
    a benchmark import is judged by it (`areasync.bridge.scenarios.loading`). `seed`, `created_at`:
    the session's (`Simulation.load`), which the sandbox carries on to it.
    `max_scenario_bytes`: the operator's limit on a scenario file (`operator_files`)."""
    with sandboxed_loading(
        source, max_file_bytes=max_file_bytes, seed=seed, created_at=created_at
    ) as sandbox:
        scenario = load_in(
            sandbox,
            source,
            import_mode=import_mode,
            oracle=oracle,
            judge=judge,
            max_scenario_bytes=max_scenario_bytes,
        )
    return scenario, sandbox


@contextmanager
def sandboxed_loading(
    source: Loadable,
    *,
    sandbox: Sandbox | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    seed: int | None = None,
    created_at: float | None = None,
) -> Iterator[Sandbox]:
    """Load `source` in the body, inside `sandbox` (a new one if None), which it yields.

    The sandbox carries the session's ids and time (`areasync.bridge.determinism`): from
    `seed` and `created_at` (random, and the wall's now, if None), unless it has them already.
    If the body raises, what ARE created for the scenario is removed."""
    source = plain_source(source)
    if sandbox is None:
        _discover_registered(source)
        sandbox = Sandbox(max_file_bytes=max_file_bytes)
    if sandbox.entropy is None:
        sandbox.entropy = session_entropy(seed, created_at)
    try:
        with sandbox.loading(_scenario_file(source)):
            yield sandbox
    except BaseException:
        sandbox.remove_directories()  # what ARE created for a scenario that did not load
        raise


def load_in(
    sandbox: Sandbox,
    source: Loadable,
    *,
    import_mode: ImportMode | str,
    oracle: bool,
    judge: JudgeOptions | None = None,
    max_scenario_bytes: int = DEFAULT_MAX_SCENARIO_BYTES,
) -> Scenario:
    """`scenarios.load`, its file-system apps made the sandbox's roots."""
    scenario = scenarios.load(
        plain_source(source),
        import_mode=import_mode,
        oracle=oracle,
        judge=judge,
        max_scenario_bytes=max_scenario_bytes,
    )
    sandbox.adopt(scenario.apps or [])
    return scenario


def _discover_registered(source: object) -> None:
    if isinstance(source, str) and not _scenario_file(source) and not source.startswith("{"):
        # A registered id: ARE's registry discovers its scenarios by importing every module
        # of its own (trusted code, which opens files such as /dev/null), once per process.
        scenarios.registered_ids()


def _scenario_file(source: object) -> list[str]:
    """The JSON file `source` names, if it does (`scenarios.load` reads it in the sandbox)."""
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and source.endswith(".json") and not source.lstrip().startswith("{")
    ):
        return [os.fspath(source)]
    return []
