"""What `areasync bench` does once per process (`areasync/gaia2/boot.py`), checked without timing
anything: the workers' fork server is already starting when the driver imports ARE's CLI, only
for a command line that wants workers; the fork server imports only what its workers need, and
freezes it; a driver whose runs go to workers imports no LiteLLM; the command's process exits
with its heap frozen; a command called in-process does neither."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.boot import ORACLE_PRELOAD, PRELOAD, wants_workers
from areasync.gaia2.dataset import agent_scripts, select, write_dataset
from areasync.gaia2.stub_llm import Script
from tests.stubs import stub_llm

BOUND_S = 300.0

# In a fresh interpreter: note whether the fork server was started when ARE's CLI began to be
# imported, and the garbage collector's frozen count in the very last atexit hook; then run
# `areasync ARGV...` as the process's own command (`areasync.cli.main()` reads sys.argv). With
# "stop" (argv[2]), it says what it saw there and ends, its fork server killed: the rest of the
# command and the fork server's imports (ARE, LiteLLM: seconds of CPU) would tell nothing more.
PROBE = """
import atexit, gc, importlib.abc, json, os, signal, sys
from multiprocessing import forkserver

seen = {}
stop = sys.argv[2:] == ["stop"]

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "are.simulation.benchmark.cli" and "booted" not in seen:
            pid = forkserver._forkserver._forkserver_pid
            seen["booted"] = pid is not None
            seen["preload"] = list(forkserver._forkserver._preload_modules)
            if stop:
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                print(json.dumps(seen), flush=True)
                os._exit(0)
        return None

sys.meta_path.insert(0, Watch())
atexit.register(
    lambda: print(
        json.dumps({**seen, "frozen": gc.get_freeze_count(), "litellm": "litellm" in sys.modules})
    )
)
sys.argv = ["areasync", *json.loads(sys.argv[1])]
from areasync.cli import main
main()
"""


def probe(argv: Sequence[str], *, stop: bool = False) -> dict[str, object]:
    """What PROBE saw of `areasync ARGV` (`stop`: as ARE's CLI began to be imported)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(argv)), *(["stop"] if stop else [])],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        env={**os.environ, "OPENAI_API_KEY": "stub"},  # LiteLLM wants one; the stub ignores it
    )
    seen: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


# Refused by click once ARE's CLI is imported (its options are the command's): nothing runs.
REFUSED = ["bench", "run", "-d", "nowhere", "--run-budget", "0"]


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        ([], True),  # the default: a worker per core
        (["--workers", "2"], True),
        (["--workers=1"], True),
        (["--workers", "0"], False),
        (["--workers=0"], False),
        (["--workers", "two"], False),  # refused as it is parsed
        (["--executor_type", "thread"], False),
        (["--executor_type=thread"], False),
        (["--executor_type", "process"], True),
        (["--ray", "auto"], False),
        (["--ray=auto"], False),
        (["--help"], False),
        (["-d", "DIR", "--workers", "2", "--workers", "0"], False),  # click keeps the last
    ],
)
def test_a_command_line_wanting_workers_is_told_from_one_that_does_not(
    argv: list[str], wanted: bool
) -> None:
    assert wants_workers(argv) is wanted


def test_the_fork_server_is_starting_before_the_driver_imports_ares_cli() -> None:
    seen = probe([*REFUSED, "--workers", "1"], stop=True)
    assert seen["booted"] is True


@pytest.fixture(scope="module")
def without_workers() -> dict[str, object]:
    """What the probe saw of one command without workers (a process importing ARE: seconds),
    for the tests that look at different parts of it."""
    return probe([*REFUSED, "--workers", "0"])


def test_no_fork_server_is_started_for_a_command_without_workers(
    without_workers: dict[str, object],
) -> None:
    assert without_workers["booted"] is False


def test_the_commands_process_exits_with_its_heap_frozen(
    without_workers: dict[str, object],
) -> None:
    """CPython's finalisation would otherwise collect ARE's whole heap (seconds)."""
    frozen = without_workers["frozen"]
    assert isinstance(frozen, int) and frozen > 0


