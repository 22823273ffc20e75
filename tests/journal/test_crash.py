"""A record acknowledged under `every` survives SIGKILL of the real process that wrote it."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from areasync.journal import JournalStore

ROOT = Path(__file__).resolve().parents[2]


def _run_and_kill(directory: Path, acks_before_kill: int, extra_delay: float) -> list[int]:
    """Start the child, SIGKILL it after `acks_before_kill` acknowledgements and a short extra
    delay, and return every seq it acknowledged (printed before it died)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.journal.crash_child", str(directory)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert child.stdout is not None
    lines = []
    try:
        assert child.stdout.readline() == "created\n"
        lines = [child.stdout.readline() for _ in range(acks_before_kill)]
        time.sleep(extra_delay)
    finally:
        child.send_signal(signal.SIGKILL)
        lines += child.stdout.read().splitlines()  # printed before the kill: still in the pipe
        child.wait()
    return [int(line) for line in lines]


def test_every_acknowledged_record_survives_a_kill_in_order(tmp_path: Path) -> None:
    rng = random.Random(os.urandom(8))
    for round_ in range(3):
        directory = tmp_path / f"round{round_}"
        acked = _run_and_kill(directory, rng.randrange(1, 150), rng.uniform(0, 0.005))
        journal = JournalStore(directory).read("crash")
        stored = [record.seq for record in journal.inputs]
        assert stored == list(range(len(stored))), "in order, no gap, no duplicate"
        assert stored[: len(acked)] == acked, "every acknowledged record is there"
