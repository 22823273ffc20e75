"""One run of `areasync bench run` in another process, and what it gives back as plain data.

`areasync bench run --ray` (`areasync/cluster/batch.py`) runs each scenario run of an
evaluation in a host actor on some node of a Ray cluster instead of in the driver, and the
driver must still write exactly what a one-machine run writes. So a run crosses processes in
ARE's own portable form and comes back as data:

* **In:** the scenario as ARE's JSON string (what ARE's `--executor_type process` hands its
  workers, `serialize_scenarios_iterator`), loaded and preprocessed on the host by ARE's own
  `process_scenario`, with the driver's `MultiScenarioRunnerConfig` and agent builders.
* **Where it runs** (`BenchWorker`): a thread of the host's process with an event loop of its
  own under `runner.virtual_clock()`, each run a greenlet there, as on one machine; never the
  host's event loop, which serves its sessions.
* **Its files:** the run sees the driver's `--output_dir` (ARE's run id hashes it into the trace
  file names, and the trace records it), but ARE's exporter and an oracle environment's state
  dumps write into a staging folder of the host's (the two seams below), whose files come back
  as bytes with the staging path replaced by the driver's.
* **Out** (`Answer`): the verdict's fields, what it raised (type name and message: ARE writes
  only those to `output.jsonl`), the model endpoint's failures (`--retry` and `--resume` judge
  a run by them, `sweep.py`), and the files. `result_of` and `write_files` are the driver's side.

The host's seams, on top of `virtual_clock()`'s and read at call time as those are:
`ScenarioRunner._export_trace` (its `output_dir`) and `scenario_runner.EnvironmentConfig` (its
`dump_dir`), both redirected only for the run whose staging folder is current.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import patch

from areasync.gaia2 import pool, runner, sweep

__all__ = ["Answer", "BenchWorker", "result_of", "run_name", "write_files"]

# (the driver's output dir, this run's staging folder) of the run calling.
_staging: ContextVar[tuple[str, str]] = ContextVar("areasync_gaia2_staging")


@dataclass
class Answer:
    """One run's outcome, as plain data (see the module docstring)."""

    success: bool | None = None
    export_path: str | None = None
    rationale: str | None = None
    duration: float | None = None
    exception: tuple[str, str] | None = None  # the verdict's exception: (type name, message)
    raised: tuple[str, str] | None = None  # what the run raised instead of returning
    endpoint_errors: list[str] = field(default_factory=list)
    endpoint_error_count: int = 0
    files: dict[str, bytes] = field(default_factory=dict)  # output-dir relative path -> bytes


def run_name(item: str) -> str:
    """`<scenario id>[ run <n>]` of a run given as ARE's JSON."""
    from are.simulation.multi_scenario_runner import extract_scenario_id_and_run_number

    scenario_id, run_number = extract_scenario_id_and_run_number(item)
    return scenario_id if run_number is None else f"{scenario_id} run {run_number}"


def _named_error(name: str, message: str) -> Exception:
    """An exception whose type name and text are `name` and `message` (ARE writes only those)."""
    kind = type(name, (Exception,), {"__module__": __name__})
    return kind(message)


def result_of(answer: Answer) -> Any:
    """ARE's `ScenarioValidationResult` of `answer`; raises what the run raised."""
    from are.simulation.scenarios.validation_result import ScenarioValidationResult

    if answer.raised is not None:
        raise _named_error(*answer.raised)
    return ScenarioValidationResult(
        success=answer.success,
        exception=None if answer.exception is None else _named_error(*answer.exception),
        export_path=answer.export_path,
        rationale=answer.rationale,
        duration=answer.duration,
    )


def write_files(answer: Answer, output_dir: str | Path) -> None:
    """Write the run's files under `output_dir`, where a one-machine run writes them."""
    root = Path(output_dir).resolve()
    for relative, data in answer.files.items():
        target = (root / relative).resolve()
        if not target.is_relative_to(root):
            raise ValueError(f"a run's file {relative!r} is outside {root}: not written")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _restaged(path: str | None) -> str | None:
    """`path` in the staging folder, as the driver's output dir names it."""
    staged = _staging.get(None)
    if path is None or staged is None or not path.startswith(staged[1]):
        return path
    return staged[0] + path[len(staged[1]) :]


