"""A front killed with SIGKILL leaks nothing: its workers die with it, and the next front
reclaims its private directories (journals, workers' temp dirs) but never a live front's.

Real processes: fronts of one session worker each, in a temp dir of the test's own (`TMPDIR`),
so that only their directories are looked at.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from areasync.privatedirs import JOURNALS_PREFIX, WORKERS_PREFIX
from tests.front.support import REAL_PROCESSES, WAIT, call, front, hello, process_end
from tests.scenarios import RUNAWAY_STARTED, RunawayScenario
from tests.service.durable_support import read_until

pytestmark = REAL_PROCESSES

RUNAWAY = RunawayScenario.scenario_id


def _in(tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp)}


def _private(tmp: Path) -> set[str]:
    """The fronts' private directories in `tmp`."""
    return {p.name for p in tmp.iterdir() if p.name.startswith((JOURNALS_PREFIX, WORKERS_PREFIX))}


async def test_a_worker_held_in_c_dies_with_its_front_killed_with_sigkill(tmp_path: Path) -> None:
    # Its loop and its channel's reader are held (the interpreter lock, in C): only the kernel
    # can end it. The supervisor's budget is far away: it does not.
    served_with = ("--workers", "1", "--scenario", RUNAWAY, "--tool-budget", "3600")
    pids: list[int] = []
    try:
        async with front(*served_with, log=tmp_path / "log") as served:
            pids = list((await served.worker_pids()).values())
            ws, welcome = await hello(served.url(RUNAWAY), "agent", served.token(RUNAWAY, "agent"))
            assert welcome["type"] == "welcome"
            await call(ws, 1, "RunawayApp__backtrack", length=60)
            await read_until(served.process, RUNAWAY_STARTED)
            served.process.send_signal(signal.SIGKILL)
            with anyio.fail_after(WAIT):
                await served.process.wait()
                for pid in pids:
                    await process_end(pid)
    finally:
        for pid in pids:  # the old code's worker would run on: not past the test
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def tmp() -> Iterator[Path]:
    """A temp dir of the test's own, with a short path: the fork server's socket is made in
    it, and a Unix socket's path has at most 107 bytes (pytest's paths under xdist pass it)."""
    path = Path(tempfile.mkdtemp(prefix="areasync-front-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_the_next_front_reclaims_a_killed_fronts_private_dirs_and_keeps_a_live_ones(
    tmp_path: Path, tmp: Path
) -> None:
    one = ("--workers", "1")
    async with front(*one, log=tmp_path / "live.log", env=_in(tmp)):
        live = _private(tmp)
        async with front(*one, log=tmp_path / "killed.log", env=_in(tmp)) as killed:
            pids = list((await killed.worker_pids()).values())
            theirs = _private(tmp) - live
            assert len(theirs) == 2, theirs  # its journals, its workers' temp dirs
            killed.process.send_signal(signal.SIGKILL)
            with anyio.fail_after(WAIT):
                await killed.process.wait()
                for pid in pids:
                    await process_end(pid)
        assert theirs <= _private(tmp)  # left behind
        async with front(*one, log=tmp_path / "next.log", env=_in(tmp)):
            now = _private(tmp)
        assert not now & theirs
        assert live <= now
