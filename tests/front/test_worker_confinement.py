"""A session worker of `areasync serve --workers 2` is confined by the kernel, as real processes.

An agent's tool call runs hostile code in its worker: `HostileApp`'s tools read files with
libc's own `open(2)` and open sockets, which the session's audit hook never sees. What stops
them is the worker's confinement (`sessionworker/confine.py`): Landlock, seccomp,
no_new_privs. Each test checks one thing the agent must not reach, from a real worker.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from areasync.workers.confine import probe
from tests.front.support import ADMIN, REAL_PROCESSES, Front, call, front, hello, reply
from tests.scenarios import HostileScenario

pytestmark = REAL_PROCESSES

HOSTILE = HostileScenario.scenario_id
SUPPORT = probe()
needs_landlock = pytest.mark.skipif(
    SUPPORT.landlock_abi < 4, reason="this kernel has no Landlock ABI 4 (Linux 6.7)"
)
needs_seccomp = pytest.mark.skipif(SUPPORT.seccomp is not None, reason=str(SUPPORT.seccomp))


async def _tool(served: Front, tool: str, **args: Any) -> str:
    """What `HostileApp`'s `tool` answers, called by the hostile session's agent."""
    ws, welcome = await hello(served.url(HOSTILE), "agent", served.token(HOSTILE, "agent"))
    assert welcome["type"] == "welcome", welcome
    await call(ws, 1, f"HostileApp__{tool}", **args)
    result, _ = await reply(ws, 1)
    await ws.close()
    assert result["type"] == "result", (result, served.said())
    return str(result["value"])


@needs_landlock
async def test_a_hostile_tool_in_a_worker_cannot_read_the_state_dirs_admin_token(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    async with front("--scenario", HOSTILE, "--state-dir", str(state), log=tmp_path / "log") as f:
        token_file = state / "admin-token"
        assert ADMIN in token_file.read_text()  # the front keeps it there
        answer = await _tool(f, "read_file", path=str(token_file))
        assert answer == "refused: EACCES"


@needs_landlock
async def test_a_hostile_tool_in_a_worker_cannot_read_the_fronts_environment_nor_command_line(
    tmp_path: Path,
) -> None:
    async with front("--scenario", HOSTILE, log=tmp_path / "log") as served:
        for part in ("environ", "cmdline"):  # the front's command line holds --token
            path = f"/proc/{served.process.pid}/{part}"
            assert await _tool(served, "read_file", path=path) == "refused: EACCES"


@needs_landlock
async def test_a_hostile_tool_in_a_worker_cannot_read_outside_python_and_its_own_paths(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not for agents")
    async with front("--scenario", HOSTILE, log=tmp_path / "log") as served:
        assert await _tool(served, "read_file", path=str(secret)) == "refused: EACCES"


@needs_seccomp
async def test_a_hostile_tool_in_a_worker_cannot_open_an_outbound_socket(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        async with front("--scenario", HOSTILE, log=tmp_path / "log") as served:
            assert await _tool(served, "connect", port=port) == "refused: EACCES"


async def test_a_worker_runs_with_no_new_privileges_and_its_seccomp_filter(
    tmp_path: Path,
) -> None:
    # The worker reads its own /proc/<pid>/ (its memory ceiling does): the control that the
    # tool runs and reads where it may.
    async with front("--scenario", HOSTILE, log=tmp_path / "log") as served:
        status = await _tool(served, "read_file", path="/proc/self/status")
        assert status.startswith("read: ")
        assert "\nNoNewPrivs:\t1\n" in status
        if SUPPORT.seccomp is None:
            assert "\nSeccomp:\t2\n" in status
        assert "session workers confined by the kernel" in served.banner or SUPPORT.missing


def test_require_confinement_without_workers_is_refused_saying_to_give_workers() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "areasync.cli", "serve", "--require-confinement", "--workers", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AREASYNC_TOKEN": ""},
        check=False,
    )
    assert done.returncode == 2
    assert "--require-confinement" in done.stderr and "--workers N" in done.stderr
