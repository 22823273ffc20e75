"""OpenEnv's Task API under an OpenEnv base URL: a trainer enumerates the scenarios it can start.

OpenEnv's server (`HTTPEnvServer`) serves, for its one environment `env_name`:

=============================  ==================================  =============================
request                        body                                answer
=============================  ==================================  =============================
GET  /list_environments                                            `["areasync"]`
GET  /{env}/splits                                                 `[{name, type, num_tasks}]`
POST /{env}/tasks              `{"split"}`                         `{"tasks": [...], "env_name"}`
POST /{env}/num_tasks          `{"split"}`                         `{"num_tasks": N}`
POST /{env}/task               `{"split", "index"}`                `{"task": {...}}`
POST /{env}/task_range         `{"split", "start"?, "stop"?}`      `{"tasks": [...]}`
=============================  ==================================  =============================

The same routes sit under an OpenEnv base URL here (`/openenv/<token>/areasync/splits`, or
`/openenv/areasync/splits` with the token in `Authorization: Bearer`); any valid token may
list. A task is `{id, index, split, scenario_path}` (`catalog.py` says which splits exist);
OpenEnv starts one with `reset(split=..., index=...)`, or a client sends
`initialize{scenario_path}`. Errors are OpenEnv's: `{"detail": "..."}` with 404 (an unknown
environment or split), 400 (an index out of range) or 422 (a malformed body).
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from areasync.service.adapters.openenv.catalog import Catalog, CatalogError, as_json
from areasync.service.adapters.openenv.paths import ENV_NAME

ROUTES = frozenset({"splits", "tasks", "num_tasks", "task", "task_range"})


class _SplitBody(msgspec.Struct, forbid_unknown_fields=False):
    split: str


class _TaskBody(msgspec.Struct, forbid_unknown_fields=False):
    split: str
    index: int


class _RangeBody(msgspec.Struct, forbid_unknown_fields=False):
    split: str
    start: int | None = None
    stop: int | None = None


_BODIES: dict[str, type[msgspec.Struct]] = {
    "tasks": _SplitBody,
    "num_tasks": _SplitBody,
    "task": _TaskBody,
    "task_range": _RangeBody,
}


def is_task_route(route: str) -> bool:
    """`route` (under a base URL) is one of the Task API's."""
    if route == "/list_environments":
        return True
    parts = route.strip("/").split("/")
    return len(parts) == 2 and parts[1] in ROUTES


async def answer(catalog: Catalog, method: str, route: str, body: bytes) -> tuple[int, Any]:
    """(status, JSON value) of a Task API request."""
    if route == "/list_environments":
        return (200, [ENV_NAME]) if method != "POST" else _wrong_method(route, "GET")
    env, _, name = route.strip("/").partition("/")
    if env.lower() != ENV_NAME:
        return 404, {
            "detail": f"unknown environment {env[:60]!r}: this server's is {ENV_NAME!r} "
            "(GET <base>/list_environments)"
        }
    if name == "splits":
        if method == "POST":
            return _wrong_method(route, "GET")
        splits = await anyio.to_thread.run_sync(catalog.splits)
        return 200, as_json(splits)
    if method != "POST":
        return _wrong_method(route, "POST")
    try:
        request = msgspec.json.decode(body or b"{}", type=_BODIES[name])
    except msgspec.DecodeError as exc:
        return 422, {"detail": f"invalid body for {route}: {exc}"}
    try:
        return 200, await anyio.to_thread.run_sync(_answer, catalog, name, request)
    except CatalogError as refused:
        status = 404 if refused.message.startswith("no split") else 400
        return status, {"detail": refused.message}


def _answer(catalog: Catalog, name: str, request: Any) -> Any:
    """The answer to a POST route, read from the catalog (blocking)."""
    if name == "task":
        return {"task": as_json(catalog.task(request.split, request.index))}
    tasks = catalog.tasks(request.split)
    if name == "num_tasks":
        return {"num_tasks": len(tasks)}
    if name == "task_range":
        return {"tasks": as_json(tasks[request.start : request.stop])}
    return {"tasks": as_json(tasks), "env_name": ENV_NAME}


def _wrong_method(route: str, allowed: str) -> tuple[int, Any]:
    return 405, {"detail": f"{route} is answered to {allowed} only (OpenEnv's Task API)"}
