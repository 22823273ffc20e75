"""Untrusted scenarios: what an uploaded scenario may name, how big and deep it may be, where its
file system may reach, and that one whose events raise does not take the server down.

A scenario uploaded with `create_session` is ARE JSON from whoever holds the admin token (or a
file handed to `areasync serve`). ARE's importer only builds classes from its own `ALL_APPS`,
but resolves an event's `function` with a bare `getattr`; areasync vets the JSON first
(`areasync.bridge.scenarios.vetting.vet_json`), before ARE's importer runs, and confines file-system
apps to their sandbox directory (ARE's own check is a string prefix test).
"""

from __future__ import annotations

import copy
import functools
import json
import os
import types
from pathlib import Path
from typing import Any

import pytest
from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem
from are.simulation.data_handler.importer import JsonScenarioImporter

from areasync.bridge.scenarios import loading as scenarios
from areasync.bridge.scenarios.vetting import (
    MAX_JSON_DEPTH,
    ScenarioError,
    importable_app_classes,
    vet_json,
)
from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID, offline_scenario_ids
from areasync.protocol import (
    CallTool,
    CreateSession,
    EndedItem,
    Error,
    ErrorCode,
    EventItem,
    Ping,
    Pong,
    Role,
)
from areasync.simulation import Simulation
from tests.scenarios import TimelineApp, TimelineScenario
from tests.service.support import TUTORIAL, attach, http_get, serving


@functools.cache
def _gaia2_text() -> str:
    return export_scenario_json(GAIA2_SHAPED_ID)


def gaia2() -> dict[str, Any]:
    """A fresh copy of a valid Gaia2-shaped ARE scenario (ARE's own exporter wrote it)."""
    return copy.deepcopy(json.loads(_gaia2_text()))


def event_calling(data: dict[str, Any], function: str) -> dict[str, Any]:
    """The first scenario event whose action calls `function`."""
    return next(e for e in data["events"] if (e.get("action") or {}).get("function") == function)


async def refused_upload(text: str, **config: Any) -> tuple[str, str, list[str]]:
    """Upload `text` with create_session: (error code, message, session ids afterwards)."""
    # Encoded by hand: Python's json escapes lone surrogates, which a hostile client may send.
    frame = {"type": "create_session", "id": 99, "scenario_json": text, "mode": "fast"}
    async with serving(**config) as service, attach(service, Role.ADMIN) as admin:
        await admin.send_raw(json.dumps(frame))
        error = await admin.reply_to(99)
        assert isinstance(error, Error), error
        assert isinstance(await admin.request(Ping), Pong)  # the connection stays
        return error.code, error.message, sorted(service.registry.sessions)


@pytest.fixture
def importer_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts calls of ARE's JSON importer: a refused scenario must never reach it."""
    calls: list[int] = []
    real = JsonScenarioImporter.import_from_json

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(JsonScenarioImporter, "import_from_json", spy)
    return calls


# -- what a scenario may name ----------------------------------------------------------------


async def test_a_valid_uploaded_scenario_is_accepted(importer_calls: list[int]) -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(CreateSession, scenario_json=_gaia2_text(), mode="manual")
    assert created["scenario_id"] == GAIA2_SHAPED_ID and importer_calls == [1]


@pytest.mark.parametrize(
    "class_name",
    ["os.system", "subprocess.Popen", "are.simulation.apps.email_client.EmailClientV2", "Nope"],
)
async def test_an_app_class_that_is_not_one_of_ares_is_refused(
    class_name: str, importer_calls: list[int]
) -> None:
    data = gaia2()
    data["apps"][0]["class_name"] = class_name
    code, message, sessions = await refused_upload(json.dumps(data))
    assert code == ErrorCode.INVALID_FIELD and repr(class_name) in message
    assert "ARE's app classes" in message and sessions == [TUTORIAL] and importer_calls == []


