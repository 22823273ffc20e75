"""gaia2-cli's per-run artifacts, written from the output of a real `areasync bench run`.

One in-process run of the tiny dataset (default agent, stub LLM; one scenario re-tagged as a
Search scenario, so the run has two splits) feeds every test; the `soak` test also runs ARE's
own `are-benchmark run` and checks both outputs give the same artifacts.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.artifacts import (
    EVENTS_JSONL,
    RESULT_JSON,
    RESULTS_JSONL,
    TRACE_JSONL,
    folder_name,
    sim_time,
    write_artifacts,
)
from areasync.gaia2.dataset import (
    BASICS,
    CONFIG,
    DONE,
    DONE_AGAIN,
    EMAIL,
    EMAIL_AGAIN,
    SPECS,
    SPLIT,
    expected_verdicts,
    write_dataset,
)
from areasync.gaia2.runs import OutputDirError
from tests.stubs import stub_llm

# Simulated seconds before the delayed scenarios' second turn (shorter than the dataset's own).
DELAY = 30.0
# The scenario given the Search capability tag, and so the split `search`.
SEARCH_SCENARIO = "tiny_skip"
FOLDERS = {
    "tiny_email": "execution/tiny_email",
    "tiny_delay": "execution/tiny_delay",
    "tiny_delay_skip": "execution/tiny_delay_skip",
    "tiny_skip": "search/tiny_skip",
}


def retag(dataset: Path, scenario_id: str, tag: str, config: str = CONFIG) -> None:
    """Give a dataset scenario another capability tag (its Gaia2 split)."""
    path = dataset / config / SPLIT / f"{scenario_id}.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["metadata"]["definition"]["tags"] = [tag]
    path.write_text(json.dumps(document), encoding="utf-8")


@dataclass
class Bench:
    out: Path
    written: list[Path]
    requests: list[dict[str, Any]]  # what the stub LLM was asked, in order

    def folder(self, scenario_id: str) -> Path:
        return self.out / FOLDERS[scenario_id]

    def result(self, scenario_id: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.folder(scenario_id) / RESULT_JSON).read_text())
        return loaded

    def lines(self, scenario_id: str, name: str) -> list[dict[str, Any]]:
        text = (self.folder(scenario_id) / name).read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    root = tmp_path_factory.mktemp("gaia2_artifacts")
    dataset = write_dataset(root / "dataset", delay=DELAY, only=BASICS)
    retag(dataset, SEARCH_SCENARIO, "Search")
    out = root / "out"
    with stub_llm() as stub:
        compare.run_areasync(compare.bench_args(dataset, out, stub.endpoint, extra=["--no-report"]))
        requests = stub.requests
    return Bench(out=out, written=write_artifacts(out), requests=requests)


def test_one_folder_per_run_in_gaia2_cli_layout(bench: Bench) -> None:
    """`<split>/<scenario_id>/` holds result.json, events.jsonl and trace.jsonl per run."""
    folders = {p.parent.relative_to(bench.out).as_posix() for p in bench.out.rglob(RESULT_JSON)}
    assert folders == set(FOLDERS.values())
    expected = {
        bench.out / folder / name
        for folder in FOLDERS.values()
        for name in (RESULT_JSON, EVENTS_JSONL, TRACE_JSONL)
    } | {bench.out / RESULTS_JSONL}
    assert set(bench.written) == expected
    assert all(path.is_file() for path in expected)


def test_result_verdict_is_output_jsonl_verdict(bench: Bench) -> None:
    table = compare.verdicts(bench.out)
    assert {scenario_id for scenario_id, _ in table} == set(BASICS)
    for (scenario_id, run_number), row in table.items():
        result = bench.result(scenario_id)
        assert result["scenario_id"] == scenario_id
        assert result["run_number"] == run_number
        assert result["success"] is (row["status"] == "success")
        assert result["success"] is expected_verdicts()[scenario_id]
        assert result["reward"] == row["score"]
        assert result["status"] == row["status"]
        if result["success"]:
            assert "failure_reasons" not in result
        else:
            assert result["rationale"] == row["rationale"]
            assert result["failure_reasons"] == [row["rationale"]]


def test_result_counts_and_final_answer(bench: Bench) -> None:
    """Agent and oracle events, LLM calls and the agent's last message, as the run had them."""
    result = bench.result("tiny_delay")
    assert result["num_agent_events"] == 4  # two emails, two messages to the user
    assert result["num_oracle_events"] == 4
    assert result["num_llm_calls"] == 4
    assert result["agent_response"] == DONE_AGAIN["action_input"]["content"]
    assert result["split"] == "execution" and bench.result(SEARCH_SCENARIO)["split"] == "search"
    assert result["model"] == "openai/agent" and result["agent"] == "default"
    assert result["duration"] >= DELAY
    skipped = bench.result("tiny_skip")
    assert (skipped["num_agent_events"], skipped["num_llm_calls"]) == (1, 1)


