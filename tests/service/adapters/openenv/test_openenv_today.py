"""Today's OpenEnv client (PyPI `openenv` 0.10) drives areasync as published: the token in
`Authorization: Bearer` (`headers=`), `StepResult.metadata`, and the OpenEnv ARE plan's
`initialize{scenario_path}`: a registered id or a file under the operator's `--scenario-dir`,
never any other path of the server.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID
from areasync.protocol.frames import Role
from areasync.service import Service
from tests.service.adapters.openenv.today import GenericEnvClient
from tests.service.support import TUTORIAL, WAIT, serving, tokens

SEND = {"app_name": "AgentUserInterface", "tool_name": "send_message_to_user"}


def bare_url(service: Service) -> str:
    """The base URL today's client is given with its token in a header: no token in it."""
    return f"{service.http_url}/openenv"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def scenario_dir(root: Path) -> Path:
    """A scenario directory in ARE's dataset layout, and a file outside it."""
    folder = root / "scenarios" / "execution" / "validation"
    folder.mkdir(parents=True)
    text = export_scenario_json(GAIA2_SHAPED_ID)
    (folder / "gaia2_shaped.json").write_text(text)
    (root / "secret.json").write_text(text)
    return root / "scenarios"


async def refused(env: Any, action: dict[str, Any]) -> str:
    with anyio.fail_after(WAIT), pytest.raises(RuntimeError) as failure:
        await env.step(action)
    return str(failure.value)


async def test_a_token_in_the_authorization_header_opens_the_session() -> None:
    async with serving() as service:
        agent = tokens(service)[Role.AGENT]
        async with GenericEnvClient(base_url=bare_url(service), headers=bearer(agent)) as env:
            with anyio.fail_after(WAIT):
                first = await env.reset()
                step = await env.step(
                    {"action_type": "call_tool", **SEND, "tool_args": {"content": "hi"}}
                )
                state = await env.state()
    assert first.observation["environment_state"] == "RUNNING"
    assert step.observation["action_success"] is True
    assert state["session_id"] == TUTORIAL


async def test_a_wrong_token_in_the_authorization_header_is_refused_before_the_upgrade() -> None:
    async with serving() as service:
        env = GenericEnvClient(base_url=bare_url(service), headers=bearer("not-a-token"))
        with anyio.fail_after(WAIT), pytest.raises(ConnectionError, match="401"):
            await env.connect()


async def test_the_step_result_carries_metadata_where_todays_client_reads_it() -> None:
    async with serving() as service:
        agent = tokens(service)[Role.AGENT]
        async with GenericEnvClient(base_url=service.openenv_url(agent)) as env:
            with anyio.fail_after(WAIT):
                await env.reset()
                step = await env.step({"action_type": "list_apps", "metadata": {"tag": 7}})
    assert step.metadata is not None
    assert step.metadata["session_id"] == TUTORIAL and step.metadata["tag"] == 7
    assert step.metadata["step_count"] == 1


async def test_initialize_scenario_path_starts_a_registered_scenario() -> None:
    async with serving() as service:
        admin = service.tokens.admin
        async with GenericEnvClient(base_url=bare_url(service), headers=bearer(admin)) as env:
            with anyio.fail_after(WAIT):
                await env.reset()
                init = await env.step(
                    {"action_type": "initialize", "scenario_path": TUTORIAL, "mode": "manual"}
                )
    assert init.observation["action_result"]["scenario_id"] == TUTORIAL


async def test_initialize_scenario_path_starts_a_file_under_the_scenario_directory(
    tmp_path: Path,
) -> None:
    directory = scenario_dir(tmp_path)
    async with (
        serving(scenario_dir=directory) as service,
        GenericEnvClient(base_url=service.openenv_url()) as env,
    ):
        with anyio.fail_after(WAIT * 3):
            await env.reset()
            init = await env.step(
                {
                    "action_type": "initialize",
                    "scenario_path": "execution/validation/gaia2_shaped.json",
                    "mode": "manual",
                }
            )
    assert init.observation["environment_state"] == "RUNNING"
    assert init.metadata["session_id"] == init.observation["action_result"]["session_id"]


@pytest.mark.parametrize(
    "path",
    [
        "../secret.json",
        "execution/../../secret.json",
        "/etc/passwd",
        "execution/validation/missing.json",
        "execution/validation",
        "link.json",
        "fifo.json",
    ],
)
async def test_a_scenario_path_that_leaves_the_scenario_directory_is_refused(
    tmp_path: Path, path: str
) -> None:
    directory = scenario_dir(tmp_path)
    (directory / "link.json").symlink_to(tmp_path / "secret.json")
    os.mkfifo(directory / "fifo.json")  # opening it would block: it is never opened
    async with serving(scenario_dir=directory) as service:
        before = set(service.registry.sessions)
        async with GenericEnvClient(base_url=service.openenv_url()) as env:
            with anyio.fail_after(WAIT):
                await env.reset()
            message = await refused(env, {"action_type": "initialize", "scenario_path": path})
        assert set(service.registry.sessions) == before
    assert "VALIDATION_ERROR" in message and "scenario" in message


async def test_a_scenario_path_without_a_scenario_directory_names_the_option() -> None:
    async with serving() as service, GenericEnvClient(base_url=service.openenv_url()) as env:
        with anyio.fail_after(WAIT):
            await env.reset()
        message = await refused(
            env, {"action_type": "initialize", "scenario_path": "execution/x.json"}
        )
    assert "--scenario-dir" in message


async def test_an_initialize_naming_two_scenarios_is_refused() -> None:
    async with serving() as service, GenericEnvClient(base_url=service.openenv_url()) as env:
        with anyio.fail_after(WAIT):
            await env.reset()
        message = await refused(
            env,
            {"action_type": "initialize", "scenario": TUTORIAL, "scenario_path": TUTORIAL},
        )
    assert "exactly one of" in message
