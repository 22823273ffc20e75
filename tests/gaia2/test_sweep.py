"""Long sweeps behave: records, `--resume`, `--retry`, progress lines, Ctrl-C.

Runs the single-turn pair (`tiny_email` passes, `tiny_skip` fails on its own) in-process
against the stub LLM; an outage of the stub (HTTP 503 on every request for a while) plays the
model endpoint failing. The Ctrl-C test runs the real command in a subprocess and interrupts
it with SIGINT once a run has finished.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.cli import main as bench_main
from areasync.gaia2.dataset import SPECS, write_dataset
from areasync.gaia2.stub_llm import StubLLM
from areasync.gaia2.sweep import RECORDS_DIR, RunRecords, Sweep
from tests.stubs import stub_fixture, stub_llm
from tests.waiting import eventually_blocking

PAIR = ("tiny_email", "tiny_skip")
# ARE's default agent tries 80 steps; the client retries each failed request twice.
FULL_OUTAGE = 80 * 3


stub = stub_fixture()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("pair"), only=PAIR)


@pytest.fixture(scope="module")
def email_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("email"), only=("tiny_email",))


def run(dataset: Path, out: Path, stub: StubLLM, *extra: str) -> int:
    os.environ.setdefault("OPENAI_API_KEY", "stub")
    args = compare.bench_args(
        dataset, out, stub.endpoint, extra=["--max_concurrent_scenarios", "1", *extra]
    )
    return bench_main(args)


@pytest.fixture(scope="module")
def finished(pair: Path, stub: StubLLM, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One complete sweep of the pair, and what the stub was asked during it."""
    out = tmp_path_factory.mktemp("finished") / "out"
    before = len(stub.requests)
    status = run(pair, out, stub)
    return {"out": out, "status": status, "requests": len(stub.requests) - before}


