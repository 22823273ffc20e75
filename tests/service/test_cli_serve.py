"""`areasync serve` as a user runs it: banner, then SIGINT ends sessions and writes traces."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from tests.service.support import json_files

SERVE = [sys.executable, "-m", "areasync.cli", "serve", "--port", "0", "--mode", "manual"]


async def _banner(process: Process) -> str:
    assert process.stdout is not None
    text = ""
    with anyio.fail_after(60):
        async for chunk in TextReceiveStream(process.stdout):
            text += chunk
            if "Ctrl-C" in text:
                return text
    raise AssertionError(f"no banner; got {text!r}")


async def test_serve_prints_urls_and_tokens_then_shuts_down_cleanly_on_sigint(
    tmp_path: Path,
) -> None:
    command = [*SERVE, "--token", "cli-admin", "--trace-dir", str(tmp_path)]
    async with await anyio.open_process(command) as process:
        banner = await _banner(process)
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            code = await process.wait()
    assert code == 0
    assert re.search(r"http://127\.0\.0\.1:\d+/\?token=cli-admin", banner)
    assert re.search(r"ws://127\.0\.0\.1:\d+/sessions/scenario_tutorial", banner)
    assert all(role in banner for role in ("agent", "user", "observer", "controller"))
    [trace] = json_files(tmp_path)
    assert trace.startswith("scenario_tutorial_")


async def test_serve_refuses_an_unknown_scenario_with_a_clear_message() -> None:
    result = await anyio.run_process([*SERVE, "--scenario", "no_such_scenario"], check=False)
    assert result.returncode == 2
    assert b"unknown scenario id 'no_such_scenario'" in result.stderr
