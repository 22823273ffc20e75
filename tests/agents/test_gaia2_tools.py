"""gaia2-cli's app CLIs on an areasync session, run as a runtime runs them: subprocesses of a
shell whose PATH holds them, the session in their environment."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from are.simulation.apps.apartment_listing import ApartmentListingApp
from are.simulation.apps.cab import CabApp
from are.simulation.apps.calendar import CalendarApp
from are.simulation.apps.city import CityApp
from are.simulation.apps.messaging_v2 import MessagingAppV2
from are.simulation.apps.shopping import ShoppingApp

from areasync.agents.gaia2_tools import COMMANDS, printed, write_bin
from areasync.gaia2.dataset import SPECS, scenario_json
from areasync.protocol.frames import Mode, Role
from areasync.service import Service
from tests.service.support import TUTORIAL, config

ROOT = str(Path(__file__).resolve().parents[2])  # the checkout: what the commands import
WALL_S = 60.0


@asynccontextmanager
async def session(
    tmp_path: Path, source: str | Path = TUTORIAL, session_id: str = TUTORIAL
) -> AsyncIterator[tuple[Service, dict[str, str]]]:
    """`source` (scenario_tutorial) in fast mode, and a runtime's environment: the commands on
    PATH and the session's adapter URL with its agent's token."""
    bin_dir = tmp_path / "bin"
    write_bin(str(bin_dir))
    async with Service(config(gaia2_port=0, mode=Mode.FAST), (source,)) as service:
        env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": ROOT,
            "GAIA2_ADAPTER_URL": service.gaia2_url(session_id, Role.AGENT),
        }
        yield service, env


async def shell(env: dict[str, str], command: str) -> subprocess.CompletedProcess[bytes]:
    """`command` in a shell, as a runtime's agent types it."""
    with anyio.fail_after(WALL_S):
        return await anyio.run_process(["/bin/sh", "-c", command], env=env, check=False)


def output(done: subprocess.CompletedProcess[bytes]) -> Any:
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def agent_calls(service: Service) -> list[str]:
    sim = service.registry.sessions[TUTORIAL].sim
    return [f"{e.app}__{e.function}" for e in sim.events() if e.event_type == "AGENT"]


def test_a_status_around_a_dict_takes_its_keys_as_upstreams_list_all_products_does() -> None:
    status = ("success", "*", None)
    assert printed(status, {"products": {}}, {}) == {"status": "success", "products": {}}


def test_bin_writes_each_command_as_an_executable(tmp_path: Path) -> None:
    written = write_bin(str(tmp_path))
    assert sorted(Path(p).name for p in written) == sorted(COMMANDS)
    assert all(os.access(p, os.X_OK) for p in written)
    assert {"calendar", "cloud-drive", "rent-a-flat", "gaia2-wait"} <= set(COMMANDS)


WRITES = [
    (
        "emails send-email --recipients '[\"john@example.com\"]' --subject Hi --content Yo",
        ("ok", "email_id"),
        "EmailClientApp__send_email",
    ),
    (  # upstream's name for add_calendar_event
        "calendar add-event --title Lunch --start-datetime '1970-01-02 12:00:00' "
        "--end-datetime '1970-01-02 13:00:00' --attendees '[\"Bob\"]'",
        ("success", "event_id"),
        "CalendarApp__add_calendar_event",
    ),
    ("cloud-drive mkdir --path /plans", ("success", "path"), "SandboxLocalFileSystem__mkdir"),
]


@pytest.mark.parametrize(("command", "status", "tool"), WRITES)
async def test_a_write_acts_as_the_agent_and_prints_upstreams_status(
    tmp_path: Path, command: str, status: tuple[str, str], tool: str
) -> None:
    async with session(tmp_path) as (service, env):
        done = await shell(env, command)
        calls = agent_calls(service)
    answer = output(done)
    assert answer["status"] == status[0] and isinstance(answer[status[1]], str)
    assert calls == [tool]


async def test_a_read_prints_what_ares_tool_returned(tmp_path: Path) -> None:
    async with session(tmp_path) as (_service, env):
        done = await shell(env, "contacts get-contacts --offset 0")
    assert "contacts" in output(done)


async def test_cloud_drive_reaches_the_sessions_file_system(tmp_path: Path) -> None:
    async with session(tmp_path) as (service, env):
        done = await shell(env, "cloud-drive ls --path /")
        calls = agent_calls(service)
    assert isinstance(output(done), list)
    assert calls == ["SandboxLocalFileSystem__ls"]


