"""A short soak (`bench/soak.py`): oracle-agent sessions with observers and controllers, plus
sessions created and stopped continuously, against a server in its own process. Marked `soak`:
`make soak` runs the long one (SOAK_SECONDS, default 600, 100 sessions) and prints its report.
"""

from __future__ import annotations

import argparse
import asyncio
import os

import pytest

from bench.soak import soak


@pytest.mark.soak
def test_a_short_soak_has_no_errors_flat_memory_and_every_fd_back() -> None:
    seconds = float(os.environ.get("SOAK_TEST_SECONDS", "40"))
    args = argparse.Namespace(seconds=seconds, sessions=10, churn=2, sample=2.0, seed=7)
    report = asyncio.run(soak(args))
    assert report["errors"] == 0, report["error_details"]
    assert report["sessions_completed"] > 0 and report["sessions_churned"] > 0
    assert report["validated"] == report["sessions_completed"]
    assert report["fds"]["start"] == report["fds"]["end"]
    memory = report["memory"]
    # Flat after warm-up: before the leak fix (see test_memory.py) this grew ~90 MB a minute.
    assert memory["last_mb"] - memory["first_mb"] < 16, memory
