"""The scenario runs of a Gaia2 benchmark output directory, read from what ARE wrote there.

`are-benchmark run` and `areasync bench run` leave in `--output_dir`:

* `output.jsonl`: one line per scenario run, `task_id`, `score` (1.0, 0.0 or null), `trace_id`
  (the path of the run's trace) and `metadata` (`run_number`, `status` - success, failed,
  exception or no_validation -, `has_exception`, `exception_type`, `exception_message`,
  `rationale`: the judge's);
* the traces of ARE's exporter, per `--trace_dump_format`: `hf` (the scenario and the run's
  completed events: every user message, tool call and environment event with its arguments,
  return value and simulated time; no agent log) and `lite` (the agent's conversation - system
  prompt, tasks, LLM outputs, observations, notifications - with per-call token usage, the
  verdict and rationale). `both` (the default) writes them as `hf/<run id>.json` and
  `lite/<run id>.json`; one format alone writes `<run id>.json` at the top;
* `benchmark_stats.json`: the statistics, with the dataset configs that were run.

`iter_runs(output_dir)` yields one `Run` per scenario run, loading one run's traces at a time
(a full Gaia2 run has thousands of traces of up to megabytes each). Runs are those listed in
`output.jsonl`, then every trace in the directory that `output.jsonl` does not list: ARE
rewrites `output.jsonl` for each dataset config, so after a run of several configs (no
`--config`) it lists only the last config's runs, while the traces of all of them are there.
An unlisted run's verdict is read from its traces (`Valid`/`Invalid`, and the rationale from
the lite trace). Nothing here imports ARE: the files are plain JSON.

A run's split is the Gaia2 capability (`execution`, `search`, ... the names of ARE's dataset
configs) among its scenario's tags; else the dataset config, when `benchmark_stats.json` names
only one; else none.

What is read is not trusted: an output directory may come from anyone. Each `output.jsonl` row
is decoded as an `OutputRow` (strict JSON, typed, bounded: a `run_number` of `Infinity` or
`1e400` is refused, not an overflow); a row that is not one is reported (`iter_runs`' `skipped`,
and a warning) and skipped, and the other runs are read. A row's `trace_id` is opened only if it
names a file inside the output directory (`_inside`): `../../etc/passwd` or an absolute path
elsewhere is reported on the run instead. Numbers read from traces are taken only when finite.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec

logger = logging.getLogger(__name__)

OUTPUT_JSONL = "output.jsonl"
STATS_JSON = "benchmark_stats.json"
HF_DIR = "hf"
LITE_DIR = "lite"

# ARE's Gaia2 capabilities (`CapabilityTag.gaia2_capabilities()`); lowercased they name the
# dataset configs, which Gaia2 calls splits.
GAIA2_CAPABILITIES = ("Adaptability", "Ambiguity", "Execution", "Search", "Time")

# The verdicts ARE's output.jsonl gives (`get_scenario_result_info`).
SUCCESS, FAILED, EXCEPTION, NO_VALIDATION = "success", "failed", "exception", "no_validation"


class OutputDirError(ValueError):
    """The directory holds no ARE benchmark output (or holds it unreadably)."""


# Bounds on what a row may hold: ARE numbers runs from 1 (`--num_runs`, a handful), and ids and
# texts of a real run are far below these.
MAX_RUN_NUMBER = 1_000_000
MAX_ID_CHARS = 1024
Text = Annotated[str, msgspec.Meta(max_length=1_000_000)]


class RowMetadata(msgspec.Struct, kw_only=True):
    """`output.jsonl`'s `metadata` (ARE's `_export_benchmark_result_jsonl`), as far as it is
    read; other fields are ignored."""

    run_number: Annotated[int, msgspec.Meta(ge=0, le=MAX_RUN_NUMBER)] | None = None
    status: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    has_exception: bool = False
    exception_type: Annotated[str, msgspec.Meta(max_length=MAX_ID_CHARS)] | None = None
    exception_message: Text | None = None
    rationale: Text | None = None


class OutputRow(msgspec.Struct, kw_only=True):
    """One `output.jsonl` row: a scenario run's verdict and where its trace is."""

    task_id: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_CHARS)]
    trace_id: Annotated[str, msgspec.Meta(max_length=4096)] | None = None
    score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None = None
    metadata: RowMetadata = msgspec.field(default_factory=RowMetadata)


