"""`areasync run`: the event log as a table, the validation result, the exit status."""

import io
import os
import subprocess
import sys
from pathlib import Path

from areasync.bridge.sandbox.audit import DEFAULT_MAX_FILE_BYTES
from areasync.cli.run import print_event_table
from areasync.protocol.records import EventRecord
from tests.scenarios import oversized_scenario_file


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "areasync.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_run_prints_the_event_log_and_passes_with_the_oracle() -> None:
    done = run_cli("run", "scenario_tutorial", "--mode", "fast", "--oracle")
    assert done.returncode == 0, done.stderr
    assert "EmailClientApp.forward_email" in done.stdout
    assert "validation: PASSED" in done.stdout


def test_a_command_leaves_no_temporary_directory_of_ares_behind(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    # ARE itself leaves the directory it makes on import (what the command cleans up) ...
    subprocess.run([sys.executable, "-c", "import are.simulation.config"], env=env, check=True)
    (made,) = tmp_path.glob("are_simulation_sandbox_*")
    made.rmdir()
    # ... and a command that imported ARE and ran a scenario leaves none.
    done = run_cli("run", "scenario_tutorial", "--mode", "fast", "--oracle", env=env)
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.glob("are_simulation_sandbox_*")) == []


def test_run_exits_nonzero_when_validation_fails() -> None:
    # Without the oracle nobody forwards the email, so the tutorial's validation fails.
    done = run_cli("run", "scenario_tutorial", "--mode", "fast")
    assert done.returncode == 1
    assert "validation: FAILED" in done.stdout


def test_run_reports_an_unknown_scenario_clearly() -> None:
    done = run_cli("run", "no_such_scenario")
    assert done.returncode == 2
    assert "unknown scenario id 'no_such_scenario'" in done.stderr


def test_event_table_shows_time_since_start_type_and_result() -> None:
    out = io.StringIO()
    record = EventRecord(
        event_id="e1",
        event_type="ENV",
        time=105.0,
        app="MessagingApp",
        function="add_message",
        args={"content": "hi"},
        return_value="msg-1",
    )
    print_event_table([record], start=100.0, out=out)
    row = out.getvalue().splitlines()[-1]
    assert row.split()[:3] == ["5.0", "ENV", "MessagingApp.add_message"]
    assert '-> "msg-1"' in row


def test_run_reads_a_scenario_file_above_the_sandbox_file_limit(tmp_path: Path) -> None:
    # The operator's file is held to --max-scenario-bytes (64 MiB by default), never to the
    # agents' per-file sandbox limit (max_file_bytes, 10 MiB).
    path = oversized_scenario_file(tmp_path, DEFAULT_MAX_FILE_BYTES + 512 * 1024)
    done = run_cli("run", str(path), "--mode", "fast", "--oracle")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "validation: PASSED" in done.stdout


def test_run_refuses_a_scenario_file_above_max_scenario_bytes_in_one_line_naming_it(
    tmp_path: Path,
) -> None:
    path = oversized_scenario_file(tmp_path, 20_000)
    done = run_cli("run", str(path), "--oracle", "--max-scenario-bytes", "10000")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"areasync: scenario file {str(path)!r} is 20000 bytes, above the 10000-byte limit for "
        "scenario files (max_scenario_bytes); raise it with --max-scenario-bytes N"
    ]
