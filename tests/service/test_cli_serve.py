"""`areasync serve` as a user runs it: banner, then SIGINT ends sessions and writes traces."""

from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from areasync.protocol import CloseCode
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
    assert re.search(r"http://127\.0\.0\.1:\d+/#token=cli-admin", banner)
    assert re.search(r"ws://127\.0\.0\.1:\d+/sessions/scenario_tutorial", banner)
    assert all(role in banner for role in ("agent", "user", "observer", "controller"))
    [trace] = json_files(tmp_path)
    assert trace.startswith("scenario_tutorial_")


async def test_serve_refuses_an_unknown_scenario_with_a_clear_message() -> None:
    result = await anyio.run_process([*SERVE, "--scenario", "no_such_scenario"], check=False)
    assert result.returncode == 2
    assert b"unknown scenario id 'no_such_scenario'" in result.stderr


async def test_serve_refuses_a_bad_limit_with_its_name() -> None:
    result = await anyio.run_process([*SERVE, "--max-lag", "0"], check=False)
    assert result.returncode == 2
    assert b"max_lag must be >= 1" in result.stderr


async def test_serve_applies_a_limit_given_on_the_command_line() -> None:
    command = [*SERVE, "--token", "cli-admin", "--max-connections-per-session", "1"]
    async with await anyio.open_process(command) as process:
        banner = await _banner(process)
        match = re.search(r"ws://127\.0\.0\.1:\d+/sessions/scenario_tutorial", banner)
        assert match is not None
        hello = json.dumps({"type": "hello", "id": 1, "role": "observer", "token": "cli-admin"})
        async with connect(match[0]) as first:
            await first.send(hello)
            assert json.loads(await first.recv())["type"] == "welcome"
            async with connect(match[0]) as second:
                await second.send(hello)
                refused = json.loads(await second.recv())
                with pytest.raises(ConnectionClosed) as closed:
                    await second.recv()
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            await process.wait()
    assert refused["type"] == "error" and refused["code"] == "capacity"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == CloseCode.CAPACITY


async def _status_as(port: int, host: str) -> bytes:
    """The status line of GET /health sent to 127.0.0.1:`port` with `Host: host`."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(f"GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        return (await stream.receive()).split(b"\r\n")[0]


async def test_serve_passes_allow_origin_and_allow_host_to_the_service() -> None:
    command = [*SERVE, "--token", "cli-admin", "--allow-origin", "http://dash.example:9000"]
    command += ["--allow-host", "box.lan"]
    async with await anyio.open_process(command) as process:
        try:
            banner = await _banner(process)
            match = re.search(r"ws://127\.0\.0\.1:(\d+)/sessions/scenario_tutorial", banner)
            assert match is not None
            hello = {"type": "hello", "id": 1, "role": "observer", "token": "cli-admin"}
            with anyio.fail_after(30):
                async with connect(match[0], origin="http://dash.example:9000") as page:  # type: ignore[arg-type]
                    await page.send(json.dumps(hello))
                    welcome = json.loads(await page.recv())
                by_name = await _status_as(int(match[1]), f"box.lan:{match[1]}")
        finally:
            process.send_signal(signal.SIGINT)
            with anyio.fail_after(30):
                await process.wait()
    assert welcome["type"] == "welcome" and by_name == b"HTTP/1.1 200 OK"


async def test_serve_refuses_a_malformed_allow_origin_with_its_name() -> None:
    result = await anyio.run_process([*SERVE, "--allow-origin", "dash.example/x"], check=False)
    assert result.returncode == 2
    assert b"allow_origins: 'dash.example/x' is not an origin" in result.stderr
