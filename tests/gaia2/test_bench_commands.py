"""`areasync bench judge` and `areasync bench gaia2-run` against ARE's own `are-benchmark judge`
and `are-benchmark gaia2-run`, on tiny datasets and the stub LLM.

What each command reads:

* `judge` judges traces that hold the agent's events: here the `hf/` traces a `bench run` of
  the single-turn pair exported, read as `-d RUN_OUT --config hf` (ARE's local loader lists
  `RUN_OUT/hf/*.json`).
* `gaia2-run` reads Gaia2's config folders, `DIR/<config>/<split>/`. The execution layout holds
  `tiny_email` in `execution` only (the configs it lacks are skipped, by ARE as by areasync);
  the full layout adds `time` (`tiny_skip` tagged Time, which ARE gives 420 s instead of 1,800)
  and `mini` (`tiny_a2a`: a task the stub's agent hands to the email app's expert agent, which
  only Gaia2's Agent2Agent phase has; in the noise phase that tool does not exist and the run
  fails, whatever ARE's unseeded random tool failures do, so even that phase is comparable).

ARE's side runs in subprocesses with its thread executor (its default, `process`, imports ARE
again in every worker), started before areasync's in-process runs so that they overlap, against
a stub of its own so that areasync's request counts are areasync's alone. The default suite runs
ARE's judge and ARE's gaia2-run on the execution layout (3 runs); the soak suite runs ARE's
gaia2-run on the full layout (12 runs, about a minute).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import click
import pytest

from areasync.gaia2 import compare
from areasync.gaia2.cli import COMMANDS, are_command, bench_command
from areasync.gaia2.cli import main as bench_main
from areasync.gaia2.dataset import agent_scripts, expected_verdicts, write_dataset
from areasync.gaia2.stub_llm import Script, StubLLM
from areasync.gaia2.sweep import RECORDS_DIR, RunRecords
from tests.stubs import stub_fixture, stub_llm
from tests.waiting import eventually_blocking

PAIR = ("tiny_email", "tiny_skip")
# ARE's thread executor, with room for every run at once (areasync accepts both, adds nothing).
EXECUTOR = ("--executor_type", "thread", "--max_concurrent_scenarios", "32")
# Gaia2's runs per scenario (`are.simulation.benchmark.gaia2_submission.NUM_RUNS`).
GAIA2_RUNS = (1, 2, 3)
STANDARD_EXECUTION, STANDARD_TIME = "standard/execution", "standard/time"
AGENT2AGENT, NOISE = "agent2agent/mini", "noise/mini"

# tiny_a2a: the main agent asks the email app's expert agent, which sends the email.
A2A_TASK = "[a2a:main] Email bob@example.com with subject 'Hi' saying 'Hello Bob', then tell me."
A2A_EXPERT = "[a2a:expert]"
A2A_SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "[a2a:main]": [
        {
            "action": "EmailClientV2__expert_agent",
            "action_input": {
                "task": f"{A2A_EXPERT} Email bob@example.com: subject 'Hi', 'Hello Bob'."
            },
        },
        {
            "action": "AgentUserInterface__send_message_to_user",
            "action_input": {"content": "Done: I emailed Bob."},
        },
    ],
    A2A_EXPERT: [
        {
            "action": "EmailClientV2__send_email",
            "action_input": {
                "recipients": ["bob@example.com"],
                "subject": "Hi",
                "content": "Hello Bob",
            },
        },
        {"action": "final_answer", "action_input": {"answer": "task completed"}},
    ],
}


def scripts() -> dict[str, list[dict[str, Any]]]:
    # The main agent's history comes to quote the expert's marker: its own marker goes first.
    return {**A2A_SCRIPTS, **agent_scripts()}


# -- datasets -----------------------------------------------------------------------------------


def relabel(
    source: Path,
    target: Path,
    *,
    scenario_id: str | None = None,
    tags: Sequence[str] | None = None,
    task: str | None = None,
) -> None:
    """Copy one of ARE's exported scenarios, with another id, capability tags or user task."""
    document = json.loads(source.read_text(encoding="utf-8"))
    definition = document["metadata"]["definition"]
    if scenario_id is not None:
        definition["scenario_id"] = scenario_id
    if tags is not None:
        definition["tags"] = list(tags)
    if task is not None:
        for event in document["events"]:
            if event["action"]["function"] == "send_message_to_agent":
                for arg in event["action"]["args"]:
                    if arg["name"] == "content":
                        arg["value"] = task
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document), encoding="utf-8")


