"""A session of a Gaia2 JSON file, as gaia2-cli runs its scenarios: its runner's view of it, and
the banner's oracle command, run as printed."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from areasync.client import connect
from areasync.gaia2.dataset import DONE, EMAIL, SPECS, scenario_json
from areasync.protocol.frames import Mode, Role
from areasync.service import Service
from tests.bounds import PROCESS_S
from tests.service.adapters.gaia2cli.runner import Runner
from tests.service.adapters.gaia2cli.test_runner_contract import PORTS
from tests.service.support import config

SESSION = "tiny_email"
ROOT = str(Path(__file__).resolve().parents[4])  # the checkout: what the command imports
WALL_S = PROCESS_S


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[Service]:
    """tiny_email's Gaia2 JSON, from a file, fast mode (it waits for its agent)."""
    path = tmp_path / f"{SESSION}.json"
    path.write_text(scenario_json(SPECS[SESSION]))
    fields: dict[str, Any] = {"gaia2_ports": PORTS, "mode": Mode.FAST}
    async with Service(config(**fields), (path,)) as service:
        yield service


async def play(service: Service) -> None:
    """The agent does the oracle's actions, idles to the end, and leaves."""
    token = service.tokens.of(SESSION)[Role.AGENT]
    with anyio.fail_after(WALL_S):
        async with connect(service.ws_url(SESSION), role="agent", token=token) as agent:
            await agent.wait_for_notification(timeout=3600)
            for action in (EMAIL, DONE):
                await agent.call_tool(action["action"], **action["action_input"])
            await agent.idle()
            await agent.wait_ended()


async def test_the_users_message_has_upstreams_user_id_and_the_agents_calls_none(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as service:
        await play(service)
        url = service.registry.sessions[SESSION].links.gaia2_cli_url
        assert url is not None
        run = await Runner(url).run()
    by_fn = {line["fn"]: line for line in run.events}
    told, emailed = by_fn["send_message_to_agent"], by_fn["send_email"]
    assert told["event_id"].startswith("Event-USER-") and told["w"] is False
    assert "event_id" not in emailed and emailed["w"] is True
    assert "event_id" not in by_fn["send_message_to_user"]
    assert run.statuses[-1]["status"] == "complete" and run.statuses[-1]["turn"] == 1


def _oracle_line(banner: str) -> list[str]:
    line = next(x for x in banner.splitlines() if x.strip().startswith("areasync agent oracle"))
    return shlex.split(line)


async def test_the_banners_oracle_command_names_the_sessions_file(tmp_path: Path) -> None:
    async with served(tmp_path) as service:
        words = _oracle_line(service.banner())
    assert words[words.index("--scenario") + 1] == str((tmp_path / f"{SESSION}.json").resolve())


async def test_the_banners_oracle_command_plays_the_session_as_printed(tmp_path: Path) -> None:
    async with served(tmp_path) as service:
        words = _oracle_line(service.banner())
        command = [
            sys.executable,
            "-c",
            "import sys; from areasync.cli import main; sys.exit(main(sys.argv[1:]))",
            *words[1:],
        ]
        env = {**os.environ, "PYTHONPATH": ROOT}
        with anyio.fail_after(WALL_S):
            done = await anyio.run_process(command, env=env, check=False)
            await service.registry.sessions[SESSION].done.wait()
        ended = service.registry.sessions[SESSION].sim
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert ended.ended and ended.state == "stopped"
