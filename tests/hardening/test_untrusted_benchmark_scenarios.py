"""Untrusted Gaia2 scenarios imported the benchmark way are vetted exactly as plain ones.

`create_session` with a multi-turn Gaia2 JSON imports it as Gaia2's runner does
(`import_from_json_to_benchmark` + `preprocess_scenario`; `import_mode` auto or benchmark). The
same vetting runs first (`vet_json`: size, depth, clock numbers, app classes, event methods),
file systems are confined and finished sessions detached as on the plain path; what only the
benchmark path could do (download apps from a dataset hub) or refuse (turns ARE cannot rewire)
is refused clearly. A refused upload is `invalid_field`, changes nothing, and the server serves on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from are.simulation.data_handler.importer import JsonScenarioImporter

from areasync.bridge.scenarios.loading import _ENV_LINKS as ENV_LINKS
from areasync.bridge.scenarios.vetting import MAX_JSON_DEPTH
from areasync.protocol import CallTool, CreateSession, Error, ErrorCode, Ping, Pong, Role
from tests.client.test_client_oracle_agent import gaia2_json
from tests.hardening.test_untrusted_scenarios import ESCAPES, FS, event_calling, nested
from tests.service.support import TUTORIAL, attach, serving


def gaia2() -> dict[str, Any]:
    """A fresh valid two-turn Gaia2 scenario: `auto` imports it the benchmark way."""
    return json.loads(gaia2_json())


@pytest.fixture
def importer_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which of ARE's JSON importers ran: a refused scenario must reach neither."""
    calls: list[str] = []
    for name in (
        "import_from_json",
        "import_from_json_to_benchmark",
        "_fetch_apps_from_huggingface",
    ):
        real = getattr(JsonScenarioImporter, name)

        def spy(self: Any, *args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            calls.append(_name)
            return _real(self, *args, **kw)

        monkeypatch.setattr(JsonScenarioImporter, name, spy)
    return calls


async def upload(text: str, import_mode: Any) -> tuple[str, str, list[str]]:
    """Upload `text` with create_session (`import_mode` None: left out) and check the server
    serves on: (error code, message, session ids right after the refusal)."""
    frame = {"type": "create_session", "id": 7, "scenario_json": text, "mode": "fast"}
    if import_mode is not None:
        frame["import_mode"] = import_mode
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        await admin.send_raw(json.dumps(frame))
        error = await admin.reply_to(7)
        assert isinstance(error, Error), error
        sessions = sorted(service.registry.sessions)
        assert isinstance(await admin.request(Ping), Pong)  # the connection stays
        created = await admin.call(CreateSession, scenario=TUTORIAL, mode="manual")
        assert created["session_id"] == f"{TUTORIAL}-2"  # and new sessions start
        return error.code, error.message, sessions


def with_app_class(data: dict[str, Any], class_name: str) -> dict[str, Any]:
    data["apps"][0]["class_name"] = class_name
    return data


def with_function(data: dict[str, Any], function: str) -> dict[str, Any]:
    event_calling(data, "create_and_add_email")["action"]["function"] = function
    return data


def with_app(data: dict[str, Any], app: str) -> dict[str, Any]:
    event_calling(data, "create_and_add_email")["action"]["app"] = app
    return data


def with_start_time(data: dict[str, Any], value: float) -> dict[str, Any]:
    data["metadata"]["definition"]["start_time"] = value
    return data


HOSTILE = {
    "app class os.system": (lambda: json.dumps(with_app_class(gaia2(), "os.system"))),
    "event calls __init__": (lambda: json.dumps(with_function(gaia2(), "__init__"))),
    "event calls load_state": (lambda: json.dumps(with_function(gaia2(), "load_state"))),
    "undeclared app": (lambda: json.dumps(with_app(gaia2(), "SandboxLocalFileSystem"))),
    "start time 1e300": (lambda: json.dumps(with_start_time(gaia2(), 1e300))),
    "too deep": (lambda: nested(MAX_JSON_DEPTH + 1)),
    "truncated": (lambda: gaia2_json()[:-1]),
}


@pytest.mark.parametrize("import_mode", [None, "auto", "benchmark"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_vetting_refuses_a_benchmark_import_exactly_as_a_plain_one(
    case: str, import_mode: str | None, importer_calls: list[str]
) -> None:
    text = HOSTILE[case]()
    code, message, sessions = await upload(text, import_mode)
    plain = await upload(text, "plain")
    assert (code, message, sessions) == plain
    assert code == ErrorCode.INVALID_FIELD and sessions == [TUTORIAL]
    assert importer_calls == []


async def test_a_scenario_without_apps_that_names_a_dataset_hub_is_refused_unfetched(
    importer_calls: list[str],
) -> None:
    # ARE's benchmark importer would download the missing apps from the named dataset.
    data = gaia2()
    data["apps"] = []
    data["events"] = [e for e in data["events"] if e["event_id"] in {"user_1", "agent_done"}]
    data["events"][1]["dependencies"] = ["user_1"]
    data["metadata"]["definition"]["hf_metadata"] = {"dataset": "someone/gaia2", "split": "test"}
    code, message, _ = await upload(json.dumps(data), "benchmark")
    assert code == ErrorCode.INVALID_FIELD and "downloads nothing" in message
    assert "apps included" in message and importer_calls == []


async def test_turns_ares_preprocessing_refuses_are_a_clear_error() -> None:
    data = gaia2()
    user_2 = next(e for e in data["events"] if e["event_id"] == "user_2")
    user_2["dependencies"] = ["agent_done", "agent_send"]  # also waits on a mid-turn oracle call
    code, message, sessions = await upload(json.dumps(data), "benchmark")
    assert code == ErrorCode.INVALID_FIELD and "cannot be run as a Gaia2 benchmark" in message
    assert "import_mode 'plain'" in message and sessions == [TUTORIAL]


async def test_a_benchmark_scenario_that_fails_to_build_is_an_error_not_a_crash() -> None:
    data = gaia2()
    data["events"][0]["dependencies"] = ["no-such-event"]
    code, message, _ = await upload(json.dumps(data), "benchmark")
    assert code == ErrorCode.INVALID_FIELD and "failed to initialise" in message


@pytest.mark.parametrize("value", ["gaia2", "", "BENCHMARK", 1])
async def test_an_unknown_import_mode_is_refused_naming_the_field(value: Any) -> None:
    code, message, sessions = await upload(gaia2_json(), value)
    assert code == ErrorCode.INVALID_FIELD and "import_mode" in message
    assert sessions == [TUTORIAL]


async def test_file_systems_of_a_benchmark_import_are_confined() -> None:
    data = gaia2()
    data["apps"].append({"name": FS, "class_name": FS, "app_state": {}})
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(
            CreateSession, scenario_json=json.dumps(data), mode="manual", import_mode="benchmark"
        )
        assert created["import_mode"] == "benchmark"
        sid = created["session_id"]
        async with attach(service, Role.AGENT, session=sid) as agent:
            replies = [
                await agent.request(CallTool, tool=f"{FS}__cat", args={"path": path})
                for path in ESCAPES
            ]
    for path, reply in zip(ESCAPES, replies, strict=True):
        assert getattr(reply, "code", None) == ErrorCode.TOOL_FAILED, (path, reply)
        assert "outside the sandbox" in reply.message, (path, reply)  # type: ignore[union-attr]


async def test_a_discarded_benchmark_session_has_its_apps_detached() -> None:
    async with serving(mode="fast", keep_ended=0) as service:
        session = service.registry.create(gaia2_json(), oracle=True, import_mode="benchmark")
        apps = list(session.sim.scenario.apps or [])
        assert session.import_mode == "benchmark" and "SystemApp" in {app.name for app in apps}
        assert all(app.add_event_callbacks for app in apps)  # wired to the environment
        await session.done.wait()
        assert session.id not in service.registry.sessions  # keep_ended=0: forgotten at once
    assert not [app.name for app in apps if app.add_event_callbacks]
    assert not [app.name for app in apps if any(vars(app).get(link) for link in ENV_LINKS)]