@pytest.mark.parametrize(
    "function", ["__init__", "__class__", "_validate_path", "load_state", "reset", "set_seed"]
)
async def test_an_event_may_call_only_tools_and_event_registered_methods(
    function: str, importer_calls: list[int]
) -> None:
    data = gaia2()
    event_calling(data, "create_and_add_email")["action"]["function"] = function
    code, message, sessions = await refused_upload(json.dumps(data))
    assert code == ErrorCode.INVALID_FIELD and function in message and "tool" in message
    assert sessions == [TUTORIAL] and importer_calls == []


async def test_an_event_calling_an_undeclared_app_is_refused(importer_calls: list[int]) -> None:
    data = gaia2()
    event_calling(data, "create_and_add_email")["action"]["app"] = "SandboxLocalFileSystem"
    code, message, _ = await refused_upload(json.dumps(data))
    assert code == ErrorCode.INVALID_FIELD and "does not declare" in message
    assert importer_calls == []


@pytest.mark.parametrize("scenario_id", offline_scenario_ids())
def test_vetting_refuses_no_scenario_ares_importer_can_run(scenario_id: str) -> None:
    text = export_scenario_json(scenario_id)
    classes = {cls for cls in importable_app_classes()}
    declared = {app.get("class_name") or app["name"] for app in json.loads(text)["apps"]}
    if not declared <= classes:
        # ARE's importer would silently drop these apps; areasync says so instead.
        with pytest.raises(ScenarioError, match="not one of ARE's app classes"):
            vet_json(text)
        return
    vet_json(text)


# -- size, depth, malformed ----------------------------------------------------------------------


def nested(depth: int) -> str:
    return '{"metadata": ' + '{"a": ' * (depth - 1) + "1" + "}" * depth


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
async def test_deeply_nested_json_is_refused_before_any_work(
    depth: int, importer_calls: list[int]
) -> None:
    code, message, _ = await refused_upload(nested(depth))
    assert code == ErrorCode.INVALID_FIELD and f"deeper than {MAX_JSON_DEPTH}" in message
    assert importer_calls == []


def test_nesting_up_to_the_limit_passes_the_depth_check() -> None:
    vet_json(nested(MAX_JSON_DEPTH))  # ARE's importer then judges whether it is a scenario


@pytest.mark.parametrize(
    "text",
    [
        "{",  # truncated
        '{"apps": [}',
        '{"metadata": NaN}',  # not JSON (Python's json module would accept it)
        "{" + '"a": 1, ' * 5 + "}",  # trailing comma
    ],
)
async def test_malformed_json_is_refused_clearly(text: str, importer_calls: list[int]) -> None:
    code, message, sessions = await refused_upload(text)
    assert code == ErrorCode.INVALID_FIELD and "not valid JSON" in message
    assert sessions == [TUTORIAL] and importer_calls == []


def test_text_with_a_lone_surrogate_is_refused_clearly() -> None:
    # Over the socket msgspec already refuses the frame (bad_frame); in-process text can hold one.
    with pytest.raises(ScenarioError, match="not valid JSON"):
        scenarios.load('{"apps": "\udc80"}')


def test_a_file_that_is_not_utf8_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"apps": "\xe9t\xe9"}')
    with pytest.raises(ScenarioError, match="not valid JSON"):
        scenarios.load(path)


def test_a_file_above_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text("{" + " " * 200 + "}")
    with pytest.raises(ScenarioError, match="above the 100-byte limit for scenario files"):
        scenarios.load(path, max_scenario_bytes=100)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("time_increment_in_seconds", 0),
        ("time_increment_in_seconds", -3),
        ("time_increment_in_seconds", 1.5),
        ("start_time", 1e300),
        ("start_time", -5),
        ("duration", -1),
        ("duration", 1e300),
    ],
)
async def test_clock_numbers_out_of_range_are_refused_clearly(
    field: str, value: Any, importer_calls: list[int]
) -> None:
    data = gaia2()
    data["metadata"]["definition"][field] = value
    code, message, _ = await refused_upload(json.dumps(data))
    assert code == ErrorCode.INVALID_FIELD and field in message and importer_calls == []


# -- the file-system sandbox -----------------------------------------------------------------