def test_results_jsonl_holds_every_result(bench: Bench) -> None:
    lines = (bench.out / RESULTS_JSONL).read_text(encoding="utf-8").splitlines()
    results = {row["scenario_id"]: row for row in map(json.loads, lines)}
    assert results == {scenario_id: bench.result(scenario_id) for scenario_id in BASICS}


def test_events_list_the_runs_events_in_order(bench: Bench) -> None:
    """Both turns of a delayed scenario: user message, email, reply; then again after DELAY."""
    events = bench.lines("tiny_delay", EVENTS_JSONL)
    assert [(e["event_type"], e["app"], e["fn"]) for e in events] == [
        ("USER", "AgentUserInterface", "send_message_to_agent"),
        ("AGENT", "EmailClientV2", "send_email"),
        ("AGENT", "AgentUserInterface", "send_message_to_user"),
        ("USER", "AgentUserInterface", "send_message_to_agent"),
        ("AGENT", "EmailClientV2", "send_email"),
        ("AGENT", "AgentUserInterface", "send_message_to_user"),
    ]
    times = [e["t"] for e in events]
    assert times == sorted(times)
    assert times[3] - times[0] >= DELAY
    assert all(e["sim_t"] == sim_time(e["t"]) for e in events)


def test_event_arguments_and_results_are_values(bench: Bench) -> None:
    """Arguments decoded from ARE's strings; a tool's return value; writes flagged."""
    user, email, reply = bench.lines("tiny_email", EVENTS_JSONL)
    for key, value in EMAIL["action_input"].items():
        assert email["args"][key] == value
    assert email["w"] is True and user["w"] is False
    assert isinstance(email["ret"], str) and email["ret"]  # the new email's id
    assert reply["args"] == DONE["action_input"]
    assert SPECS["tiny_email"].marker in user["args"]["content"]
    assert "error" not in email


def test_events_are_ares_trace_events(bench: Bench) -> None:
    """Every run's events are its ARE trace's completed events, condition checks aside."""
    timelines = compare.timeline(bench.out)
    for (scenario_id, _), expected in timelines.items():
        events = bench.lines(scenario_id, EVENTS_JSONL)
        start = events[0]["t"]
        assert [(e["event_type"], f"{e['app']}.{e['fn']}", e["t"] - start) for e in events] == [
            (kind, tool, t - expected[0][2]) for kind, tool, t in expected
        ], scenario_id


def _requests_for(bench: Bench, scenario_id: str) -> list[list[dict[str, Any]]]:
    marker = SPECS[scenario_id].marker
    return [
        request["messages"]
        for request in bench.requests
        if "judge" not in str(request.get("model"))
        and any(marker in str(message.get("content")) for message in request["messages"])
    ]


def test_trace_holds_each_llm_call_as_the_agent_sent_it(bench: Bench) -> None:
    """One line per LLM call; its request's messages are what the stub LLM received."""
    for scenario_id in BASICS:
        trace = bench.lines(scenario_id, TRACE_JSONL)
        received = _requests_for(bench, scenario_id)
        assert len(trace) == len(received) > 0, scenario_id
        assert [line["request"]["messages"] for line in trace] == received, scenario_id
        assert [line["seq"] for line in trace] == list(range(1, len(trace) + 1))
        assert {line["type"] for line in trace} == {"llm_call"}
        assert all(line["timestamp"].endswith("Z") for line in trace)


def test_trace_responses_are_the_agents_actions(bench: Bench) -> None:
    played = [EMAIL, DONE, EMAIL_AGAIN, DONE_AGAIN]
    trace = bench.lines("tiny_delay", TRACE_JSONL)
    for line, action in zip(trace, played, strict=True):
        content = line["response"]["content"]
        assert content.startswith("Thought:")
        assert f'"action": "{action["action"]}"' in content
        assert line["response"]["tool_calls"] == []
        assert set(line["response"]["usage"]) >= {"prompt_tokens", "completion_tokens"}


def test_trace_shows_the_agent_each_tool_result(bench: Bench) -> None:
    """The email's id (events.jsonl's `ret`) is in the next call's request, as its observation."""
    email = bench.lines("tiny_email", EVENTS_JSONL)[1]
    second = bench.lines("tiny_email", TRACE_JSONL)[1]
    assert email["ret"] in second["request"]["messages"][-1]["content"]


def test_writing_again_gives_the_same_files(bench: Bench) -> None:
    before = {path: path.read_bytes() for path in bench.written}
    again = write_artifacts(bench.out)
    assert set(again) == set(before)
    assert {path: path.read_bytes() for path in again} == before


