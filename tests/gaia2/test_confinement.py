"""A bench run's worker processes confined by the kernel (`areasync/gaia2/confinement.py`):
what they may reach follows ARE's options, ARE's file-system apps work inside their temp
dir, and `--require-confinement` refuses where no worker would be confined."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from areasync.gaia2 import confinement
from areasync.gaia2.cli import main as bench_main
from areasync.workers.confine import Support

BOUND_S = 300.0  # a worker start (the fork server's first one imports ARE) and a call


def network(**options: object) -> tuple[tuple[int, ...], bool]:
    spec = confinement.bench_confinement(options, required=False)
    return spec.connect_ports, spec.datagrams


def test_an_oracle_runs_workers_get_no_network() -> None:
    assert network(oracle=True, endpoint="http://127.0.0.1:8000/v1") == ((), False)


def test_a_loopback_endpoint_gives_its_port_and_no_name_resolution() -> None:
    endpoint = "http://127.0.0.1:8000/v1"
    assert network(endpoint=endpoint, judge_endpoint=endpoint) == ((8000,), False)


def test_an_agent2agent_endpoint_adds_its_port() -> None:
    endpoint = "http://127.0.0.1:8000/v1"
    options = {"endpoint": endpoint, "judge_endpoint": endpoint}
    assert network(**options, a2a_endpoint="http://127.0.0.1:7000") == ((7000, 8000), False)


def test_a_hosted_provider_gives_https_and_name_resolution() -> None:
    assert network() == ((443,), True)
    judged_elsewhere = network(endpoint="http://localhost:9000", judge_endpoint="https://j.example")
    assert judged_elsewhere == ((443, 9000), True)


def test_ares_file_system_app_works_in_a_confined_bench_worker() -> None:
    """A bench run's fork server made ARE's default sandbox directory before any worker
    existed: a worker makes its file-system apps' sandboxes in its own temp dir instead."""
    script = "from tests.gaia2.confined import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=BOUND_S
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert "raised" not in out, out["raised"]
    assert out["text"] == "kept"
    assert out["report"]["missing"] == []
    assert Path(out["where"]).is_relative_to(out["report"]["tmp"])


def test_require_confinement_is_refused_for_runs_in_this_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["-d", str(tmp_path), "--oracle", "--workers", "0", "--require-confinement"]
    assert bench_main(args) == 2
    assert "--require-confinement confines worker processes" in capsys.readouterr().err


def test_require_confinement_refuses_a_kernel_without_landlock_saying_what_to_do() -> None:
    refused = confinement.refusal(Support(landlock_abi=0, seccomp=None))
    assert refused is not None
    assert "this kernel has no Landlock" in refused
    assert "drop --require-confinement" in refused


def test_require_confinement_refuses_a_landlock_without_tcp_rights() -> None:
    refused = confinement.refusal(Support(landlock_abi=3, seccomp=None))
    assert refused is not None and "TCP connect and bind are not confined" in refused


def test_a_kernel_with_landlock_abi_4_and_seccomp_is_not_refused() -> None:
    assert confinement.refusal(Support(landlock_abi=4, seccomp=None)) is None
