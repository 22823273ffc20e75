"""`areasync serve` as a user runs it: banner, then SIGINT ends sessions and writes traces."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import pytest_asyncio
from anyio.streams.text import TextReceiveStream
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from areasync.bridge.sandbox.audit import DEFAULT_MAX_FILE_BYTES
from areasync.journal import JournalStore
from areasync.protocol import CloseCode
from areasync.service import ServiceConfig
from areasync.workers.count import usable_cpus
from bench.misbehaving import RawClient, hello_frame
from tests.bounds import PROCESS_S
from tests.scenarios import oversized_scenario_file
from tests.service.durable_support import read_banner
from tests.service.support import json_files
from tests.waiting import eventually

SERVE = [sys.executable, "-m", "areasync.cli", "serve", "--port", "0", "--mode", "manual"]


# One `serve` for the tests that check an option reaches the service and leave the server as
# they found it (a start through the front costs seconds of CPU): OpenEnv's idle timeout, an
# allowed origin and host, and the workers left to their default. Their tests run on the
# module's event loop, the server's.
OPTIONED = [
    *("--token", "cli-admin", "--trace-dir", ""),
    *("--openenv-idle-timeout", "0.3"),
    *("--allow-origin", "http://dash.example:9000", "--allow-host", "box.lan"),
]
ON_THE_OPTIONED_SERVER = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def optioned(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """The banner of `serve` with OPTIONED, running until the module's tests are done."""
    log = tmp_path_factory.mktemp("optioned") / "serve.log"
    with log.open("ab") as stderr:
        process = await anyio.open_process([*SERVE, *OPTIONED], stderr=stderr)
    async with process:
        try:
            yield await read_banner(process)
        finally:
            process.send_signal(signal.SIGINT)
            with anyio.fail_after(PROCESS_S):
                await process.wait()


async def banner_then_sigint(command: list[str]) -> tuple[str, int]:
    """`areasync serve`'s banner, and its exit status after a SIGINT once it printed it."""
    async with await anyio.open_process(command) as process:
        banner = await read_banner(process)
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(PROCESS_S):
            return banner, await process.wait()


async def test_serve_prints_urls_and_tokens_then_shuts_down_cleanly_on_sigint(
    tmp_path: Path,
) -> None:
    command = [*SERVE, "--token", "cli-admin", "--trace-dir", str(tmp_path)]
    banner, code = await banner_then_sigint(command)
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


async def test_serve_loads_a_scenario_file_above_the_sandbox_file_limit_within_max_scenario_bytes(
    tmp_path: Path,
) -> None:
    # The operator's --scenario file is held to --max-scenario-bytes, never to the agents'
    # per-file sandbox limit (max_file_bytes, 10 MiB).
    path = oversized_scenario_file(tmp_path, DEFAULT_MAX_FILE_BYTES + 512 * 1024)
    command = [*SERVE, "--scenario", str(path), "--max-scenario-bytes", str(16 * 1024 * 1024)]
    banner, code = await banner_then_sigint(command)
    assert code == 0
    assert re.search(r"ws://127\.0\.0\.1:\d+/sessions/oversized", banner)


async def test_serve_refuses_a_scenario_file_above_max_scenario_bytes_in_one_line_naming_it(
    tmp_path: Path,
) -> None:
    path = oversized_scenario_file(tmp_path, DEFAULT_MAX_FILE_BYTES + 512 * 1024)
    result = await anyio.run_process([*SERVE, "--scenario", str(path)], check=False)
    assert result.returncode == 2
    size, limit = path.stat().st_size, ServiceConfig().max_scenario_bytes
    assert result.stderr.decode().splitlines()[-1] == (
        f"areasync serve: cannot create a session: scenario file {str(path)!r} is {size} "
        f"bytes, above the {limit}-byte limit for scenario files (max_scenario_bytes); raise "
        "it with --max-scenario-bytes N"
    )
    assert b"Traceback" not in result.stderr