@dataclass(frozen=True)
class Event:
    """One completed event of the run (a user message, tool call or environment event)."""

    event_id: str
    event_type: str  # AGENT, USER or ENV
    time: float  # simulated, seconds since the epoch
    app: str
    function: str
    args: dict[str, Any]
    write: bool
    result: Any
    error: str | None = None

    @property
    def tool(self) -> str:
        """The tool's name as the agent calls it (`App__function`)."""
        return f"{self.app}__{self.function}"


@dataclass(frozen=True)
class Message:
    """One message of an agent's conversation, as ARE's lite trace records it.

    `role` is ARE's: system, user, assistant (one per LLM call) or tool-response.
    """

    role: str
    content: str
    time: float | None


@dataclass(frozen=True)
class Usage:
    """What one LLM call cost, per ARE's lite trace."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    reasoning_tokens: int
    seconds: float


@dataclass
class Run:
    """One scenario run: its verdict and, as far as ARE's traces tell, what happened in it."""

    scenario_id: str
    run_number: int | None
    status: str  # success, failed, exception or no_validation (ARE's output.jsonl)
    score: float | None
    rationale: str | None = None
    exception: str | None = None
    split: str | None = None
    model: str | None = None
    agent: str | None = None
    start_time: float | None = None
    duration: float | None = None  # simulated seconds, per the lite trace
    # None when the run has no hf trace (events) or no lite trace (conversations, usage).
    events: list[Event] | None = None
    oracle_events: int | None = None
    # The scenario's oracle calls (what the judge expects the agent to do), from the hf trace.
    oracle_calls: list[Event] | None = None
    conversations: dict[str, list[Message]] | None = None
    usage: dict[str, list[Usage]] | None = None
    hf_trace: Path | None = None
    lite_trace: Path | None = None
    listed: bool = True  # in output.jsonl (else its verdict comes from its traces)
    tags: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # traces that could not be read

    @property
    def success(self) -> bool | None:
        """True passed, False failed (an exception counts as a failure, as in ARE's stats),
        None when the run got no verdict."""
        if self.score is None:
            return None
        return self.score >= 1.0

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.scenario_id, self.run_number)


# -- reading the directory ----------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise OutputDirError(f"cannot read {path}: {error}") from error


_decode_row = msgspec.json.Decoder(OutputRow).decode


def read_output_rows(output_dir: Path, skipped: list[str] | None = None) -> list[OutputRow]:
    """`output.jsonl`'s rows (none if ARE did not write it); each line that is not a row of
    ARE's is logged, added to `skipped` (what was wrong with it, where) and left out."""
    path = output_dir / OUTPUT_JSONL
    if not path.is_file():
        return []
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rows.append(_decode_row(line))
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                why = f"{path}, line {number}: skipped, not a result row of ARE's ({error})"
                logger.warning("%s", why)
                if skipped is not None:
                    skipped.append(why)
    return rows


def read_stats(output_dir: Path) -> dict[str, Any] | None:
    """`benchmark_stats.json`, or None."""
    path = output_dir / STATS_JSON
    if not path.is_file():
        return None
    stats = _read_json(path)
    return stats if isinstance(stats, dict) else None


def dataset_configs(stats: Mapping[str, Any] | None) -> list[str]:
    """The dataset configs `benchmark_stats.json` says were run."""
    if not stats:
        return []
    configs = {
        str(entry["config"])
        for entry in stats.get("run_configurations") or []
        if isinstance(entry, dict) and entry.get("config")
    }
    return sorted(configs)


@dataclass
class _TraceFiles:
    hf: Path | None = None
    lite: Path | None = None
    single: Path | None = None  # a one-format dump: hf or lite, known once read


def _trace_index(output_dir: Path) -> dict[str, _TraceFiles]:
    """Every trace file in the directory, by run id (the file name's stem); a link that leads
    out of the directory is not one."""
    index: dict[str, _TraceFiles] = {}
    for folder, slot in ((output_dir / HF_DIR, "hf"), (output_dir / LITE_DIR, "lite")):
        if folder.is_dir():
            for path in sorted(folder.glob("*.json")):
                if _inside(output_dir, str(path.relative_to(output_dir))) is not None:
                    setattr(index.setdefault(path.stem, _TraceFiles()), slot, path)
    for path in sorted(output_dir.glob("*.json")):
        if path.name != STATS_JSON and _inside(output_dir, path.name) is not None:
            index.setdefault(path.stem, _TraceFiles()).single = path
    return index


def _is_hf(trace: Any) -> bool:
    return isinstance(trace, dict) and "completed_events" in trace and "metadata" in trace