@contextmanager
def _staged_output() -> Iterator[None]:
    """The two seams of the module docstring."""
    import are.simulation.scenario_runner as scenario_runner

    export = scenario_runner.ScenarioRunner._export_trace
    environment_config = scenario_runner.EnvironmentConfig

    def export_trace(self: Any, *args: Any, output_dir: str | None = None, **kwargs: Any) -> Any:
        staged = _staging.get(None)
        if staged is not None and output_dir == staged[0]:
            return _restaged(export(self, *args, output_dir=staged[1], **kwargs))
        return export(self, *args, output_dir=output_dir, **kwargs)

    def staged_config(*args: Any, dump_dir: str | None = None, **kwargs: Any) -> Any:
        staged = _staging.get(None)
        if staged is not None and dump_dir == staged[0]:
            dump_dir = staged[1]
        return environment_config(*args, dump_dir=dump_dir, **kwargs)

    with ExitStack() as stack:
        runner_class = scenario_runner.ScenarioRunner
        stack.enter_context(patch.object(runner_class, "_export_trace", export_trace))
        stack.enter_context(patch.object(scenario_runner, "EnvironmentConfig", staged_config))
        yield


def _read_back(staging: Path, output_dir: str) -> dict[str, bytes]:
    """The staging folder's files, the staging path in them replaced by `output_dir`."""
    files = {}
    for path in sorted(p for p in staging.rglob("*") if p.is_file()):
        data = path.read_bytes().replace(str(staging).encode(), output_dir.encode())
        files[path.relative_to(staging).as_posix()] = data
    return files


def run_here(item: str, config: Any, agent_config_builder: Any, agent_builder: Any) -> Answer:
    """One run of ARE's `process_scenario` in this greenlet, staged (module docstring). Call
    it under `virtual_clock()` and `_staged_output()` (as `BenchWorker` does)."""
    import are.simulation.multi_scenario_runner as multi

    output_dir = str(config.output_dir)
    staging = Path(tempfile.mkdtemp(prefix="areasync-bench-"))
    _staging.set((output_dir, str(staging)))
    attempt = sweep.begin_attempt()
    answer = Answer()
    try:
        result = multi.process_scenario(
            item,
            config=config,
            agent_config_builder=agent_config_builder,
            agent_builder=agent_builder,
        )
    except Exception as error:
        answer.raised = (type(error).__name__, str(error))
    else:
        exception = getattr(result, "exception", None)
        answer.success = result.success
        answer.export_path = _restaged(result.export_path)
        answer.rationale = result.rationale
        answer.duration = result.duration
        if exception is not None:
            answer.exception = (type(exception).__name__, str(exception))
    answer.endpoint_errors = list(attempt.endpoint_errors)
    answer.endpoint_error_count = attempt.endpoint_error_count
    try:
        answer.files = _read_back(staging, output_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return answer


class BenchWorker:
    """A thread with its own event loop under `virtual_clock()`, running runs as greenlets."""

    def __init__(self) -> None:
        self.running = 0  # runs under way
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="areasync bench", daemon=True)
        self._thread.start()
        self._ready.wait()

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        with runner.virtual_clock(), _staged_output():
            self._loop = loop
            self._ready.set()
            loop.run_forever()
        loop.close()

    async def run(self, *args: Any) -> Answer:
        """`run_here(*args)` on the worker's thread; awaited from any other event loop."""
        self.running += 1
        try:
            return await asyncio.wrap_future(self._submit(run_here, *args))
        finally:
            self.running -= 1

    def _submit(self, fn: Callable[..., Answer], *args: Any) -> Future[Answer]:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(
            pool.run_cooperatively(lambda: fn(*args)), self._loop
        )

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