def test_a_scenario_file_above_max_scenario_bytes_is_refused_before_ares_import(
    tmp_path: Path,
) -> None:
    """Refused at once, before a front, its workers or ARE start (as a typo in an option is)."""
    path = oversized_scenario_file(tmp_path, DEFAULT_MAX_FILE_BYTES + 512 * 1024)
    probe = (
        "import sys\n"
        "from areasync.cli import main\n"
        f"status = main(['serve', '--port', '0', '--scenario', {str(path)!r}])\n"
        "print(status, 'are' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.stdout.split() == ["2", "False"], done.stderr
    assert "above the" in done.stderr and "--max-scenario-bytes" in done.stderr


async def test_serve_refuses_a_bad_limit_with_its_name() -> None:
    result = await anyio.run_process([*SERVE, "--max-lag", "0"], check=False)
    assert result.returncode == 2
    assert b"max_lag must be >= 1" in result.stderr


def test_a_refused_option_is_answered_without_loading_ares() -> None:
    """A typo in an option is answered at once: the check comes before ARE's imports."""
    probe = (
        "import sys\n"
        "from areasync.cli import main\n"
        "status = main(['serve', '--max-lag', '0'])\n"
        "print(status, 'are' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.stdout.split() == ["2", "False"], done.stderr
    assert "max_lag must be >= 1" in done.stderr


async def test_serve_applies_a_limit_given_on_the_command_line() -> None:
    command = [*SERVE, "--token", "cli-admin", "--max-connections-per-session", "1"]
    async with await anyio.open_process(command) as process:
        banner = await read_banner(process)
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
        with anyio.fail_after(PROCESS_S):
            await process.wait()
    assert refused["type"] == "error" and refused["code"] == "capacity"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == CloseCode.CAPACITY


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--write-timeout", "0", b"write_timeout must be > 0"),
        ("--max-pending-hellos", "0", b"max_pending_hellos must be >= 1"),
        ("--rate-strikes", "0", b"rate_strikes must be >= 1"),
        ("--tool-budget", "0", b"tool_budget must be > 0"),
        ("--max-listing", "0", b"max_listing must be >= 1"),
        ("--max-files-created", "0", b"max_files_created must be >= 1"),
    ],
)
async def test_serve_refuses_a_bad_flood_or_call_limit_with_its_name(
    option: str, value: str, message: bytes
) -> None:
    result = await anyio.run_process([*SERVE, option, value], check=False)
    assert result.returncode == 2
    assert message in result.stderr


@ON_THE_OPTIONED_SERVER
async def test_serve_reaps_openenv_clients_after_the_idle_timeout_given(optioned: str) -> None:
    match = re.search(r"http://(127\.0\.0\.1:\d+)/openenv/cli-admin", optioned)
    assert match is not None
    async with connect(f"ws://{match[1]}/openenv/cli-admin/ws") as ws:
        reset = {"type": "reset", "data": {"scenario": "scenario_tutorial", "mode": "manual"}}
        await ws.send(json.dumps(reset))
        with anyio.fail_after(PROCESS_S):
            observed = json.loads(await ws.recv())
            reaped = json.loads(await ws.recv())
    assert observed["type"] == "observation"
    assert reaped["type"] == "error" and "no message for 0.3 s" in reaped["data"]["message"]


async def test_serve_refuses_a_non_positive_openenv_idle_timeout() -> None:
    result = await anyio.run_process([*SERVE, "--openenv-idle-timeout", "0"], check=False)
    assert result.returncode == 2
    assert b"openenv_idle_timeout must be > 0" in result.stderr


# -- signals while a session is wedged in a long control -------------------------------------

NO_DURATION = "scenario_find_image_file"  # a registered scenario without a duration
HUGE_N = 10**12


def _wedged_serve(tmp_path: Path) -> list[str]:
    return [
        *SERVE,
        "--token",
        "cli-admin",
        "--trace-dir",
        str(tmp_path),
        "--scenario",
        NO_DURATION,
        "--scenario",
        "scenario_tutorial",
        "--max-ticks",
        str(HUGE_N),
    ]


async def _ticks_of(base: str) -> int:
    def get() -> int:
        with urllib.request.urlopen(f"{base}/api/sessions?token=cli-admin", timeout=10) as reply:
            sessions = json.load(reply)["sessions"]
        return next(int(s["clock"]["tick"]) for s in sessions if s["id"] == NO_DURATION)

    return await anyio.to_thread.run_sync(get)