def test_a_command_called_in_process_leaves_the_collector_alone() -> None:
    code = (
        "import gc, sys; from areasync.cli import main; "
        f"main({[*REFUSED, '--workers', '0']!r}); print(gc.get_freeze_count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=BOUND_S
    )
    assert done.stdout.strip().splitlines()[-1] == "0"


def test_the_fork_server_freezes_what_it_preloaded_last() -> None:
    """Neither its workers' collections nor its own exit walk ARE and LiteLLM again."""
    assert PRELOAD[-1] == "areasync.gaia2.preloaded"
    code = "import gc, areasync.gaia2.preloaded; print(gc.get_freeze_count())"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=BOUND_S
    )
    assert int(done.stdout.strip()) > 0


DRIVER_ONLY = ("datasets", "are.simulation.benchmark", "are.simulation.benchmark.cli")
MODELS = ("litellm", "openai")


@pytest.fixture(scope="module")
def preloaded() -> dict[str, list[str]]:
    """Which of DRIVER_ONLY and MODELS a fresh interpreter holds once it imported
    ORACLE_PRELOAD ("oracle"), then the rest of PRELOAD ("models"): one interpreter importing
    ARE for both tests."""
    code = (
        "import importlib, json, sys\n"
        "watched, seen = set(json.loads(sys.argv[3])), {}\n"
        "for what, names in (('oracle', sys.argv[1]), ('models', sys.argv[2])):\n"
        "    for name in json.loads(names): importlib.import_module(name)\n"
        "    seen[what] = sorted(set(sys.modules) & watched)\n"
        "print(json.dumps(seen))"
    )
    names = [json.dumps(list(ORACLE_PRELOAD)), json.dumps(list(PRELOAD))]
    done = subprocess.run(
        [sys.executable, "-c", code, *names, json.dumps([*DRIVER_ONLY, *MODELS])],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    seen: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


@pytest.mark.parametrize(
    ("what", "left_out"),
    [("models", DRIVER_ONLY), ("oracle", DRIVER_ONLY + MODELS)],
)
def test_the_fork_server_does_not_import_what_its_workers_never_need(
    preloaded: dict[str, list[str]], what: str, left_out: Sequence[str]
) -> None:
    """ARE's benchmark CLI and Hugging Face's `datasets` load the dataset, in the driver: a
    worker runs a scenario from its JSON. An `--oracle` run calls no model: no LiteLLM. The
    fork server imports beside the driver, and the first run waits for the slower of the two."""
    assert set(preloaded[what]) & set(left_out) == set()


def test_an_oracle_commands_fork_server_preloads_no_model_client() -> None:
    seen = probe([*REFUSED, "--workers", "1", "--oracle"], stop=True)
    assert seen["preload"] == list(ORACLE_PRELOAD)


def test_an_oracle_sweep_runs_in_workers_booted_without_a_model_client(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "dataset", only=["tiny_email", "tiny_skip"])
    out = tmp_path / "out"
    args = compare.bench_args(dataset, out, "http://127.0.0.1:9/v1", oracle=True)
    done = subprocess.run(
        [sys.executable, "-m", "areasync.cli", "bench", "run", *args, "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        env={**os.environ, "OPENAI_API_KEY": "stub"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    statuses = {key: row["status"] for key, row in compare.verdicts(out).items()}
    assert statuses == {("tiny_email", None): "success", ("tiny_skip", None): "success"}


def test_a_driver_whose_runs_go_to_workers_never_imports_litellm(tmp_path: Path) -> None:
    """The workers call the model; the driver only loads the dataset and writes the outputs."""
    chosen = select(only=["tiny_email"])
    dataset = write_dataset(tmp_path / "dataset", only=["tiny_email"])
    with stub_llm(Script(agent=agent_scripts(chosen))) as stub:
        args = compare.bench_args(dataset, tmp_path / "out", stub.endpoint)
        seen = probe(["bench", "run", *args, "--workers", "1", "--no-report"])
    assert seen["litellm"] is False
    assert compare.verdicts(tmp_path / "out")[("tiny_email", None)]["status"] == "success"