def copy_of(finished: dict[str, Any], tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(finished["out"], out)
    return out


def records(out: Path) -> dict[str, Any]:
    return {r.scenario_id: r for r in RunRecords(out).all()}


def test_every_finished_run_is_recorded(finished: dict[str, Any]) -> None:
    assert finished["status"] == 0
    table = compare.verdicts(finished["out"])
    recorded = records(finished["out"])
    assert set(recorded) == set(PAIR)
    for (scenario_id, _), row in table.items():
        assert recorded[scenario_id].success == (row["status"] == "success")
        assert recorded[scenario_id].attempts == 1
        assert recorded[scenario_id].endpoint_error_count == 0
    assert (finished["out"] / RECORDS_DIR / "options.json").exists()


def test_a_sweep_writes_its_report(finished: dict[str, Any]) -> None:
    assert (finished["out"] / "index.html").exists()


def test_resume_runs_nothing_when_every_run_finished(
    finished: dict[str, Any], pair: Path, stub: StubLLM, tmp_path: Path
) -> None:
    out = copy_of(finished, tmp_path)
    (out / "output.jsonl").unlink()
    before = len(stub.requests)
    assert run(pair, out, stub, "--resume") == 0
    assert len(stub.requests) == before
    assert compare.verdicts(out) == compare.verdicts(finished["out"])
    assert compare.stats(out) == compare.stats(finished["out"])


def test_resume_runs_only_the_runs_not_recorded(
    finished: dict[str, Any], pair: Path, stub: StubLLM, tmp_path: Path
) -> None:
    out = copy_of(finished, tmp_path)
    next((out / RECORDS_DIR / "runs").glob("tiny_skip.*")).unlink()
    before = len(stub.requests)
    assert run(pair, out, stub, "--resume") == 0
    asked = stub.requests[before:]
    assert asked, "tiny_skip ran again"
    assert all(SPECS["tiny_skip"].marker in json.dumps(r["messages"]) for r in asked)
    assert compare.verdicts(out) == compare.verdicts(finished["out"])


def test_resume_with_options_that_change_results_is_refused(
    finished: dict[str, Any], pair: Path, stub: StubLLM, tmp_path: Path, capsys: Any
) -> None:
    out = copy_of(finished, tmp_path)
    before = sorted(p.read_text() for p in (out / RECORDS_DIR / "runs").glob("*.json"))
    assert run(pair, out, stub, "--resume", "--limit", "1") == 2
    assert "limit" in capsys.readouterr().err
    after = sorted(p.read_text() for p in (out / RECORDS_DIR / "runs").glob("*.json"))
    assert after == before


def test_resume_may_change_concurrency_and_timeout(
    finished: dict[str, Any], pair: Path, stub: StubLLM, tmp_path: Path
) -> None:
    out = copy_of(finished, tmp_path)
    assert run(pair, out, stub, "--resume", "--scenario_timeout", "900") == 0


def test_resume_needs_an_output_dir() -> None:
    with pytest.raises(ValueError, match="--output_dir"):
        Sweep(None, resume=True)


def test_retry_runs_again_a_run_whose_endpoint_failed(
    email_only: Path, stub: StubLLM, tmp_path: Path, capsys: Any
) -> None:
    outage = stub.fail_next(FULL_OUTAGE)
    try:
        assert run(email_only, tmp_path / "out", stub, "--retry", "1") == 0
    finally:
        failed = outage.failed
        stub.fail_next(0)
    assert failed > 0
    record = records(tmp_path / "out")["tiny_email"]
    assert record.success is True and record.attempts == 2
    assert "1 retried" in capsys.readouterr().err
    assert compare.verdicts(tmp_path / "out")[("tiny_email", None)]["status"] == "success"


def test_without_retry_an_endpoint_failure_is_recorded_and_resume_runs_it_again(
    email_only: Path, stub: StubLLM, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    stub.fail_next(FULL_OUTAGE)
    try:
        assert run(email_only, out, stub) == 0
    finally:
        stub.fail_next(0)
    record = records(out)["tiny_email"]
    assert record.success is False and record.infrastructure_failure
    assert "ServiceUnavailableError" in record.endpoint_errors[0]
    assert run(email_only, out, stub, "--resume") == 0
    assert records(out)["tiny_email"].success is True
    assert compare.verdicts(out)[("tiny_email", None)]["status"] == "success"


def test_an_agents_own_failure_is_never_retried(pair: Path, stub: StubLLM, tmp_path: Path) -> None:
    assert run(pair, tmp_path / "out", stub, "--retry", "3") == 0
    skip = records(tmp_path / "out")["tiny_skip"]
    assert skip.success is False and skip.attempts == 1 and not skip.infrastructure_failure


def test_progress_is_a_plain_line_per_run_off_a_terminal(
    pair: Path, stub: StubLLM, tmp_path: Path, capsys: Any
) -> None:
    assert run(pair, tmp_path / "out", stub, "--no-report") == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "runs done" in line]
    assert [line.split(":")[1].split(",")[0].strip() for line in lines] == [
        "1/2 runs done",
        "2/2 runs done",
    ]
    assert "ETA" in lines[0] and "% passed" in lines[-1]
    assert not (tmp_path / "out" / "index.html").exists()


@pytest.mark.slow  # two `bench run` processes, each booting its workers
def test_ctrl_c_stops_cleanly_writing_what_finished_and_resume_does_the_rest(
    pair: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    runs_dir = out / RECORDS_DIR / "runs"
    # Every model request of tiny_skip's runs is held unanswered: they cannot finish before
    # Ctrl-C, however fast the machine, while tiny_email's runs can and one is recorded first.
    # All eight run at once, so that held runs never take every place, whatever their order.
    with stub_llm() as stub:
        held = stub.hold(SPECS["tiny_skip"].marker, requests=None)
        args = compare.bench_args(
            pair,
            out,
            stub.endpoint,
            num_runs=4,
            extra=["--max_concurrent_scenarios", "8", "--no-report"],
        )
        env = {**os.environ, "OPENAI_API_KEY": "stub"}
        command = [sys.executable, "-m", "areasync.cli", "bench", "run", *args]
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:

            def a_run_recorded() -> bool:
                assert process.poll() is None, process.communicate()
                return bool(list(runs_dir.glob("*.json")))

            eventually_blocking(a_run_recorded, within=300, poll=0.05)  # a bound on a hang
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=300)
        finally:
            process.kill()
        assert process.returncode == 130, stderr
        assert "Interrupted" in stderr and "--resume" in stderr
        assert "Traceback" not in stderr
        written = compare.verdicts(out)
        assert 1 <= len(written) <= 4  # tiny_email's runs at most: tiny_skip's were held
        assert len(RunRecords(out).all()) == len(written)
        held.release()
        resumed = subprocess.run(
            [*command, "--resume"], env=env, capture_output=True, text=True, timeout=300
        )
        assert resumed.returncode == 0, resumed.stderr
    assert len(compare.verdicts(out)) == 8
    assert f"{len(written)} runs resumed" in resumed.stderr