async def _start_a_long_tick(banner: str) -> ClientConnection:
    """A controller sends tick{n: 10**12} to the session without a duration; returned once the
    ticks are seen running (the connection stays open, the tick holding the session's lane)."""
    match = re.search(rf"ws://127\.0\.0\.1:(\d+)/sessions/{NO_DURATION}", banner)
    assert match is not None
    ws = await connect(match[0], close_timeout=0.5)
    await ws.send(
        json.dumps({"type": "hello", "id": 1, "role": "controller", "token": "cli-admin"})
    )
    assert json.loads(await ws.recv())["type"] == "welcome"
    await ws.send(json.dumps({"type": "tick", "id": 2, "n": HUGE_N}))
    base = f"http://127.0.0.1:{match[1]}"

    async def ticking() -> bool:  # polled over HTTP: the other process signals nothing else
        return await _ticks_of(base) > 10

    await eventually(ticking, within=PROCESS_S, poll=0.05)
    return ws


async def _never_reading_client(banner: str) -> RawClient:
    """A client that says hello and never reads a byte, nor answers a close."""
    match = re.search(r"ws://127\.0\.0\.1:(\d+)/sessions/scenario_tutorial", banner)
    assert match is not None
    client = await RawClient.open(int(match[1]), "scenario_tutorial")
    await client.send(hello_frame("cli-admin"))
    return client


@pytest.mark.slow  # a serve, a long tick held in ARE, then the wait for its shutdown: over 10 s
async def test_sigterm_during_a_long_tick_exits_having_written_every_trace(
    tmp_path: Path,
) -> None:
    async with await anyio.open_process(_wedged_serve(tmp_path)) as process:
        banner = await read_banner(process)
        silent = await _never_reading_client(banner)
        ws = await _start_a_long_tick(banner)
        try:
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(60):
                code = await process.wait()
        finally:
            silent.close()
            await ws.close()
    assert code == 0
    traces = json_files(tmp_path)
    assert len(traces) == 2
    assert {name.rsplit("_", 1)[0] for name in traces} == {NO_DURATION, "scenario_tutorial"}


async def test_a_second_signal_exits_at_once_with_a_non_zero_status(tmp_path: Path) -> None:
    async with await anyio.open_process(_wedged_serve(tmp_path)) as process:
        banner = await read_banner(process)
        # Its close handshake never completes: the first shutdown waits for it (close_timeout).
        silent = await _never_reading_client(banner)
        ws = await _start_a_long_tick(banner)
        assert process.stderr is not None
        try:
            process.send_signal(signal.SIGTERM)
            said = ""
            with anyio.fail_after(PROCESS_S):
                async for chunk in TextReceiveStream(process.stderr):
                    said += chunk
                    if "a second Ctrl-C or SIGTERM exits at once" in said:
                        break
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(PROCESS_S):
                code = await process.wait()
        finally:
            silent.close()
            await ws.close()
    assert code == 128 + signal.SIGTERM