def _is_lite(trace: Any) -> bool:
    return isinstance(trace, dict) and "per_agent_interaction_histories" in trace


def _read_trace(path: Path | None, problems: list[str]) -> Any:
    """A trace, or None: one unreadable trace (a run killed while ARE wrote it) costs that
    run its details, not the whole directory its artifacts."""
    if path is None:
        return None
    try:
        return _read_json(path)
    except OutputDirError as error:
        problems.append(str(error))
        return None


def _load_traces(
    files: _TraceFiles, problems: list[str]
) -> tuple[Path | None, Any, Path | None, Any]:
    """(hf path, hf trace, lite path, lite trace) of one run, each None when absent."""
    hf_path, lite_path = files.hf, files.lite
    hf = _read_trace(hf_path, problems)
    lite = _read_trace(lite_path, problems)
    if files.single is not None and hf is None and lite is None:
        single = _read_trace(files.single, problems)
        if _is_hf(single):
            hf_path, hf = files.single, single
        elif _is_lite(single):
            lite_path, lite = files.single, single
    if hf is not None and not _is_hf(hf):
        hf_path, hf = None, None
    if lite is not None and not _is_lite(lite):
        lite_path, lite = None, None
    return hf_path, hf, lite_path, lite


def _run_number_from_name(stem: str, scenario_id: str) -> int | None:
    """A lite trace does not record its run number; its file name does (ARE's `get_run_id`)."""
    if stem.startswith(scenario_id):
        match = re.match(r"_run_(\d+)(?:_|$)", stem[len(scenario_id) :])
        if match:
            return int(match.group(1))
    return None


