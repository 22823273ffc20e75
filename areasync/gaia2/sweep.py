"""What makes a long `areasync bench run` sweep behave: progress, resume, retry, records.

ARE's benchmark writes `output.jsonl` only once every run has finished, draws a `tqdm` bar
meant for a terminal, and has no notion of resuming a sweep or of telling a model endpoint
that failed from an agent that failed. A `Sweep` adds those around ARE's own runs:

* **Records.** Every finished run is recorded at once under `OUTPUT_DIR/.areasync/runs/`
  (its verdict, rationale, exception, trace path: what ARE's own result cache keeps), so a
  sweep stopped by Ctrl-C, a crash or a lost machine leaves what finished on disk.
* **`--resume`** gives each run already recorded its recorded result instead of running it
  again (ARE's exporter still writes `output.jsonl` and `benchmark_stats.json` over all of
  them). A run recorded as an infrastructure failure runs again. The options the sweep was
  started with are kept in `OUTPUT_DIR/.areasync/options.json`; resuming with options that
  change results (another model, dataset, judge...) is refused.
* **`--retry N`** runs a run again, up to N times, when its model endpoint failed: a model
  or judge request raised (connection refused, timeout, HTTP error) and the run did not
  succeed. An agent that failed on its own (wrong actions, a rejected turn, bad output) is
  never retried. Requests are seen where areasync awaits them (LiteLLM engines).
* **Progress.** On a terminal, ARE's own bar (runs done / total, ETA, pass rate so far);
  otherwise one plain line per finished run with the same figures.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

RECORDS_DIR = ".areasync"

# `are-benchmark run` options that change neither which runs a sweep has nor their results:
# a sweep may be resumed with other values of these.
NEUTRAL_OPTIONS = frozenset(
    {
        "output_dir",
        "max_concurrent_scenarios",
        "executor_type",
        "scenario_timeout",
        "log_level",
        "enable_caching",
        "hf_upload",
        "hf_public",
        "resume",
        "retry",
        "trace_dump_format",
    }
)


# Kept per run: enough to say what went wrong, however often the agent's loop retried.
MAX_ERRORS_KEPT = 5
# HTTP statuses that are the endpoint's failure, not the request's (besides every 5xx).
ENDPOINT_STATUSES = frozenset({401, 403, 404, 408, 409, 429})


def is_endpoint_failure(error: BaseException) -> bool:
    """Whether a model request's error is the endpoint failing (unreachable, timing out,
    overloaded, refusing the credentials) rather than the request's own fault (a prompt too
    long, a bad parameter, content refused: the agent's doing, which retrying cannot fix)."""
    status = getattr(error, "status_code", None)
    if not isinstance(status, int):
        return True  # no HTTP answer at all: connection refused or reset, timeout
    return status >= 500 or status in ENDPOINT_STATUSES


@dataclass
class RunAttempt:
    """What one attempt of a run saw of its model endpoint."""

    endpoint_errors: list[str] = field(default_factory=list)
    endpoint_error_count: int = 0
    raised: Exception | None = None  # what the attempt raised, if it did not return


_attempt: ContextVar[RunAttempt] = ContextVar("areasync_gaia2_attempt")


def begin_attempt() -> RunAttempt:
    """Start a fresh attempt record in the current run's context."""
    attempt = RunAttempt()
    _attempt.set(attempt)
    return attempt


def current_attempt() -> RunAttempt | None:
    """The attempt record of the run calling, if any."""
    return _attempt.get(None)


def note_endpoint_error(error: BaseException) -> None:
    """Called where a model request failed: the current run's endpoint misbehaved."""
    if not is_endpoint_failure(error):
        return
    try:
        attempt = _attempt.get()
    except LookupError:
        return
    attempt.endpoint_error_count += 1
    if len(attempt.endpoint_errors) < MAX_ERRORS_KEPT:
        attempt.endpoint_errors.append(f"{type(error).__name__}: {error}"[:500])


@dataclass
class RunRecord:
    """A finished run, as recorded on disk (ARE's cached-result fields, plus ours)."""

    scenario_id: str
    run_number: int | None
    success: bool | None
    exception_type: str | None
    exception_message: str | None
    export_path: str | None
    rationale: str | None
    duration: float | None
    endpoint_errors: list[str]
    endpoint_error_count: int
    attempts: int

    @property
    def infrastructure_failure(self) -> bool:
        return self.success is not True and self.endpoint_error_count > 0

    def to_result(self, *, exact: bool = False) -> Any:
        """ARE's `ScenarioValidationResult`, as ARE's own cache rebuilds one; `exact`: its
        exception of the type recorded, with the message recorded (so that ARE's
        `output.jsonl` names them as the run's did)."""
        from are.simulation.scenarios.validation_result import ScenarioValidationResult

        exception = None
        if exact and self.exception_type is not None:
            exception = type(self.exception_type, (Exception,), {})(self.exception_message or "")
        elif self.exception_type and self.exception_message:
            exception = Exception(f"{self.exception_type}: {self.exception_message}")
        return ScenarioValidationResult(
            success=self.success,
            exception=exception,
            export_path=self.export_path,
            rationale=self.rationale,
            duration=self.duration,
        )


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:96] or "_"