FS = "SandboxLocalFileSystem"
TIMELINE = "areasync_test_timeline"
ESCAPES = [
    "../../etc/passwd",
    "/../../etc/passwd",
    "/..",
    "..",
    "~/../../../etc/passwd",
    "/home/../../..",
    "/./../x",
]


@pytest.fixture
def sandbox_session() -> Simulation:
    return Simulation.load("scenario_find_image_file", mode="manual")


def exists(path: str) -> bool:
    return Path(path).exists()


def sandbox_of(sim: Simulation) -> str:
    app = sim.env.apps[FS]
    assert isinstance(app, SandboxLocalFileSystem)
    return str(app.tmpdir)


async def test_file_tools_refuse_paths_outside_the_sandbox_over_the_socket() -> None:
    async with (
        serving("scenario_find_image_file") as service,
        attach(service, Role.AGENT, session="scenario_find_image_file") as agent,
    ):
        replies = {
            (tool, path): await agent.request(CallTool, tool=f"{FS}__{tool}", args={"path": path})
            for tool in ("cat", "ls", "exists", "info")
            for path in ESCAPES
        }
    for case, reply in replies.items():
        assert getattr(reply, "code", None) == ErrorCode.TOOL_FAILED, (case, reply)
        assert "outside the sandbox" in reply.message, (case, reply)  # type: ignore[union-attr]


async def test_a_sibling_of_the_sandbox_that_shares_its_prefix_is_outside(
    sandbox_session: Simulation,
) -> None:
    # ARE's own check is `full_path.startswith(tmpdir)`: "<tmpdir>_evil" passed it.
    root = sandbox_of(sandbox_session)
    sibling = f"/../{os.path.basename(root)}_evil"
    for tool, args in [
        ("makedirs", {"path": sibling, "exist_ok": True}),
        ("mkdir", {"path": sibling + "/x"}),
        ("open", {"path": sibling + "_file", "mode": "w"}),
        ("mv", {"path1": "/", "path2": sibling}),
    ]:
        with pytest.raises(Exception, match="outside the sandbox"):
            await sandbox_session.call_tool(f"{FS}__{tool}", args)
    assert not exists(root + "_evil") and not exists(root + "_evil_file")


async def test_a_symlink_out_of_the_sandbox_is_not_followed(sandbox_session: Simulation) -> None:
    root = sandbox_of(sandbox_session)
    os.symlink("/etc", os.path.join(root, "etc-link"))  # as if a tool could make one
    with pytest.raises(Exception, match="outside the sandbox"):
        await sandbox_session.call_tool(f"{FS}__cat", {"path": "/etc-link/passwd"})


async def test_paths_inside_the_sandbox_still_work(sandbox_session: Simulation) -> None:
    await sandbox_session.call_tool(f"{FS}__makedirs", {"path": "/a/b", "exist_ok": True})
    assert await sandbox_session.call_tool(f"{FS}__exists", {"path": "/a/../a/b"}) is True
    assert "/a" in await sandbox_session.call_tool(f"{FS}__ls", {"path": "/"})


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_opening_files_again_and_again_holds_no_descriptor(
    sandbox_session: Simulation,
) -> None:
    # ARE's `open` tool returns an open handle, which its event log kept: one descriptor per
    # call for the session's life, until the server could accept no connection.
    await sandbox_session.call_tool(f"{FS}__open", {"path": "/warm.txt", "mode": "w"})
    before = open_descriptors()
    for n in range(50):
        await sandbox_session.call_tool(f"{FS}__open", {"path": f"/f{n}.txt", "mode": "w"})
    assert open_descriptors() == before
    assert await sandbox_session.call_tool(f"{FS}__exists", {"path": "/f49.txt"}) is True


# -- scenarios whose events raise ----------------------------------------------------------------


def exploding_timeline() -> TimelineScenario:
    """A Python scenario whose second ENV event raises inside its app."""
    from are.simulation.types import Action, Event, EventType

    class Exploding(TimelineScenario):
        def build_events_flow(self) -> None:
            app = self.get_typed_app(TimelineApp)
            self.events = [
                Event(
                    event_type=EventType.ENV,
                    event_relative_time=float(t),
                    action=Action(function=function, args=args, app=app),
                ).with_id(f"e{t}")
                for t, function, args in [
                    (1, app.fire, {"label": "before"}),
                    (2, app.explode, {"reason": "scenario boom"}),
                    (3, app.fire, {"label": "after"}),
                ]
            ]

    return Exploding([], 10.0)