def iter_runs(output_dir: str | Path, skipped: list[str] | None = None) -> Iterator[Run]:
    """Every scenario run of an ARE benchmark output directory (see the module docstring);
    the `output.jsonl` rows it could not read are added to `skipped`."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        raise OutputDirError(
            f"{output_dir} is not a directory: give the --output_dir of a finished "
            "`areasync bench run` or `are-benchmark run`"
        )
    problems: list[str] = []
    rows = read_output_rows(output_dir, problems)
    if skipped is not None:
        skipped.extend(problems)
    traces = _trace_index(output_dir)
    if not rows and not traces and not problems:
        raise OutputDirError(
            f"{output_dir} holds no ARE benchmark output (no {OUTPUT_JSONL}, no traces): give "
            "the --output_dir of a finished `areasync bench run` or `are-benchmark run`"
        )
    stats = read_stats(output_dir)
    configs = dataset_configs(stats)
    claimed: set[str] = set()  # run ids without their config hash
    for row in rows:
        trace_id = row.trace_id
        files = _TraceFiles()
        problems = []
        if trace_id:
            stem = Path(trace_id).stem
            claimed.add(_without_hash(stem))
            files = traces.get(stem) or files
            if files.hf is None and files.lite is None and files.single is None:
                named = _inside(output_dir, trace_id)
                if named is not None:
                    files = _TraceFiles(single=named)
                else:
                    problems.append(
                        f"its trace {trace_id!r} is not a file inside {output_dir}: not opened "
                        "(only traces under the output directory are read)"
                    )
        listed = _listed_run(row, files, configs)
        listed.problems[:0] = problems
        yield listed
    # Traces of the same scenario run under other runner settings are an earlier run's, which
    # the same folder of artifacts cannot hold as well: of those, the newest file stands.
    unlisted: dict[str, tuple[float, str]] = {}
    for stem, files in traces.items():
        name = _without_hash(stem)
        if name in claimed:
            continue
        newest = max(path.stat().st_mtime for path in (files.hf, files.lite, files.single) if path)
        if name not in unlisted or newest > unlisted[name][0]:
            unlisted[name] = (newest, stem)
    for _, stem in sorted(unlisted.values(), key=lambda entry: entry[1]):
        run = _unlisted_run(stem, traces[stem], configs)
        if run is not None:
            yield run


def _without_hash(stem: str) -> str:
    """A run id (ARE's `get_run_id`: `<scenario>[_run_<n>]_<config hash>`) without its hash."""
    return re.sub(r"_[0-9a-f]{8}$", "", stem)


def _inside(output_dir: Path, trace_id: str) -> Path | None:
    """The regular file `trace_id` names (relative: to the output directory), if it is inside
    the output directory once links and `..` are resolved; else None."""
    try:
        root = output_dir.resolve()
        named = (output_dir / trace_id).resolve()  # an absolute `trace_id` stays itself
        return named if named.is_relative_to(root) and named.is_file() else None
    except (OSError, ValueError):  # a NUL, a loop of links
        return None


def _listed_run(row: OutputRow, files: _TraceFiles, configs: list[str]) -> Run:
    metadata = row.metadata
    score = row.score
    exception = None
    if metadata.has_exception:
        exception = _exception_text(metadata.exception_type, metadata.exception_message)
    run = Run(
        scenario_id=row.task_id,
        run_number=metadata.run_number,
        status=metadata.status or _status_of(score, exception),
        score=score,
        rationale=_rationale(metadata.rationale),
        exception=exception,
    )
    hf_path, hf, lite_path, lite = _load_traces(files, run.problems)
    _fill(run, hf_path, hf, lite_path, lite, configs)
    return run


def _unlisted_run(stem: str, files: _TraceFiles, configs: list[str]) -> Run | None:
    problems: list[str] = []
    hf_path, hf, lite_path, lite = _load_traces(files, problems)
    if hf is None and lite is None:
        for problem in problems:
            logger.warning("skipped a trace output.jsonl does not list: %s", problem)
        return None  # unreadable, or some other JSON file
    if hf is not None:
        definition = hf["metadata"].get("definition") or {}
        scenario_id = str(definition.get("scenario_id") or stem)
        run_number = _int_or_none(definition.get("run_number"))
        decision = (hf["metadata"].get("annotation") or {}).get("validation_decision")
        exception = None
        if definition.get("has_exception"):
            exception = _exception_text(
                definition.get("exception_type"), definition.get("exception_message")
            )
    else:
        scenario_id = str(lite.get("scenario_id") or stem)
        run_number = _run_number_from_name(stem, scenario_id)
        decision = lite.get("validation_decision")
        exception = None
    score = 1.0 if decision == "Valid" else 0.0 if decision == "Invalid" else None
    run = Run(
        scenario_id=scenario_id,
        run_number=run_number,
        status=_status_of(score, exception),
        score=score,
        exception=exception,
        listed=False,
        problems=problems,
    )
    _fill(run, hf_path, hf, lite_path, lite, configs)
    if run.rationale is None and lite is not None:
        run.rationale = _rationale(lite.get("validation_rationale"))
    return run


def _fill(
    run: Run,
    hf_path: Path | None,
    hf: Any,
    lite_path: Path | None,
    lite: Any,
    configs: list[str],
) -> None:
    run.hf_trace, run.lite_trace = hf_path, lite_path
    if hf is not None:
        metadata = hf.get("metadata") or {}
        definition = metadata.get("definition") or {}
        simulation = metadata.get("simulation") or {}
        run.tags = [str(tag) for tag in definition.get("tags") or []]
        run.start_time = _float_or_none(definition.get("start_time"))
        run.model = simulation.get("model_id") or run.model
        run.agent = simulation.get("agent_id") or run.agent
        run.events = events_of(hf)
        run.oracle_events = sum(
            1 for event in hf.get("events") or [] if event.get("class_name") == "OracleEvent"
        )
        run.oracle_calls = events_of(hf, key="events", kind="OracleEvent")
    if lite is not None:
        run.model = run.model or lite.get("model_id")
        run.agent = run.agent or lite.get("main_agent_type")
        run.duration = _float_or_none(lite.get("run_duration"))
        run.conversations = {
            str(agent): [
                Message(
                    role=str(message.get("role", "")),
                    content=_text(message.get("content")),
                    time=_float_or_none(message.get("timestamp")),
                )
                for message in history or []
            ]
            for agent, history in (lite.get("per_agent_interaction_histories") or {}).items()
        }
        run.usage = {
            str(agent): _usage(stats)
            for agent, stats in (lite.get("per_agent_llm_usage_stats") or {}).items()
        }
    run.split = split_of(run.tags, configs)


def split_of(tags: list[str], configs: list[str]) -> str | None:
    """The run's Gaia2 split: its capability tag, else the only dataset config run, else None."""
    capabilities = [tag for tag in tags if tag in GAIA2_CAPABILITIES]
    if len(capabilities) == 1:
        return capabilities[0].lower()
    if len(configs) == 1:
        return configs[0]
    return None


# -- decoding ARE's JSON ------------------------------------------------------------------------


def events_of(
    hf: Mapping[str, Any], key: str = "completed_events", kind: str | None = None
) -> list[Event]:
    """The run's completed events that act on an app, in log order (condition checks, which
    are ARE's own bookkeeping and call no app, left out); with `key="events"` and a `kind`
    (ARE's class name, such as OracleEvent), the scenario's own events of that kind."""
    events = []
    for raw in hf.get(key) or []:
        action = raw.get("action") or {}
        if not isinstance(action, dict) or not action.get("app"):
            continue
        if kind is not None and raw.get("class_name") != kind:
            continue
        metadata = raw.get("metadata") or {}
        events.append(
            Event(
                event_id=str(raw.get("event_id") or ""),
                event_type=str(raw.get("event_type") or ""),
                time=_float_or_none(raw.get("event_time")) or 0.0,
                app=str(action["app"]),
                function=str(action.get("function") or ""),
                args={
                    str(arg.get("name")): decode_arg(arg.get("value"), arg.get("value_type"))
                    for arg in action.get("args") or []
                },
                write=str(action.get("operation_type") or "").upper() == "WRITE",
                result=decode_result(
                    metadata.get("return_value"), metadata.get("return_value_type")
                ),
                error=metadata.get("exception") or None,
            )
        )
    return events


_BASE_TYPE = re.compile(r"Optional\[(\w+)|(\w+)")


def decode_arg(value: Any, value_type: Any) -> Any:
    """An argument as ARE's exporter wrote it (a string and its type's name) back to a value.

    Lists and dicts are JSON; numbers and booleans their `str`; anything else stays the string
    ARE wrote (a value ARE cannot turn into JSON, or an `{{event}}` reference).
    """
    if value is None or not isinstance(value, str):
        return value
    match = _BASE_TYPE.match(str(value_type or ""))
    base = (match.group(1) or match.group(2)) if match else ""
    try:
        if base in ("list", "dict"):
            return json.loads(value)
        if base == "int":
            return int(value)
        if base == "float":
            return float(value)
        if base == "bool":
            return value.strip().lower() in ("true", "1", "t", "y", "yes")
    except ValueError:
        pass
    return value


def decode_result(value: Any, value_type: Any) -> Any:
    """A return value as ARE's exporter wrote it (`str(value)`, and null for a falsy one) back
    to a value where that is unambiguous: numbers, booleans, and lists, dicts and tuples of
    literals; anything else (an app's own objects) stays ARE's text."""
    if value is None or not isinstance(value, str) or value_type in (None, "str"):
        return value
    if value_type in ("int", "float", "bool", "list", "dict", "tuple"):
        try:
            decoded = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
        return list(decoded) if isinstance(decoded, tuple) else decoded
    return value


def _usage(stats: Any) -> list[Usage]:
    if not isinstance(stats, dict):
        return []

    def column(name: str) -> list[Any]:
        values = stats.get(name)
        return values if isinstance(values, list) else []

    calls = int(stats.get("total_llm_calls") or 0)
    prompt, completion, total = (
        column("prompt_tokens"),
        column("completion_tokens"),
        column("total_tokens"),
    )
    reasoning, seconds = column("reasoning_tokens"), column("completion_duration")

    def at(values: list[Any], i: int) -> float:
        return float(values[i]) if i < len(values) and isinstance(values[i], (int, float)) else 0.0

    return [
        Usage(
            prompt_tokens=int(at(prompt, i)),
            completion_tokens=int(at(completion, i)),
            total_tokens=int(at(total, i)),
            reasoning_tokens=int(at(reasoning, i)),
            seconds=at(seconds, i),
        )
        for i in range(calls)
    ]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _rationale(value: Any) -> str | None:
    # ARE writes `str(None)` for a run the judge passed without a rationale.
    if value is None or value == "None" or value == "":
        return None
    return str(value)


def _exception_text(kind: Any, message: Any) -> str:
    kind = str(kind or "Exception")
    return f"{kind}: {message}" if message else kind


def _status_of(score: Any, exception: str | None) -> str:
    if score == 1.0:
        return SUCCESS
    if score == 0.0:
        return FAILED
    return EXCEPTION if exception else NO_VALIDATION


def _int_or_none(value: Any) -> int | None:
    """A whole number from a trace, if it is one within `MAX_RUN_NUMBER` (else None)."""
    number = _float_or_none(value)
    if number is None or number != int(number) or abs(number) > MAX_RUN_NUMBER:
        return None
    return int(number)


def _float_or_none(value: Any) -> float | None:
    """A finite number from a trace (None for anything else: text, NaN, Infinity)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None