async def test_an_unknown_command_fails_naming_the_apps_commands_and_changes_nothing(
    tmp_path: Path,
) -> None:
    async with session(tmp_path) as (service, env):
        done = await shell(env, "calendar no-such-thing")
        calls = agent_calls(service)
    assert done.returncode == 1 and calls == []
    assert b"No such command 'no-such-thing'" in done.stderr and b"add-event" in done.stderr


async def test_an_app_the_session_lacks_is_refused_naming_its_apps(tmp_path: Path) -> None:
    async with session(tmp_path) as (_service, env):
        done = await shell(env, "cabs list-rides")
    assert done.returncode == 1 and b"no such app" in done.stderr
    assert b"CalendarApp" in done.stderr


async def test_a_failing_action_prints_why_on_stderr_and_exits_1(tmp_path: Path) -> None:
    async with session(tmp_path) as (_service, env):
        done = await shell(env, "emails get-email-by-id --email-id nope")
    assert done.returncode == 1 and done.stdout == b"" and done.stderr


@pytest.mark.parametrize(
    ("words", "error"),
    [
        ("--nope 1", b"no such option --nope"),
        ("--offset", b"needs a value"),
        ("--offset x", b"takes a number"),
        ("positional", b"unexpected argument"),
    ],
)
async def test_bad_options_are_refused_saying_what_is_expected(
    tmp_path: Path, words: str, error: bytes
) -> None:
    async with session(tmp_path) as (service, env):
        done = await shell(env, f"contacts get-contacts {words}")
        calls = agent_calls(service)
    assert done.returncode == 1 and error in done.stderr and calls == []


async def test_without_a_session_in_the_environment_it_says_which_variable_to_set(
    tmp_path: Path,
) -> None:
    async with session(tmp_path) as (_service, env):
        del env["GAIA2_ADAPTER_URL"]
        done = await shell(env, "calendar get-all-tags")
    assert done.returncode == 2 and b"GAIA2_ADAPTER_URL" in done.stderr


async def test_gaia2_wait_waits_on_the_sessions_clock_and_prints_what_came(tmp_path: Path) -> None:
    async with session(tmp_path) as (service, env):
        done = await shell(env, "gaia2-wait --timeout 60")
        now = service.registry.sessions[TUTORIAL].sim.clock_state(peek=True).time
    told = output(done)["notifications"]
    assert [n["type"] for n in told] == ["USER_MESSAGE"] and "pdf" in told[0]["message"]
    assert now == 6.0  # the user's message came at 6 s; the agent holds its turn since


async def test_gaia2_wait_idle_lets_the_session_run_to_its_end(tmp_path: Path) -> None:
    async with session(tmp_path) as (service, env):
        output(await shell(env, "gaia2-wait --timeout 60"))
        assert output(await shell(env, "gaia2-wait --idle")) == {"status": "idle"}
        with anyio.fail_after(WALL_S):
            await service.registry.sessions[TUTORIAL].done.wait()


# -- every app: a Gaia2 JSON scenario with each app the CLIs name ---------------------------


def every_app_json() -> str:
    """tiny_email's Gaia2 JSON with the other apps of gaia2-cli's CLIs, as Gaia2 names them."""
    document = json.loads(scenario_json(SPECS["tiny_email"]))
    apps = {
        "CabApp": CabApp(),
        "ShoppingApp": ShoppingApp(),
        "RentAFlat": ApartmentListingApp(),
        "CityApp": CityApp(),
        "Chats": MessagingAppV2(),
        "Messages": MessagingAppV2(),
        "Calendar": CalendarApp(),
    }
    for name, app in apps.items():
        state = app.get_state()
        document["apps"].append(
            {"name": name, "class_name": type(app).__name__, "app_state": state}
        )
    return json.dumps(document)


READS = [
    ("calendar get-all-tags", None),
    ("contacts get-contacts --offset 0", None),
    ("emails list-emails", None),
    ("messages list-recent-conversations", None),
    ("chats list-recent-conversations", None),
    ("rent-a-flat list-all-apartments", "data"),
    ("city get-api-call-count", "data"),
    ("cabs get-ride-history", "data"),
    ("shopping list-all-products", "status"),
]


@pytest.mark.parametrize(("command", "key"), READS)
async def test_each_app_cli_reads_its_app_on_a_gaia2_session(
    tmp_path: Path, command: str, key: str | None
) -> None:
    path = tmp_path / "every_app.json"
    path.write_text(every_app_json())
    async with session(tmp_path, path, "every_app") as (_service, env):
        done = await shell(env, command)
    answer = output(done)
    assert key is None or (answer["status"] == "success" and key in answer)
