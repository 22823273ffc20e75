"""One run of `areasync bench run` in another process, and what it gives back as plain data.

`areasync bench run --workers N` (`gaia2/local.py`) and `--ray` (`cluster/batch.py`) run each
scenario run of an evaluation in another process than the driver's: a worker process of this
machine, or of some node of a Ray cluster. The driver must still write exactly
what a one-process run writes. So a run crosses processes in ARE's own portable form and comes
back as data:

* **In:** the scenario as ARE's JSON string (what ARE's `--executor_type process` hands its
  workers, `serialize_scenarios_iterator`), loaded and preprocessed on the host by ARE's own
  `process_scenario`, with the driver's `MultiScenarioRunnerConfig` and agent builders.
* **Where it runs** (`serving()`: the handler `run`): on an event loop under
  `runner.virtual_clock()`, each run a greenlet there, as in one process: a worker process's
  own loop (`areasync/workers/worker.py`), of this machine or of a Ray node (whose host keeps
  the same pool, `cluster/nodebench.py`).
* **Its files:** the run sees the driver's `--output_dir` (ARE's run id hashes it into the trace
  file names, and the trace records it), but ARE's exporter and an oracle environment's state
  dumps write into a staging folder of the run's own (the two seams below), whose files come
  back as bytes with the staging path replaced by the driver's. A run that is cancelled or
  killed part way so leaves nothing half-written in the output dir.
* **Out** (`Answer`): the verdict's fields, what it raised (type name and message: ARE writes
  only those to `output.jsonl`), the model endpoint's failures (`--retry` and `--resume` judge
  a run by them, `sweep.py`), and the files. `result_of` and `write_files` are the driver's side.

The seams, on top of `virtual_clock()`'s and read at call time as those are:
`ScenarioRunner._export_trace` (its `output_dir`) and `scenario_runner.EnvironmentConfig` (its
`dump_dir`), both redirected only for the run whose staging folder is current.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import patch

from areasync.gaia2 import pool, runner, sweep

__all__ = ["Answer", "result_of", "run", "run_name", "serving", "write_files"]

STAGING_PREFIX = "areasync-bench-"  # a staging folder: <tmp>/<this>-<pid>-<random>
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
    it under `virtual_clock()` and `_staged_output()` (as `serving()` does)."""
    import are.simulation.multi_scenario_runner as multi

    output_dir = str(config.output_dir)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-"))
    try:
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
        answer.files = _read_back(staging, output_dir)
        return answer
    finally:  # a run cancelled part way leaves no staging folder behind either
        shutil.rmtree(staging, ignore_errors=True)


async def run(item: str, config: Any, agent_config_builder: Any, agent_builder: Any) -> Answer:
    """The handler `run`: `run_here` as a greenlet of the calling event loop; cancelling the
    calling task cancels the run at its next wait."""
    return await pool.run_cooperatively(
        lambda: run_here(item, config, agent_config_builder, agent_builder)
    )


@contextmanager
def serving(models: bool = True) -> Iterator[dict[str, Callable[..., Coroutine[Any, Any, Answer]]]]:
    """The handlers of a process that runs bench runs for a driver (`workers.worker.Serve`):
    ARE's pipeline on the virtual clock, staged, for as long as the block lasts. `models`:
    the runs call models (False for `--oracle` runs: LiteLLM is left unimported)."""
    with runner.virtual_clock(models=models), _staged_output():
        yield {"run": run}


def oracle_serving() -> AbstractContextManager[dict[str, Callable[..., Any]]]:
    """`serving()` for `--oracle` runs, which call no model (a `Serve`: no arguments)."""
    return serving(models=False)