async def _status_as(port: int, host: str) -> bytes:
    """The status line of GET /health sent to 127.0.0.1:`port` with `Host: host`."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(f"GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        return (await stream.receive()).split(b"\r\n")[0]


@ON_THE_OPTIONED_SERVER
async def test_serve_passes_allow_origin_and_allow_host_to_the_service(optioned: str) -> None:
    match = re.search(r"ws://127\.0\.0\.1:(\d+)/sessions/scenario_tutorial", optioned)
    assert match is not None
    hello = {"type": "hello", "id": 1, "role": "observer", "token": "cli-admin"}
    with anyio.fail_after(PROCESS_S):
        async with connect(match[0], origin="http://dash.example:9000") as page:  # type: ignore[arg-type]
            await page.send(json.dumps(hello))
            welcome = json.loads(await page.recv())
        by_name = await _status_as(int(match[1]), f"box.lan:{match[1]}")
    assert welcome["type"] == "welcome" and by_name == b"HTTP/1.1 200 OK"


async def test_serve_refuses_a_malformed_allow_origin_with_its_name() -> None:
    result = await anyio.run_process([*SERVE, "--allow-origin", "dash.example/x"], check=False)
    assert result.returncode == 2
    assert b"allow_origins: 'dash.example/x' is not an origin" in result.stderr


# -- --seed ----------------------------------------------------------------------------------


async def test_serve_journals_the_seed_given_with_seed(tmp_path: Path) -> None:
    command = [*SERVE, "--token", "cli-admin", "--state-dir", str(tmp_path), "--seed", "4242"]
    async with await anyio.open_process(command) as process:
        try:
            await read_banner(process)
        finally:
            process.send_signal(signal.SIGINT)
            with anyio.fail_after(PROCESS_S):
                await process.wait()
    created = JournalStore(tmp_path).read("scenario_tutorial").created
    assert created is not None and created.seed == 4242


@pytest.mark.parametrize("value", ["-1", "4.5", "seven", str(2**63)])
async def test_serve_refuses_a_seed_that_is_not_a_63_bit_whole_number(value: str) -> None:
    result = await anyio.run_process([*SERVE, "--seed", value], check=False)
    assert result.returncode == 2
    assert b"--seed: expected a whole number from 0 to 2**63-1" in result.stderr
    assert repr(value).encode() in result.stderr


@pytest.mark.parametrize("seed", [-1, 2**63, 1.5, True])
def test_a_service_config_refuses_a_seed_out_of_range(seed: Any) -> None:
    with pytest.raises(ValueError, match="seed must be a whole number from 0 to 2\\*\\*63-1"):
        ServiceConfig(seed=seed)


async def test_serve_refuses_a_snapshot_overhead_above_one() -> None:
    result = await anyio.run_process([*SERVE, "--snapshot-overhead", "2"], check=False)
    assert result.returncode == 2
    assert b"snapshot_overhead must be from 0" in result.stderr


async def test_serve_refuses_new_sessions_past_the_memory_limit_given() -> None:
    command = [*SERVE, "--token", "cli-admin", "--memory-limit", "1"]
    async with await anyio.open_process(command) as process:
        banner = await read_banner(process)  # the sessions it was told to start, started
        match = re.search(r"ws://127\.0\.0\.1:\d+/sessions/scenario_tutorial", banner)
        assert match is not None
        async with connect(match[0]) as admin:
            hello = {"type": "hello", "id": 1, "role": "admin", "token": "cli-admin"}
            await admin.send(json.dumps(hello))
            assert json.loads(await admin.recv())["type"] == "welcome"
            create = {"type": "create_session", "id": 2, "scenario": "scenario_tutorial"}
            await admin.send(json.dumps(create))
            refused = json.loads(await admin.recv())
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(PROCESS_S):
            await process.wait()
    assert refused["type"] == "error" and refused["code"] == "capacity"
    assert "--memory-limit" in refused["message"]


async def test_serve_refuses_a_malformed_memory_limit_saying_what_is_accepted() -> None:
    result = await anyio.run_process([*SERVE, "--memory-limit", "lots"], check=False)
    assert result.returncode == 2
    assert b"--memory-limit must be a size (4G, 512M" in result.stderr


@ON_THE_OPTIONED_SERVER
async def test_serve_without_workers_runs_a_worker_per_cpu_and_answers_a_tool_call(
    optioned: str,
) -> None:
    assert f"sessions in {usable_cpus()} worker processes" in optioned, optioned
    url = re.search(r"ws://\S+/sessions/scenario_tutorial", optioned)
    token = re.search(r"^  agent\s+(\S+)$", optioned, re.MULTILINE)
    assert url is not None and token is not None, optioned
    with anyio.fail_after(PROCESS_S):
        async with connect(url[0]) as ws:
            hello = {"type": "hello", "id": 0, "role": "agent", "token": token[1]}
            await ws.send(json.dumps(hello))
            assert json.loads(await ws.recv())["type"] == "welcome"
            call = {"type": "call_tool", "id": 1, "tool": "SystemApp__get_current_time"}
            await ws.send(json.dumps({**call, "args": {}}))
            reply = json.loads(await ws.recv())
            while reply.get("id") != 1:  # events come before the result
                reply = json.loads(await ws.recv())
    assert reply["type"] == "result" and "current_timestamp" in reply["value"]


async def test_the_default_banner_says_how_a_session_runs_and_how_to_play_its_oracle() -> None:
    # Fast mode's default session waits for its agent: its worker says so, and the command.
    command = [sys.executable, "-m", "areasync.cli", "serve", "--port", "0", "--trace-dir", ""]
    banner, code = await banner_then_sigint(command)
    assert code == 0
    assert "worker processes" in banner, banner
    token = re.search(r"^  agent\s+(\S+)$", banner, re.MULTILINE)
    assert token is not None, banner
    assert re.search(
        r"^session scenario_tutorial  \(scenario scenario_tutorial, fast, waiting for an agent;"
        r" worker-\d+\)$",
        banner,
        re.MULTILINE,
    ), banner
    oracle = (
        r"^    areasync agent oracle --url ws://127\.0\.0\.1:\d+/sessions/scenario_tutorial "
        rf"--token {re.escape(token[1])}$"
    )
    assert re.search(oracle, banner, re.MULTILINE), banner
    assert "traces: not written" in banner
