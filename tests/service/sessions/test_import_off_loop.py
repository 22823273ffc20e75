"""create_session imports its scenario off the event loop, one import at a time.

The import runs in a worker thread (`SessionRegistry.create_async`): while it is in flight the
server answers `/health` and other sessions' requests, a failed import starts nothing, and
imports under way count against `max_sessions`. Ordering, never timing: a gate holds the
import in its thread until the test has seen the server answer, then lets a real large import
run to its end.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from areasync.bridge.sandbox import audit as sandbox_module
from areasync.bridge.scenarios import loading as scenarios_module
from areasync.protocol import CreateSession, Error, ErrorCode, ListTools, Ping, Pong, Result, Role
from areasync.service.sessions import registry as session_module
from bench.synthetic import synthetic_scenario_json
from tests.service.support import (
    THROUGH_FRONT,
    TUTORIAL,
    Gate,
    attach,
    http_get,
    in_process_only,
    serving,
)

LARGE = 2000  # events: a real import of some length once the gate opens


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    if THROUGH_FRONT:
        pytest.skip("in this process only: holds this process's scenario builds")
    gate = Gate()
    real = session_module.build_scenario

    def gated(source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, str) and source.startswith("{"):  # not the start-up scenario
            gate.hold()
        return real(source, *args, **kwargs)

    monkeypatch.setattr(session_module, "build_scenario", gated)
    yield gate
    gate.open()  # never leave a worker thread waiting


def create_frame(request_id: int, text: str) -> str:
    frame = {"type": "create_session", "id": request_id, "scenario_json": text, "mode": "manual"}
    return json.dumps(frame)


async def test_health_and_another_session_answer_while_a_scenario_imports(gate: Gate) -> None:
    async with (
        serving() as service,
        attach(service, Role.ADMIN) as admin,
        attach(service, Role.OBSERVER) as other,
    ):
        await admin.send_raw(create_frame(7, synthetic_scenario_json(LARGE)))
        await gate.wait_entered()  # the import is in flight, in its thread
        status, _headers, _body = await http_get(service, "/health")
        assert status == 200
        assert isinstance(await other.request(Ping), Pong)
        assert not any(getattr(frame, "id", None) == 7 for frame in admin.frames)
        gate.open()
        reply = await admin.reply_to(7)
        assert isinstance(reply, Result), reply
        created = reply.value["session_id"]
        async with attach(service, Role.AGENT, session=created) as agent:
            assert await agent.call(ListTools)  # the created session works


async def test_a_failed_import_in_its_thread_is_invalid_field_and_starts_nothing() -> None:
    data = json.loads(synthetic_scenario_json(40))
    data["events"][1]["dependencies"] = ["no_such_event"]  # ARE refuses a missing dependency
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        await admin.send_raw(create_frame(7, json.dumps(data)))
        error = await admin.reply_to(7)
        assert isinstance(error, Error) and error.code == ErrorCode.INVALID_FIELD
        assert "expected 40 events" in error.message  # ARE's own complaint
        assert sorted(service.registry.sessions) == [TUTORIAL]
        assert isinstance(await admin.request(Ping), Pong)


async def test_an_import_under_way_counts_against_max_sessions(gate: Gate) -> None:
    async with (
        serving(max_sessions=2) as service,
        attach(service, Role.ADMIN) as admin,
        attach(service, Role.ADMIN) as second,
    ):
        await admin.send_raw(create_frame(7, synthetic_scenario_json(40)))
        await gate.wait_entered()
        refused = await second.fail(CreateSession, scenario=TUTORIAL, mode="manual")
        assert refused.code == ErrorCode.CAPACITY
        assert "imports 1 more" in refused.message
        gate.open()
        assert isinstance(await admin.reply_to(7), Result)


async def test_an_import_cancelled_mid_way_leaves_no_session(gate: Gate) -> None:
    # What a server shutdown does to a create_session in flight: cancel it.
    async with serving() as service:
        registry = service.registry
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(registry.create_async, synthetic_scenario_json(40))
                await gate.wait_entered()
                scope.cancel()
                gate.open()  # the thread finishes its import; nothing uses it
        assert scope.cancelled_caught
        assert registry._importing == 0
        assert sorted(registry.sessions) == [TUTORIAL]


@in_process_only("spies on this process's scenario loads")
async def test_an_import_in_its_worker_thread_runs_inside_the_new_sessions_sandbox(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[bool, bool]] = []
    real = scenarios_module.load

    def spying(source: Any, **kwargs: Any) -> Any:
        in_worker = threading.current_thread() is not threading.main_thread()
        seen.append((in_worker, sandbox_module.current() is not None))
        return real(source, **kwargs)

    monkeypatch.setattr(scenarios_module, "load", spying)
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        seen.clear()  # the start-up scenario
        reply = await admin.request(CreateSession, scenario_json=synthetic_scenario_json(40))
        assert isinstance(reply, Result), reply
    assert seen[0] == (True, True)  # the import itself: in the worker, in the sandbox
    assert all(guarded for _in_worker, guarded in seen)  # and the session's start on the loop


async def test_an_import_cancelled_after_its_thread_built_it_removes_its_sandbox(
    gate: Gate, monkeypatch: pytest.MonkeyPatch
) -> None:
    released: list[bool] = []
    real = sandbox_module.Sandbox.remove_directories

    def spying(self: sandbox_module.Sandbox) -> None:
        released.append(True)
        real(self)

    monkeypatch.setattr(sandbox_module.Sandbox, "remove_directories", spying)
    async with serving() as service:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(service.registry.create_async, synthetic_scenario_json(40))
                await gate.wait_entered()
                scope.cancel()
                gate.open()
        assert released == [True]
