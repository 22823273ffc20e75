"""The exact bytes of a front's own answers: its merged `GET /api/sessions` (each session with
its `worker`; `restoring`, `refused_journals` and `workers` at the top), its `POST
/api/sessions` (a created session with its `worker`) and its `/health`.

As in `tests/service/connection/test_session_answers_wire.py`: each expected answer is written
out key by key, in order, and encoded by msgspec; what the front sends must be those bytes.
Values that are measurements (tokens, epochs, times, pids, bytes used) are read from the answer
itself; every key, its place and every other value are pinned. The three answers are read of
one front, in one test (a front's start is most of its time): one test each would start three.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec

from areasync.client import list_sessions
from areasync.protocol.frames import PROTOCOL
from tests.front.support import ADMIN, REAL_PROCESSES, WAIT, Front, front
from tests.service.connection.test_session_answers_wire import listed as server_listed
from tests.service.connection.test_session_answers_wire import use_and_limit

pytestmark = REAL_PROCESSES

TUTORIAL = "scenario_tutorial"
BOUNDS = ("max_session_input_bytes", "max_session_memory_bytes", "max_session_journal_bytes")
ROLES = ("agent", "user", "observer", "controller")


def raw(served: Front, path: str, body: dict[str, Any] | None = None) -> bytes:
    """The body of `path` (GET, or POST of `body`) with the admin token."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://{served.base}{path}",
        data=data,
        headers={"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        answer: bytes = response.read()
        return answer


def listed(served: Front, shown: dict[str, Any]) -> dict[str, Any]:
    """scenario_tutorial's start-up session as the front lists it: as a durable server lists
    it (a front keeps journals: its own directory without --state-dir), with its worker."""
    bounds = {bound: use_and_limit(shown["bounds"][bound]) for bound in BOUNDS}
    return server_listed(served.url, shown, durable=True, bounds=bounds, worker=shown["worker"])


def listing(served: Front, body: dict[str, Any]) -> dict[str, Any]:
    [shown] = body["sessions"]
    return {
        "protocol": PROTOCOL,
        "access": {"role": "admin", "session_id": None},
        "sessions": [listed(served, shown)],
        "restoring": [],
        "refused_journals": {},
        "workers": [
            {"name": w["name"], "pid": w["pid"], "restarts": 0, "starts_s": w["starts_s"]}
            for w in body["workers"]
        ],
    }


def created(served: Front, sent: dict[str, Any]) -> dict[str, Any]:
    session_id = sent["session_id"]
    return {
        "session_id": session_id,
        "scenario_id": TUTORIAL,
        "import_mode": None,
        "judge": None,
        "url": served.url(session_id),
        "epoch": sent["epoch"],
        "mode": "manual",
        "tokens": {role: sent["tokens"][role] for role in ROLES},
        "worker": sent["worker"],
    }


HEALTH = {
    "status": "ok",
    "protocol": PROTOCOL,
    "workers": 2,
    "restoring": 0,
    "lost": 0,
    "journal": {"failed_sessions": 0, "refused_journals": 0},
}


async def test_a_fronts_listing_create_answer_and_health_are_these_bytes(tmp_path: Path) -> None:
    async with front("--scenario", TUTORIAL, log=tmp_path / "log") as served:
        with anyio.fail_after(WAIT):
            listing_bytes = await anyio.to_thread.run_sync(raw, served, "/api/sessions")
            create = {"scenario": TUTORIAL, "mode": "manual"}
            created_bytes = await anyio.to_thread.run_sync(raw, served, "/api/sessions", create)
            health_bytes = await anyio.to_thread.run_sync(raw, served, "/health")
    body = msgspec.json.decode(listing_bytes)
    assert {w["name"] for w in body["workers"]} == {"worker-1", "worker-2"}
    assert listing_bytes == msgspec.json.encode(listing(served, body))
    sent = msgspec.json.decode(created_bytes)
    assert created_bytes == msgspec.json.encode(created(served, sent))
    assert health_bytes == msgspec.json.encode(HEALTH)


async def test_list_sessions_reads_a_fronts_sessions_with_their_worker(tmp_path: Path) -> None:
    async with front("--scenario", TUTORIAL, log=tmp_path / "log") as served:
        with anyio.fail_after(WAIT):
            [listed] = await list_sessions(f"http://{served.base}", token=ADMIN)
            holder = await served.holder(TUTORIAL)
            pids = await served.worker_pids()
    assert listed.id == TUTORIAL
    assert listed.worker is not None and pids[listed.worker] == holder