class RunRecords:
    """The finished runs of a sweep, one JSON file each under `OUTPUT_DIR/.areasync/runs/`."""

    def __init__(self, output_dir: str | Path) -> None:
        self.root = Path(output_dir) / RECORDS_DIR / "runs"

    def _path(self, scenario_id: str, run_number: int | None) -> Path:
        run = "run" if run_number is None else f"run{run_number}"
        return self.root / f"{_safe(scenario_id)}.{run}.json"

    def get(self, scenario_id: str, run_number: int | None) -> RunRecord | None:
        path = self._path(scenario_id, run_number)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            record = RunRecord(**data)
        except (OSError, ValueError, TypeError):
            return None  # absent, or cut short by a crash: the run is simply run again
        if record.scenario_id != scenario_id or record.run_number != run_number:
            return None
        return record

    def put(self, record: RunRecord) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._path(record.scenario_id, record.run_number)
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps(asdict(record), indent=2), encoding="utf-8")
        partial.replace(path)  # atomic: a record is whole or absent

    def all(self) -> list[RunRecord]:
        records = []
        for path in sorted(self.root.glob("*.json")):
            try:
                records.append(RunRecord(**json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError, TypeError):
                continue
        return records


def record_of(
    scenario_id: str, run_number: int | None, result: Any, attempt: RunAttempt, attempts: int
) -> RunRecord:
    exception = getattr(result, "exception", None)
    return RunRecord(
        scenario_id=scenario_id,
        run_number=run_number,
        success=getattr(result, "success", None),
        exception_type=type(exception).__name__ if exception is not None else None,
        exception_message=str(exception) if exception is not None else None,
        export_path=getattr(result, "export_path", None),
        rationale=getattr(result, "rationale", None),
        duration=getattr(result, "duration", None),
        endpoint_errors=list(attempt.endpoint_errors),
        endpoint_error_count=attempt.endpoint_error_count,
        attempts=attempts,
    )


class OptionsMismatch(Exception):
    """`--resume` with options that would change the sweep's runs or results."""


def _comparable(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that change results, as they read back from `options.json`."""
    kept = {key: value for key, value in sorted(options.items()) if key not in NEUTRAL_OPTIONS}
    comparable: dict[str, Any] = json.loads(json.dumps(kept, default=str))
    return comparable


def check_options(output_dir: str | Path, options: Mapping[str, Any], resume: bool) -> None:
    """Keep the sweep's options beside its records; on `--resume`, refuse other options."""
    path = Path(output_dir) / RECORDS_DIR / "options.json"
    current = _comparable(options)
    if resume and path.exists():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            before = None
        if isinstance(before, dict) and before != current:
            changed = sorted(
                key for key in set(before) | set(current) if before.get(key) != current.get(key)
            )
            raise OptionsMismatch(
                f"--resume: {output_dir} holds a sweep started with other options "
                f"({', '.join(changed)} differ); resume with the same options, or use a new "
                "--output_dir"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current, indent=2), encoding="utf-8")


@dataclass
class Sweep:
    """One `areasync bench run`'s resume and retry settings, and what it did."""

    output_dir: Path | None  # None: nothing recorded (ARE then writes to a temp dir)
    resume: bool = False
    retry: int = 0
    resumed: int = 0
    retried: int = 0
    finished: int = 0
    # Datasets the Hugging Face Hub could not give (ARE logs these and goes on).
    hub_failures: list[str] = field(default_factory=list)
    records: RunRecords | None = field(init=False)

    def __post_init__(self) -> None:
        if self.retry < 0:
            raise ValueError(f"--retry must be 0 or more, got {self.retry}")
        if self.resume and self.output_dir is None:
            raise ValueError("--resume needs the --output_dir of the sweep to resume")
        self.records = None if self.output_dir is None else RunRecords(self.output_dir)

    def records_for(self, run_config: Any) -> RunRecords | None:
        """Where a run is recorded: beside the `output.jsonl` ARE writes it to (its runner
        config's `output_dir`), since `gaia2-run` gives each phase and config a folder of its
        own and runs the same scenarios in several."""
        run_dir = getattr(run_config, "output_dir", None)
        if self.records is None or run_dir is None:
            return self.records
        return RunRecords(run_dir)


class PlainProgress:
    """ARE's progress bar for a stream that is not a terminal: a line per finished run."""

    def __init__(
        self,
        iterable: Iterable[Any],
        *,
        desc: str = "runs",
        total: int | None = None,
        file: TextIO | None = None,
        **_: Any,
    ) -> None:
        self._iterable = iterable
        self._desc = desc
        self._total = total
        self._file = file or sys.stdout
        self._postfix: dict[str, Any] = {}
        self._start = time.monotonic()

    def set_postfix(self, postfix: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._postfix = {**(postfix or {}), **kwargs}

    def line(self, done: int) -> str:
        elapsed = time.monotonic() - self._start
        total = f"/{self._total}" if self._total else ""
        parts = [f"{self._desc}: {done}{total} runs done"]
        if "Success" in self._postfix:
            parts.append(f"{self._postfix['Success']} passed")
        if self._total and done:
            remaining = elapsed / done * (self._total - done)
            parts.append(f"ETA {_clock(remaining)}")
        parts.append(f"elapsed {_clock(elapsed)}")
        return ", ".join(parts)

    def __iter__(self) -> Iterator[Any]:
        for done, item in enumerate(self._iterable, start=1):
            yield item  # the caller records the run and sets the pass rate before resuming
            print(self.line(done), file=self._file, flush=True)

    def close(self) -> None:
        pass


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def progress_bar(*args: Any, **kwargs: Any) -> Any:
    """Stands in for `tqdm` in ARE's runner: ARE's bar on a terminal, plain lines elsewhere."""
    stream = kwargs.get("file") or sys.stdout
    if getattr(stream, "isatty", lambda: False)():
        from tqdm import tqdm  # type: ignore[import-untyped]

        return tqdm(*args, **kwargs)
    return PlainProgress(*args, **kwargs)