async def test_an_event_that_raises_is_logged_with_its_exception_and_the_run_goes_on() -> None:
    async with (
        serving(exploding_timeline(), mode="fast", oracle=True) as service,
        attach(service, Role.OBSERVER, session=TIMELINE, since=0) as peer,
    ):
        ended = await peer.until_ended()
    events = [item.event for item in peer.items if isinstance(item, EventItem)]
    assert [(e.function, e.exception) for e in events if e.app == "TimelineApp"] == [
        ("fire", None),
        ("explode", "scenario boom"),
        ("fire", None),
    ]
    assert ended.state == "stopped"


def raising_in_are_json() -> str:
    """Valid JSON whose ENV event makes ARE's notification system raise (KeyError) mid-tick."""
    data = gaia2()
    event_calling(data, "create_and_add_email")["action"]["args"] = [
        {"name": "unexpected", "value": "1", "value_type": "int"}
    ]
    return json.dumps(data)


async def test_a_scenario_that_raises_inside_ares_tick_ends_alone() -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(
            CreateSession, scenario_json=raising_in_are_json(), mode="fast", oracle=True
        )
        sid = created["session_id"]
        async with attach(service, Role.OBSERVER, session=sid, since=0) as observer:
            ended = await observer.until_ended()
        # The server goes on: other sessions run, new ones start, HTTP answers.
        again = await admin.call(CreateSession, scenario=TUTORIAL, mode="fast", oracle=True)
        async with attach(service, Role.OBSERVER, session=again["session_id"], since=0) as other:
            other_ended = await other.until_ended()
        status, _, _ = await http_get(service, "/health")
    assert isinstance(ended, EndedItem) and ended.state == "failed"
    assert ended.reason is not None and "KeyError" in ended.reason
    assert other_ended.state == "stopped" and other_ended.reason is None and status == 200


async def test_a_scenario_whose_validation_raises_ends_with_the_exception() -> None:
    class Invalid(TimelineScenario):
        def validate(self, env: Any) -> Any:
            raise RuntimeError("validation boom")

    async with (
        serving(Invalid([1.0], 5.0), mode="fast", oracle=True) as service,
        attach(service, Role.OBSERVER, session=TIMELINE, since=0) as peer,
    ):
        ended = await peer.until_ended()
    assert ended.validation is not None
    assert ended.validation.exception == "RuntimeError: validation boom"


@pytest.mark.parametrize(
    ("fields", "named"),
    [({"success": "yes"}, "success of type str"), ({"rationale": object()}, "rationale of type")],
    ids=["success", "rationale"],
)
async def test_a_validation_of_the_wrong_types_ends_with_a_type_error_clients_can_read(
    fields: dict[str, Any], named: str
) -> None:
    class Odd(TimelineScenario):
        def validate(self, env: Any) -> Any:
            return types.SimpleNamespace(**{"success": True, "rationale": None, **fields})

    async with (
        serving(Odd([1.0], 5.0), mode="fast", oracle=True) as service,
        attach(service, Role.OBSERVER, session=TIMELINE, since=0) as peer,
    ):
        ended = await peer.until_ended()  # decoded by the protocol's own types
    assert ended.validation is not None and ended.validation.success is None
    assert ended.validation.exception is not None
    assert ended.validation.exception.startswith("TypeError: validate() returned " + named)


async def test_a_scenario_that_fails_to_load_is_an_error_not_a_crash() -> None:
    data = gaia2()
    data["events"][0]["dependencies"] = ["no-such-event"]  # ARE refuses it while building
    code, message, sessions = await refused_upload(json.dumps(data))
    assert code == ErrorCode.INVALID_FIELD and "cannot create a session" in message
    assert sessions == [TUTORIAL]