def test_runs_of_every_config_get_artifacts(tmp_path: Path) -> None:
    """Without `--config` ARE runs every config and rewrites output.jsonl for each, which ends
    up listing the last config's runs only: the others' traces still give their artifacts."""
    dataset = write_dataset(tmp_path / "dataset", only=["tiny_email"])
    # The same scenario, filed under a second config's folder.
    extra = write_dataset(tmp_path / "extra", only=[SEARCH_SCENARIO])
    (dataset / "search" / SPLIT).mkdir(parents=True)
    name = f"{SEARCH_SCENARIO}.json"
    (extra / CONFIG / SPLIT / name).rename(dataset / "search" / SPLIT / name)
    retag(dataset, SEARCH_SCENARIO, "Search", config="search")
    out = tmp_path / "out"
    with stub_llm() as stub:
        args = compare.bench_args(dataset, out, stub.endpoint)
        del args[args.index("--config") : args.index("--config") + 2]
        compare.run_areasync(args)
    assert set(compare.verdicts(out)) == {(SEARCH_SCENARIO, None)}  # ARE's own listing
    write_artifacts(out)
    email = json.loads((out / "execution/tiny_email" / RESULT_JSON).read_text())
    assert (email["success"], email["reward"], email["status"]) == (True, 1.0, "success")
    assert len((out / "execution/tiny_email" / EVENTS_JSONL).read_text().splitlines()) == 3
    skipped = json.loads((out / "search" / SEARCH_SCENARIO / RESULT_JSON).read_text())
    assert (skipped["success"], skipped["status"]) == (False, "failed")


def test_an_unreadable_trace_costs_only_its_runs_details(bench: Bench, tmp_path: Path) -> None:
    """A trace cut short (a run killed while ARE wrote it): that run keeps its verdict from
    output.jsonl and says which trace it could not read; the other runs are whole."""
    out = tmp_path / "out"
    shutil.copytree(bench.out, out, ignore=shutil.ignore_patterns("execution", "search"))
    (damaged,) = (out / "hf").glob("tiny_email_*.json")
    damaged.write_text(damaged.read_text()[:100])
    write_artifacts(out)
    folder = out / "execution/tiny_email"
    result = json.loads((folder / RESULT_JSON).read_text())
    assert result["success"] is True and result["num_agent_events"] is None
    assert damaged.name in " ".join(result["are_trace_errors"])
    assert not (folder / EVENTS_JSONL).exists() and (folder / TRACE_JSONL).is_file()
    assert (out / "execution/tiny_delay" / EVENTS_JSONL).is_file()


def test_folder_names_stay_one_safe_component() -> None:
    """Scenario ids are the dataset's: none may leave the output directory or shadow ARE's."""
    for hostile in (
        "../../etc",
        "/abs/path",
        ".hidden",
        "a\x00b",
        "hf",
        "lite",
        "run_1",
        "é" * 300,
    ):
        name = folder_name(hostile)
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name), (hostile, name)
        assert name != hostile and len(name) <= 96
    assert folder_name("tiny_email") == "tiny_email"
    assert folder_name("a/b") != folder_name("a_b")


def test_a_folder_without_are_output_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputDirError, match=r"no ARE benchmark output.*--output_dir"):
        write_artifacts(tmp_path)
    with pytest.raises(OutputDirError, match="not a directory"):
        write_artifacts(tmp_path / "missing")


# -- the same artifacts from ARE's own run ------------------------------------------------------

# Fields that differ between any two runs: ids, wall and simulated clocks, paths.
_VOLATILE = frozenset(
    {"event_id", "t", "sim_t", "timestamp", "latency_ms", "duration", "are_traces"}
)
_IDS = re.compile(
    r"\b[0-9a-f]{32}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
)
_CLOCK = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def _normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalized(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    if isinstance(value, str):
        return _CLOCK.sub("<time>", _IDS.sub("<id>", value))
    return value


def _artifacts(out: Path) -> dict[str, Any]:
    files = sorted(p for p in out.rglob("*") if p.name in (RESULT_JSON, EVENTS_JSONL, TRACE_JSONL))
    table: dict[str, Any] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        loaded = (
            json.loads(text) if path.suffix == ".json" else list(map(json.loads, text.splitlines()))
        )
        table[path.relative_to(out).as_posix()] = _normalized(loaded)
    return table


@pytest.mark.soak
def test_same_artifacts_from_are_benchmark_run(tmp_path: Path) -> None:
    """ARE's `are-benchmark run` output gives the artifacts ours gives, ids and times aside."""
    dataset = write_dataset(tmp_path / "dataset", only=["tiny_email", "tiny_skip"])
    retag(dataset, SEARCH_SCENARIO, "Search")
    are_out, ours_out = tmp_path / "are", tmp_path / "areasync"
    with stub_llm() as stub:
        compare.run_are(compare.bench_args(dataset, are_out, stub.endpoint))
        compare.run_areasync(
            compare.bench_args(dataset, ours_out, stub.endpoint, extra=["--no-report"])
        )
    write_artifacts(are_out)
    write_artifacts(ours_out)
    ours = _artifacts(ours_out)
    assert set(ours) == {
        f"{folder}/{name}"
        for folder in ("execution/tiny_email", "search/tiny_skip")
        for name in (RESULT_JSON, EVENTS_JSONL, TRACE_JSONL)
    }
    assert _artifacts(are_out) == ours