def gaia2_layout(root: Path, *, full: bool) -> Path:
    """Gaia2's config folders (see the module doc)."""
    exported = write_dataset(root / "exported", only=PAIR)
    folder = next(exported.glob("*/*"))  # <config>/<split>
    email, skip = folder / "tiny_email.json", folder / "tiny_skip.json"
    layout = root / "gaia2"
    relabel(email, layout / "execution" / "validation" / "tiny_email.json")
    if full:
        relabel(skip, layout / "time" / "validation" / "tiny_skip.json", tags=["Time"])
        relabel(
            email,
            layout / "mini" / "validation" / "tiny_a2a.json",
            scenario_id="tiny_a2a",
            task=A2A_TASK,
        )
    return layout


# -- running both sides -------------------------------------------------------------------------


def judge_args(traces: Path, out: Path, endpoint: str) -> list[str]:
    return [
        "-d",
        str(traces),
        "--config",
        "hf",
        "--output_dir",
        str(out),
        *compare.model_args(endpoint),
    ]


def gaia2_args(layout: Path, out: Path, endpoint: str) -> list[str]:
    return ["-d", str(layout), "--output_dir", str(out), *compare.model_args(endpoint)]


@dataclass
class AreBenchmark:
    """`are-benchmark COMMAND ...` under way in a subprocess."""

    command: str
    process: subprocess.Popen[bytes]
    stderr: IO[bytes]

    def wait(self, timeout: float = 300.0) -> None:
        try:
            code = self.process.wait(timeout=timeout)
        finally:
            self.stderr.seek(0)
            tail = self.stderr.read()[-4000:].decode(errors="replace")
        assert code == 0, f"are-benchmark {self.command} failed ({code}):\n{tail}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.stderr.close()


