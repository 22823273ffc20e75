"""OpenEnv's Task API under a base URL: a trainer enumerates the registered scenarios and a
dataset's scenarios by split, then starts one with today's client (`reset(split, index)`).

The requests are those OpenEnv's `HTTPEnvServer` answers (`/list_environments`,
`/{env}/splits`, `/{env}/tasks`, `/num_tasks`, `/task`, `/task_range`), with the token in
`Authorization: Bearer`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx

from areasync.bridge.scenarios.loading import registered_ids
from areasync.service import Service
from tests.service.adapters.openenv.test_openenv_today import bare_url, bearer, scenario_dir
from tests.service.adapters.openenv.today import GenericEnvClient
from tests.service.support import WAIT, serving

SPLIT = "execution/validation"


async def call(service: Service, method: str, route: str, body: Any = None) -> httpx.Response:
    headers = bearer(service.tokens.admin)
    async with httpx.AsyncClient(headers=headers, timeout=WAIT) as client:
        url = f"{bare_url(service)}{route}"
        if method == "GET":
            return await client.get(url)
        return await client.post(url, json=body)


async def test_list_environments_names_the_one_environment() -> None:
    async with serving() as service:
        response = await call(service, "GET", "/list_environments")
    assert response.status_code == 200 and response.json() == ["areasync"]


async def test_the_splits_are_the_registered_ids_and_the_directory_s_folders(
    tmp_path: Path,
) -> None:
    async with serving(scenario_dir=scenario_dir(tmp_path)) as service:
        response = await call(service, "GET", "/areasync/splits")
    splits = {split["name"]: split for split in response.json()}
    assert splits["registered"]["num_tasks"] == len(registered_ids())
    assert splits[SPLIT] == {"name": SPLIT, "type": "validation", "num_tasks": 1}


async def test_tasks_num_tasks_task_and_task_range_enumerate_a_split(tmp_path: Path) -> None:
    async with serving(scenario_dir=scenario_dir(tmp_path)) as service:
        tasks = (await call(service, "POST", "/areasync/tasks", {"split": SPLIT})).json()
        count = (await call(service, "POST", "/areasync/num_tasks", {"split": SPLIT})).json()
        one = (await call(service, "POST", "/areasync/task", {"split": SPLIT, "index": 0})).json()
        window = await call(
            service, "POST", "/areasync/task_range", {"split": "registered", "start": 1, "stop": 3}
        )
    task = {
        "id": "gaia2_shaped",
        "index": 0,
        "split": SPLIT,
        "scenario_path": f"{SPLIT}/gaia2_shaped.json",
    }
    assert tasks == {"tasks": [task], "env_name": "areasync"}
    assert count == {"num_tasks": 1} and one == {"task": task}
    assert [t["scenario_path"] for t in window.json()["tasks"]] == registered_ids()[1:3]


async def test_reset_with_a_split_and_index_starts_that_task(tmp_path: Path) -> None:
    async with serving(scenario_dir=scenario_dir(tmp_path)) as service:
        admin = bearer(service.tokens.admin)
        async with GenericEnvClient(base_url=bare_url(service), headers=admin) as env:
            with anyio.fail_after(WAIT * 3):
                result = await env.reset(split=SPLIT, index=0, mode="manual")
        session = service.registry.get(result.metadata["session_id"])
    assert session is not None and result.observation["environment_state"] == "RUNNING"


async def test_an_unknown_split_is_404_and_an_index_out_of_range_400() -> None:
    async with serving() as service:
        unknown = await call(service, "POST", "/areasync/tasks", {"split": "nope"})
        beyond = await call(
            service, "POST", "/areasync/task", {"split": "registered", "index": 10**6}
        )
        async with httpx.AsyncClient(timeout=WAIT) as client:  # the token in the path
            other = await client.get(f"{service.openenv_url()}/other_env/splits")
    assert unknown.status_code == 404 and "registered" in unknown.json()["detail"]
    assert beyond.status_code == 400 and "num_tasks" in beyond.json()["detail"]
    assert other.status_code == 404 and "areasync" in other.json()["detail"]


async def test_a_malformed_task_request_is_422() -> None:
    async with serving() as service:
        response = await call(service, "POST", "/areasync/task", {"split": "registered"})
    assert response.status_code == 422 and "index" in response.json()["detail"]


async def test_the_task_api_needs_a_valid_token() -> None:
    async with (
        serving() as service,
        httpx.AsyncClient(timeout=WAIT, headers=bearer("wrong")) as client,
    ):
        response = await client.get(f"{bare_url(service)}/areasync/splits")
    assert response.status_code == 401


async def test_harness_is_refused_saying_why() -> None:
    async with serving() as service:
        response = await call(service, "GET", "/harness")
    assert response.status_code == 501 and "agent" in response.json()["error"]["message"]