def start_are(command: str, args: Sequence[str]) -> AreBenchmark:
    """Start ARE's own `are-benchmark COMMAND ARGS` (output to a file: a pipe could fill)."""
    code = "import sys; from are.simulation.benchmark import main; sys.exit(main())"
    stderr = tempfile.TemporaryFile()  # noqa: SIM115  # closed by `stop`: it outlives this call
    process = subprocess.Popen(
        [sys.executable, "-c", code, command, *args],
        env={**os.environ, "OPENAI_API_KEY": "stub"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    return AreBenchmark(command, process, stderr)


def ours(command: str, args: Sequence[str]) -> int:
    os.environ.setdefault("OPENAI_API_KEY", "stub")
    return bench_main(list(args), command=command)


stub = stub_fixture(lambda: Script(agent=scripts()))


are_stub = stub_fixture(lambda: Script(agent=scripts()), name="are_stub")


@pytest.fixture(scope="module")
def pair_run(stub: StubLLM, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `bench run` of the single-turn pair: its hf/ traces are what judge reads."""
    root = tmp_path_factory.mktemp("pair")
    dataset = write_dataset(root / "dataset", only=PAIR)
    out = root / "run"
    args = compare.bench_args(dataset, out, stub.endpoint, extra=["--no-report"])
    assert ours("run", args) == 0
    return out


@pytest.fixture(scope="module")
def execution_layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gaia2_layout(tmp_path_factory.mktemp("execution_layout"), full=False)


@pytest.fixture(scope="module")
def full_layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gaia2_layout(tmp_path_factory.mktemp("full_layout"), full=True)


@pytest.fixture(scope="module")
def are_side(
    pair_run: Path,
    execution_layout: Path,
    are_stub: StubLLM,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, tuple[AreBenchmark, Path]]]:
    """ARE's judge and gaia2-run, started together, to be waited for by the tests that need them."""
    root = tmp_path_factory.mktemp("are")
    runs = {
        "judge": (judge_args(pair_run, root / "judge", are_stub.endpoint), root / "judge"),
        "gaia2-run": (
            gaia2_args(execution_layout, root / "gaia2", are_stub.endpoint),
            root / "gaia2",
        ),
    }
    started = {
        name: (start_are(name, [*args, *EXECUTOR]), out) for name, (args, out) in runs.items()
    }
    try:
        yield started
    finally:
        for process, _ in started.values():
            process.stop()


@pytest.fixture(scope="module")
def judged(
    are_side: dict[str, tuple[AreBenchmark, Path]],
    pair_run: Path,
    stub: StubLLM,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Path]:
    """ARE's and areasync's judge of the pair's traces (ours with ARE's options, thread executor
    included)."""
    out = tmp_path_factory.mktemp("judged") / "ours"
    assert ours("judge", [*judge_args(pair_run, out, stub.endpoint), *EXECUTOR]) == 0
    process, are_out = are_side["judge"]
    process.wait()
    return {"are": are_out, "ours": out}


@pytest.fixture(scope="module")
def gaia2_pair(
    are_side: dict[str, tuple[AreBenchmark, Path]],
    execution_layout: Path,
    stub: StubLLM,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("gaia2_pair") / "ours"
    assert ours("gaia2-run", [*gaia2_args(execution_layout, out, stub.endpoint), *EXECUTOR]) == 0
    process, are_out = are_side["gaia2-run"]
    process.wait()
    return {"are": are_out, "ours": out}


@pytest.fixture(scope="module")
def gaia2_full(
    full_layout: Path, stub: StubLLM, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """areasync's gaia2-run on the full layout (ARE's default executor), and what it asked."""
    out = tmp_path_factory.mktemp("gaia2_full") / "out"
    before = len(stub.requests)
    assert ours("gaia2-run", gaia2_args(full_layout, out, stub.endpoint)) == 0
    return {"out": out, "requests": stub.requests[before:]}


# -- comparing ----------------------------------------------------------------------------------


def output_folders(out: Path) -> list[str]:
    """The phase/config folders gaia2-run wrote an output.jsonl to."""
    return sorted(str(p.parent.relative_to(out)) for p in out.glob("*/*/output.jsonl"))


def gaia2_stats(out: Path) -> dict[str, Any]:
    """`benchmark_stats.json` without timings, its per-config list in a fixed order (ARE's
    comes out of a polars grouping in no particular order)."""
    stats = compare.stats(out)
    stats["run_configurations"] = sorted(
        stats["run_configurations"], key=lambda entry: (entry["phase_name"], entry["config"])
    )
    return stats


def summary_sections(out: Path) -> dict[str, list[str]]:
    """`submission_summary.md` by section, without durations (sections come in no fixed order)."""
    sections: dict[str, list[str]] = {}
    title = ""
    for line in (out / "submission_summary.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line
            sections.setdefault(title, [])
        elif "duration" not in line.lower():
            sections.setdefault(title, []).append(line)
    return sections


def statuses(out: Path) -> dict[tuple[str, int | None], str]:
    return {key: row["status"] for key, row in compare.verdicts(out).items()}


def definitions(out: Path) -> dict[tuple[str, int | None], dict[str, Any]]:
    """Each run's scenario definition, from the hf trace ARE's exporter wrote."""
    table = {}
    for path in out.glob("hf/*.json"):
        definition = json.loads(path.read_text(encoding="utf-8"))["metadata"]["definition"]
        table[(definition["scenario_id"], definition["run_number"])] = definition
    return table


# -- the commands' options and help ---------------------------------------------------------------


def _signature(param: click.Parameter) -> tuple[Any, ...]:
    return (
        param.name,
        tuple(param.opts),
        tuple(param.secondary_opts),
        repr(param.type),
        repr(param.default),
        param.required,
        getattr(param, "is_flag", None),
        getattr(param, "hidden", None),
    )


@pytest.mark.parametrize("name", ["judge", "gaia2-run"])
def test_each_command_takes_exactly_are_benchmarks_options(name: str) -> None:
    """ARE's options (not its command argument), plus areasync's own eight."""
    ours_ = {_signature(p) for p in bench_command(name).params}
    are = {_signature(p) for p in are_command().params if p.name != "command"}
    assert are <= ours_
    assert {signature[0] for signature in ours_ - are} == {
        "workers",
        "run_budget",
        "require_confinement",
        "resume",
        "retry",
        "report",
        "max_scenario_bytes",
        "timings",
    }


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_commands_help_says_what_differs_from_are(name: str, capsys: Any) -> None:
    from areasync.cli import main

    assert main(["bench", name, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"are-benchmark {name}" in text
    differences = ("virtual clock", "--workers", "one event loop", "--resume", "--retry N")
    for difference in (*differences, "--report"):
        assert difference in text, difference
    if name == "judge":
        assert "--num_runs is 1" in text and "--config hf" in text
    if name == "gaia2-run":
        assert "./gaia2_results" in text and "420 s for Time" in text


# -- judge --------------------------------------------------------------------------------------


@pytest.mark.slow  # waits for ARE's own judge and gaia2-run (`are_side`)
def test_judge_gives_are_benchmark_judges_verdicts_and_stats(judged: dict[str, Path]) -> None:
    assert compare.verdicts(judged["ours"]) == compare.verdicts(judged["are"])
    assert compare.stats(judged["ours"]) == compare.stats(judged["are"])


@pytest.mark.slow  # waits for ARE's own judge and gaia2-run (`are_side`)
def test_judge_agrees_with_the_run_that_wrote_the_traces(
    judged: dict[str, Path], pair_run: Path
) -> None:
    """Offline, ARE's judge gives each trace the verdict the run gave it online."""
    assert statuses(judged["ours"]) == statuses(pair_run)
    assert {k[0]: v == "success" for k, v in statuses(pair_run).items()} == {
        k: expected_verdicts()[k] for k in PAIR
    }


def test_judge_refuses_an_explicit_num_runs_as_are_does(
    pair_run: Path, stub: StubLLM, tmp_path: Path, capsys: Any
) -> None:
    """ARE reads the click context's parameter source: ours, given ARE's parameter."""
    before = len(stub.requests)
    args = [*judge_args(pair_run, tmp_path / "out", stub.endpoint), "--num_runs", "1"]
    assert ours("judge", args) == 2
    assert "In judge mode, num_runs should not be explicitly specified" in capsys.readouterr().err
    assert len(stub.requests) == before
    assert not (tmp_path / "out" / "output.jsonl").exists()


@pytest.mark.slow  # waits for ARE's own judge and gaia2-run (`are_side`)
def test_judge_resume_judges_nothing_again(
    judged: dict[str, Path], pair_run: Path, stub: StubLLM, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(judged["ours"], out)
    (out / "output.jsonl").unlink()
    before = len(stub.requests)
    assert ours("judge", [*judge_args(pair_run, out, stub.endpoint), *EXECUTOR, "--resume"]) == 0
    assert len(stub.requests) == before
    assert compare.verdicts(out) == compare.verdicts(judged["ours"])


@pytest.mark.slow  # waits for ARE's own judge and gaia2-run (`are_side`)
def test_judge_writes_a_report_of_its_verdicts(judged: dict[str, Path]) -> None:
    page = (judged["ours"] / "index.html").read_text(encoding="utf-8")
    run = '<td><span class="verdict '  # a run's row (a scenario's row has its own badge)
    assert page.count(run + 'pass"') == 1 and page.count(run + 'fail"') == 1
    assert "tiny_skip" in page and "EmailClientV2__send_email" in page


def test_a_sweep_is_not_resumed_by_another_command(
    pair_run: Path, stub: StubLLM, capsys: Any
) -> None:
    """`judge --resume` over a `run`'s output directory would take the run's records for
    verdicts: refused, nothing touched."""
    records = sorted(p.read_text() for p in (pair_run / RECORDS_DIR / "runs").glob("*.json"))
    assert ours("judge", [*judge_args(pair_run, pair_run, stub.endpoint), "--resume"]) == 2
    assert "command" in capsys.readouterr().err
    assert (
        sorted(p.read_text() for p in (pair_run / RECORDS_DIR / "runs").glob("*.json")) == records
    )


# -- gaia2-run ----------------------------------------------------------------------------------


@pytest.mark.slow  # waits for ARE's own judge and gaia2-run (`are_side`)
def test_gaia2_run_writes_what_are_benchmark_gaia2_run_writes(gaia2_pair: dict[str, Path]) -> None:
    """The same phase/config folders and verdicts in each, the same stats over all of them,
    the same submission summary."""
    are, ours_ = gaia2_pair["are"], gaia2_pair["ours"]
    assert output_folders(ours_) == output_folders(are) == [STANDARD_EXECUTION]
    assert compare.verdicts(ours_ / STANDARD_EXECUTION) == compare.verdicts(
        are / STANDARD_EXECUTION
    )
    assert gaia2_stats(ours_) == gaia2_stats(are)
    assert summary_sections(ours_) == summary_sections(are)


def test_gaia2_run_runs_every_config_of_every_phase_three_times(gaia2_full: dict[str, Any]) -> None:
    out = gaia2_full["out"]
    expected = {
        STANDARD_EXECUTION: ("tiny_email", "success"),
        STANDARD_TIME: ("tiny_skip", "failed"),
        AGENT2AGENT: ("tiny_a2a", "success"),
        NOISE: ("tiny_a2a", "failed"),
    }
    assert output_folders(out) == sorted(expected)
    for folder, (scenario_id, status) in expected.items():
        assert statuses(out / folder) == {(scenario_id, n): status for n in GAIA2_RUNS}, folder
    assert compare.stats(out)["statistics"]["global"]["total_runs"] == 4 * len(GAIA2_RUNS)
    assert (out / "submission_summary.md").is_file()


def test_gaia2_run_gives_time_scenarios_their_shorter_duration(gaia2_full: dict[str, Any]) -> None:
    """Gaia2 runs a scenario tagged Time for 420 s, the others for 1,800 s (ARE's defaults)."""
    out = gaia2_full["out"]
    time_runs = definitions(out / STANDARD_TIME).values()
    other_runs = [
        d for f in (STANDARD_EXECUTION, AGENT2AGENT, NOISE) for d in definitions(out / f).values()
    ]
    assert {d["duration"] for d in time_runs} == {420.0}
    assert {d["duration"] for d in other_runs} == {1800.0}


def test_gaia2_run_hands_apps_to_expert_agents_only_in_the_agent2agent_phase(
    gaia2_full: dict[str, Any],
) -> None:
    """The expert agent gets its task as its first message (after its system prompt), once per
    Agent2Agent run; in the noise phase the main agent's call to it fails (no such tool)."""
    out = gaia2_full["out"]
    experts = [
        request
        for request in gaia2_full["requests"]
        if len(request["messages"]) == 2 and A2A_EXPERT in json.dumps(request["messages"][1])
    ]
    assert len(experts) == len(GAIA2_RUNS)
    flags = {
        folder: {
            (
                d["has_a2a_augmentation"],
                d["has_tool_augmentation"],
                d["has_env_events_augmentation"],
            )
            for d in definitions(out / folder).values()
        }
        for folder in (STANDARD_EXECUTION, AGENT2AGENT, NOISE)
    }
    assert flags == {
        STANDARD_EXECUTION: {(False, False, False)},
        AGENT2AGENT: {(True, False, False)},
        NOISE: {(False, True, True)},
    }


def test_gaia2_run_records_each_phase_and_config_apart_and_resume_runs_only_the_rest(
    gaia2_full: dict[str, Any], full_layout: Path, stub: StubLLM, tmp_path: Path, capsys: Any
) -> None:
    """tiny_a2a runs in two phases: each phase's runs are recorded in its own folder, so a
    resume after losing the noise phase's records runs those three again, and only those."""
    out = tmp_path / "out"
    shutil.copytree(gaia2_full["out"], out)
    folders = [out / f for f in (STANDARD_EXECUTION, STANDARD_TIME, AGENT2AGENT, NOISE)]
    assert [len(RunRecords(f).all()) for f in folders] == [len(GAIA2_RUNS)] * 4
    kept = {p: p.read_bytes() for f in folders[:3] for p in (f / RECORDS_DIR / "runs").glob("*")}
    shutil.rmtree(out / NOISE / RECORDS_DIR)
    (out / NOISE / "output.jsonl").unlink()
    capsys.readouterr()
    assert ours("gaia2-run", [*gaia2_args(full_layout, out, stub.endpoint), "--resume"]) == 0
    assert f"{3 * len(GAIA2_RUNS)} runs resumed" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in kept} == kept
    assert len(RunRecords(out / NOISE).all()) == len(GAIA2_RUNS)
    assert statuses(out / NOISE) == statuses(gaia2_full["out"] / NOISE)


def test_gaia2_run_writes_a_report_per_phase_and_config(gaia2_full: dict[str, Any]) -> None:
    out = gaia2_full["out"]
    for folder in output_folders(out):
        page = (out / folder / "index.html").read_text(encoding="utf-8")
        # One row per run, each with its verdict (the scenario's row has a badge of its own).
        assert page.count('<td><span class="verdict ') == len(GAIA2_RUNS), folder


def test_gaia2_run_without_output_dir_writes_where_are_does(
    execution_layout: Path, stub: StubLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs, records and reports in ./gaia2_results; benchmark_stats.json in the working
    directory, as ARE writes it."""
    monkeypatch.chdir(tmp_path)
    args = ["-d", str(execution_layout), *compare.model_args(stub.endpoint)]
    assert ours("gaia2-run", args) == 0
    results = tmp_path / "gaia2_results"
    assert output_folders(results) == [STANDARD_EXECUTION]
    assert len(RunRecords(results / STANDARD_EXECUTION).all()) == len(GAIA2_RUNS)
    assert (results / STANDARD_EXECUTION / "index.html").is_file()
    assert (results / RECORDS_DIR / "options.json").is_file()
    assert (tmp_path / "benchmark_stats.json").is_file()


# -- the thread executor, and Ctrl-C --------------------------------------------------------------


def test_thread_executor_pre_runs_the_oracle_while_loading_as_are_does(
    pair_run: Path, stub: StubLLM, tmp_path: Path
) -> None:
    """With `--executor_type thread` ARE pre-runs each scenario's oracle for its judge as it
    loads it, before any run has started: the same verdicts as the default executor."""
    dataset = write_dataset(tmp_path / "dataset", only=PAIR)
    args = compare.bench_args(
        dataset, tmp_path / "out", stub.endpoint, extra=[*EXECUTOR, "--no-report"]
    )
    assert ours("run", args) == 0
    assert statuses(tmp_path / "out") == statuses(pair_run)


def hf_dataset(root: Path, scenario: Path, configs: Sequence[str]) -> Path:
    """A Hugging Face dataset on disk with Gaia2's row format (`scenario_id`, `data`), one
    scenario in every config: `--hf-dataset ROOT` loads it with no network."""
    rows = root / "rows.jsonl"
    root.mkdir(parents=True, exist_ok=True)
    row = {"scenario_id": json.loads(scenario.read_text())["metadata"]["definition"]["scenario_id"]}
    rows.write_text(json.dumps({**row, "data": scenario.read_text()}) + "\n", encoding="utf-8")
    card = ["---", "configs:"]
    for config in configs:
        card += [
            f"- config_name: {config}",
            "  data_files:",
            "  - split: validation",
            "    path: rows.jsonl",
        ]
    (root / "README.md").write_text("\n".join([*card, "---", ""]), encoding="utf-8")
    return root


@pytest.mark.slow  # a gaia2-run process interrupted, then ARE's upload path checked
def test_an_interrupted_gaia2_run_uploads_nothing(execution_layout: Path, tmp_path: Path) -> None:
    """ARE's Ctrl-C kills gaia2-run before its upload; areasync's stops the sweep and lets ARE's
    code go on, which must not upload (nor say it did) what is only part of an evaluation."""
    gaia2_configs = ("execution", "search", "adaptability", "time", "ambiguity", "mini")
    scenario = execution_layout / "execution" / "validation" / "tiny_email.json"
    dataset = hf_dataset(tmp_path / "hf", scenario, gaia2_configs)
    out = tmp_path / "out"
    # Slow replies: the sweep is still going when its first run is recorded.
    with stub_llm(Script(agent=scripts()), latency=0.3) as slow:
        args = [
            "--hf-dataset",
            str(dataset),
            "--hf_upload",
            "someone/gaia2-results",
            "--output_dir",
            str(out),
            *compare.model_args(slow.endpoint)[:-2],
            "--log-level",
            "INFO",  # ARE logs each upload step at INFO
            "--no-report",
        ]
        env = {
            **os.environ,
            "OPENAI_API_KEY": "stub",
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
        }
        command = [sys.executable, "-m", "areasync.cli", "bench", "gaia2-run", *args]
        with tempfile.TemporaryFile() as stderr_file:
            process = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr_file,
            )
            try:
                records = f"*/*/{RECORDS_DIR}/runs/*.json"

                def a_run_recorded() -> bool:
                    assert process.poll() is None, "gaia2-run ended before its first run finished"
                    return bool(list(out.glob(records)))

                eventually_blocking(a_run_recorded, within=120, poll=0.05)
                process.send_signal(signal.SIGINT)
                process.wait(timeout=120)
            finally:
                process.kill()
            stderr_file.seek(0)
            stderr = stderr_file.read().decode(errors="replace")
    assert process.returncode == 130, stderr[-4000:]
    assert "nothing was uploaded" in stderr and "--resume" in stderr
    # ARE's uploader logs this first, and gaia2-run this once it returned.
    assert "Uploading all results" not in stderr and "Traces uploaded" not in stderr
    assert "Traceback" not in stderr
    assert 1 <= len(list(out.glob(records))) < len(gaia2_configs) * len(GAIA2_RUNS)


# -- soak: ARE's gaia2-run on every phase ----------------------------------------------------------


@pytest.mark.soak
def test_gaia2_run_full_layout_parity_with_are(
    gaia2_full: dict[str, Any], full_layout: Path, are_stub: StubLLM, tmp_path: Path
) -> None:
    """Every phase of ARE's gaia2-run (Time durations, Agent2Agent, noise) gives the verdicts,
    stats and summary areasync's gives."""
    are_out = tmp_path / "are"
    process = start_are(
        "gaia2-run", [*gaia2_args(full_layout, are_out, are_stub.endpoint), *EXECUTOR]
    )
    try:
        process.wait(timeout=600)
    finally:
        process.stop()
    ours_out: Path = gaia2_full["out"]
    assert output_folders(ours_out) == output_folders(are_out)
    for folder in output_folders(are_out):
        assert compare.verdicts(ours_out / folder) == compare.verdicts(are_out / folder), folder
        durations = {k: d["duration"] for k, d in definitions(ours_out / folder).items()}
        assert durations == {k: d["duration"] for k, d in definitions(are_out / folder).items()}
    assert gaia2_stats(ours_out) == gaia2_stats(are_out)
    assert summary_sections(ours_out) == summary_sections(are_out)
