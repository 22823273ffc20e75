"""A session's code touches no host file outside its sandbox (`areasync.bridge.sandbox.audit`).

The sweep finds, in every app class ARE ships, every tool argument that can carry a path (a
`str` or `list[str]` whose name or description mentions a path, file, directory, folder or
attachment) and calls the tool with hostile values, with and without a file-system app in the
session: nothing outside the sandbox is read (no host content in the result, the apps' state or
the event log) or written (the test's whole temporary tree, the working directory included,
stays unchanged), a FIFO never blocks, and the session keeps working.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import inspect
import json
import os
import pkgutil
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from are.simulation import apps as are_apps
from are.simulation.apps.app import App
from are.simulation.apps.email_client import Email, EmailClientV2, EmailFolderName
from are.simulation.apps.messaging import FileMessage
from are.simulation.apps.messaging_v2 import FileMessageV2, MessagingAppV2
from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem
from are.simulation.apps.system import SystemApp
from are.simulation.scenarios.scenario import Scenario

from areasync.bridge.sandbox.audit import Sandbox, SandboxViolation
from areasync.protocol import CallTool, Error, ErrorCode, Result, Role
from areasync.simulation import Simulation
from tests.service.support import ADMIN, TUTORIAL, attach, serving

CANARY = "HOST-CANARY-7d1f0c"
PATHY = re.compile(r"path|file|dir|attachment|folder", re.IGNORECASE)
GIVE_UP = 60.0  # wall seconds: only a bound for a test that would otherwise hang on a FIFO


def shipped_app_classes() -> list[type[App]]:
    """Every concrete App class in ARE's `are.simulation.apps` package (not only ALL_APPS:
    `EmailClientApp` and `MessagingApp` are left out of it but registered scenarios use them),
    except MCP apps (they talk to servers, not files)."""
    for module in pkgutil.walk_packages(are_apps.__path__, are_apps.__name__ + "."):
        if ".mcp" not in module.name:
            importlib.import_module(module.name)
    found: dict[str, type[App]] = {}
    stack: list[type[App]] = [App]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        module = cls.__module__
        shipped = module.startswith("are.simulation.apps") and ".mcp" not in module
        if shipped and not inspect.isabstract(cls) and cls is not App:
            found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[name] for name in sorted(found)]


def path_args(app: App) -> list[tuple[Any, str, bool]]:
    """(tool, argument name, is a list) for each argument of `app`'s tools that can carry a
    path, found from the tools' argument types, names and descriptions."""
    found = []
    for tool in app.get_tools():
        for arg in tool.args:
            kind = str(arg.arg_type).replace(" ", "")
            if kind not in ("str", "list[str]", "list[str]|None", "str|None"):
                continue
            if PATHY.search(arg.name) or PATHY.search(arg.description or ""):
                found.append((tool, arg.name, kind.startswith("list")))
    return found


class AppsScenario(Scenario):
    """One app of each given class and no events: the session the sweep attacks. The apps are
    built when the scenario is, as ARE's scenarios build theirs (inside the session's loading
    sandbox, which then adopts the file systems' directories)."""

    scenario_id: str = "areasync_test_sandbox_sweep"
    start_time: float | None = 0.0
    duration: float | None = 1000.0

    def __init__(self, classes: list[type[App]]) -> None:
        super().__init__()
        self.start_time = 0.0
        self.duration = 1000.0
        self.classes = classes

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        apps = [app for cls in self.classes if (app := instantiable(cls)) is not None]
        names = [app.name for app in apps]
        self.apps = [app for i, app in enumerate(apps) if app.name not in names[:i]]

    def build_events_flow(self) -> None:
        self.events = []


def instantiable(cls: type[App]) -> App | None:
    try:
        return cls()
    except Exception:
        return None


def seed(app: App) -> dict[str, str]:
    """Give an app something a path tool acts on (an email, a conversation, each with an
    attachment), so that the hostile path is reached; the ids to call it with."""
    ids: dict[str, str] = {}
    attachment = {"note.txt": base64.b64encode(b"in-sandbox data")}
    if hasattr(app, "folders") and hasattr(app, "add_email"):
        email = Email(sender="a@b.c", recipients=["me@b.c"], subject="s", email_id="seeded")
        email.attachments = dict(attachment)
        app.add_email(email=email, folder_name=EmailFolderName.INBOX)
        ids["email_id"] = "seeded"
    if hasattr(app, "conversations"):
        with_user = getattr(app, "current_user_id", "absent") is None
        if with_user:
            app.current_user_id, app.current_user_name = "me", "Me"
            app.id_to_name["me"], app.name_to_id["Me"] = "Me", "me"
        content = attachment["note.txt"]
        if hasattr(app, "add_users"):  # MessagingAppV2
            app.add_users(["Bob", "Carol"])
            users = [app.name_to_id["Bob"], app.name_to_id["Carol"]]
            conversation = app.create_group_conversation(user_ids=users)
            message: Any = FileMessageV2(
                sender_id=users[0], attachment=content, attachment_name="note.txt"
            )
        else:
            conversation = app.create_conversation(participants=["Bob"])
            message = FileMessage(sender="Bob", attachment=content, attachment_name="note.txt")
        message.message_id = "seeded"
        app.conversations[conversation].messages.append(message)
        ids["conversation_id"] = conversation
        ids["message_id"] = "seeded"
    return ids


def fill(tool: Any, target: str, value: Any, ids: dict[str, str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for arg in tool.args:
        if arg.name == target:
            args[arg.name] = value
        elif arg.name in ids:
            args[arg.name] = ids[arg.name]
        elif not arg.has_default:
            kind = str(arg.arg_type)
            args[arg.name] = [] if kind.startswith("list") else 1 if kind == "int" else "x"
    return args


@dataclasses.dataclass
class Host:
    """Things outside every sandbox that the hostile values point at."""

    tree: Path  # the whole test tree, working directory included: must not change
    secret: Path  # a host file with a canary
    fifo: Path
    canary_dir: Path

    def from_root(self, name: str) -> str:
        """`tree/name` relative to "/": what follows enough `../` to reach it."""
        return os.path.relpath(self.tree / name, "/")

    def snapshot(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for path in sorted(self.tree.rglob("*")):
            info = path.lstat()
            content = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            found[str(path)] = (info.st_mode, info.st_size, content)
        return found


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    secret = tmp_path / "secret.txt"
    secret.write_text(CANARY)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    canary_dir = tmp_path / "canary"
    canary_dir.mkdir()
    (canary_dir / "note.txt").write_text("precious")  # a download must not truncate it
    cwd = tmp_path / "cwd" / "a" / "b"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)  # relative paths resolve here, as in ARE: inside the watched tree
    return Host(tmp_path, secret, fifo, canary_dir)


def write(root: str, name: str, data: bytes) -> None:
    Path(root, name).write_bytes(data)


def read(root: str, name: str) -> bytes:
    return Path(root, name).read_bytes()


def remove(root: str, name: str) -> None:
    Path(root, name).unlink(missing_ok=True)


def hostile_values(host: Host, root: str | None) -> list[str]:
    values = [
        "/etc/passwd",
        "/proc/self/environ",
        "/proc/self/cmdline",
        "/proc/self/fd/1",
        "../../..",
        "../../../../etc/passwd",
        str(host.fifo),
        "/dev/zero",
        str(host.secret),
        str(host.canary_dir),
        str(host.canary_dir) + "/",
        "Downloads/",
    ]
    if root is not None:
        values += ["/link", os.path.join(root, "link"), "/fifo", os.path.join(root, "fifo")]
    return values


def leaked(text: str) -> bool:
    passwd = Path("/etc/passwd").read_bytes()[:24]
    environ = Path("/proc/self/environ").read_bytes()[:24]
    needles = [CANARY, "root:x:0", base64.b64encode(CANARY.encode()).decode()[:16]]
    needles += [base64.b64encode(passwd).decode()[:24], base64.b64encode(environ).decode()[:24]]
    return any(needle in text for needle in needles)


def sweep_cases() -> list[tuple[str, bool]]:
    return [("with a file-system app", True), ("without a file-system app", False)]


@pytest.mark.parametrize(("label", "with_files"), sweep_cases())
async def test_no_path_tool_of_any_shipped_app_reaches_outside_the_sandbox(
    label: str, with_files: bool, host: Host
) -> None:
    classes = [
        cls
        for cls in shipped_app_classes()
        if with_files or not issubclass(cls, SandboxLocalFileSystem)
    ]
    sim = Simulation.load(AppsScenario(classes), mode="manual")
    apps = list(sim.env.apps.values())
    assert any(isinstance(app, SandboxLocalFileSystem) for app in apps) is with_files
    ids = {app.name: seed(app) for app in apps}
    roots = sim.sandbox.roots
    root = roots[0] if roots else None
    if root is not None:
        os.symlink(host.secret, os.path.join(root, "link"))  # a link out, as if made inside
        os.mkfifo(os.path.join(root, "fifo"))
    before = host.snapshot()
    cases = [(app, *found) for app in apps for found in path_args(app)]
    assert len(cases) >= 10, cases  # the discovery found the attachment and file tools
    for app, tool, arg, is_list in cases:
        for value in hostile_values(host, root):
            args = fill(tool, arg, [value] if is_list else value, ids[app.name])
            with anyio.fail_after(GIVE_UP):
                try:
                    result = await sim.call_tool(tool._public_name, args)
                except Exception as exc:
                    result = str(exc)
            case = f"{label}: {tool._public_name}({arg}={value!r})"
            assert not leaked(repr(result)), case
            assert host.snapshot() == before, case
    if root is not None:  # planted by the test; ARE's get_state refuses to list a link out
        remove(root, "link")  # (a tool may have removed them: that is inside)
        remove(root, "fifo")
    assert not leaked(repr(sim.get_state())), label
    assert not leaked(repr([event.to_dict() for event in sim.env.event_log.list_view()])), label
    assert await sim.call_tool("SystemApp__get_current_time", {})  # the session still works


# -- what the sweep found, one behaviour at a time ------------------------------------------


@pytest.fixture
def tutorial() -> Simulation:
    return Simulation.load("scenario_tutorial", mode="manual")


async def test_attaching_a_host_file_fails_saying_the_path_is_outside_the_sandbox(
    tutorial: Simulation,
) -> None:
    with pytest.raises(Exception, match="outside this session's sandbox") as refused:
        await tutorial.call_tool(
            "EmailClientApp__send_email",
            {"recipients": ["a@b.c"], "attachment_paths": ["/proc/self/environ"]},
        )
    assert "file-system app" in str(refused.value)  # and says what is allowed


async def test_a_refused_tool_call_is_logged_as_a_failed_agent_action(
    tutorial: Simulation,
) -> None:
    conversation = next(iter(tutorial.env.apps["MessagingApp"].conversations))
    with pytest.raises(Exception, match="outside this session's sandbox"):
        await tutorial.call_tool(
            "MessagingApp__send_attachment",
            {"conversation_id": conversation, "filepath": "/etc/passwd"},
        )
    last = tutorial.env.event_log.list_view()[-1]
    assert last.metadata.exception is not None and "outside" in last.metadata.exception


async def test_downloading_to_a_host_directory_writes_nothing_there(
    tutorial: Simulation, host: Host
) -> None:
    app = tutorial.env.apps["EmailClientApp"]
    email = Email(sender="a@b.c", recipients=["me@b.c"], email_id="e1")
    email.attachments = {"note.txt": base64.b64encode(b"")}  # an empty file of the same name
    app.add_email(email=email, folder_name=EmailFolderName.INBOX)
    with pytest.raises(Exception, match="outside this session's sandbox"):
        await tutorial.call_tool(
            "EmailClientApp__download_attachments",
            {"email_id": "e1", "path_to_save": str(host.canary_dir)},
        )
    assert (host.canary_dir / "note.txt").read_text() == "precious"


async def test_a_fifo_in_the_sandbox_is_refused_without_blocking(tutorial: Simulation) -> None:
    root = tutorial.sandbox.roots[0]
    os.mkfifo(os.path.join(root, "pipe"))  # as if a scenario could make one
    with anyio.fail_after(GIVE_UP), pytest.raises(Exception, match="only regular files"):
        await tutorial.call_tool("SandboxLocalFileSystem__cat", {"path": "/pipe"})


async def test_a_device_is_refused(tutorial: Simulation) -> None:
    with pytest.raises(Exception, match="outside this session's sandbox"):
        await tutorial.call_tool(
            "EmailClientApp__send_email",
            {"recipients": ["a@b.c"], "attachment_paths": ["/dev/zero"]},
        )


async def test_a_file_above_max_file_bytes_is_refused() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual", max_file_bytes=10)
    write(sim.sandbox.roots[0], "Documents/big.txt", b"x" * 11)
    write(sim.sandbox.roots[0], "Documents/small.txt", b"x" * 10)
    with pytest.raises(Exception, match="above this session's limit of 10 bytes"):
        await sim.call_tool("SandboxLocalFileSystem__cat", {"path": "/Documents/big.txt"})
    assert await sim.call_tool("SandboxLocalFileSystem__cat", {"path": "/Documents/small.txt"})


async def test_a_session_without_a_file_system_app_is_told_it_has_none(host: Host) -> None:
    sim = Simulation.load(AppsScenario([EmailClientV2, SystemApp]), mode="manual")
    with pytest.raises(Exception, match="has no file-system app"):
        await sim.call_tool(
            "EmailClientV2__send_email",
            {"recipients": ["a@b.c"], "attachment_paths": [str(host.secret)]},
        )


async def test_the_guard_covers_any_code_run_for_a_session_not_only_known_tools(
    tmp_path: Path,
) -> None:
    # What an app ARE adds later would do: plain `open` of a host path inside a session.
    sandbox = Sandbox()
    (tmp_path / "f").write_text(CANARY)
    with sandbox.entered(), pytest.raises(SandboxViolation):
        (tmp_path / "f").read_text()
    with sandbox.entered(), pytest.raises(SandboxViolation):
        os.listdir(tmp_path)
    with sandbox.entered(), pytest.raises(SandboxViolation):
        (tmp_path / "new").write_text("x")
    assert (tmp_path / "f").read_text() == CANARY  # outside any session: untouched
    assert not (tmp_path / "new").exists()


def test_lazy_imports_and_temporary_files_work_inside_a_session() -> None:
    with Sandbox().entered():
        importlib.import_module("json.tool")  # an import reads the Python installation
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".pdf") as temp:  # ARE's PDF reader does this
            temp.write(b"%PDF")
            temp.flush()
            assert Path(temp.name).read_bytes() == b"%PDF"


async def test_a_document_in_the_files_app_is_attached_as_in_are(tutorial: Simulation) -> None:
    # Gaia2's shape: a V2 email app connected to the scenario's file system.
    root = tutorial.sandbox.roots[0]
    write(root, "Documents/report.txt", b"quarterly")
    fs = tutorial.env.apps["SandboxLocalFileSystem"]
    email = EmailClientV2()
    email.connect_to_protocols({next(iter(fs.get_implemented_protocols())): fs})
    email.register_time_manager(tutorial.env.time_manager)
    with tutorial.sandbox.entered():
        email_id = email.send_email(
            recipients=["a@b.c"], attachment_paths=["/Documents/report.txt"]
        )
        sent = email.folders[EmailFolderName.SENT].get_email_by_id(email_id)
        assert sent.attachments == {"report.txt": base64.b64encode(b"quarterly")}
        saved = email.download_attachments(email_id, "SENT", "/Downloads/")
    assert saved == ["/Downloads/report.txt"]
    assert read(root, "Downloads/report.txt") == b"quarterly"


# -- every scenario-JSON route to a path ----------------------------------------------------


def scenario_json(apps: list[dict[str, Any]], events: list[dict[str, Any]]) -> str:
    return json.dumps(
        {
            "version": "are_simulation_v1",
            "metadata": {"definition": {"scenario_id": "hostile", "start_time": 0, "duration": 50}},
            "apps": [{"name": "SystemApp", "class_name": "SystemApp", "app_state": {}}, *apps],
            "events": events,
        }
    )


def env_event(app: str, function: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "class_name": "Event",
        "event_type": "USER",
        "event_time": None,
        "event_id": f"evil-{function}",
        "dependencies": [],
        "event_relative_time": 1.0,
        "action": {
            "action_id": f"{app}.{function}-1",
            "app": app,
            "function": function,
            "operation_type": "WRITE",
            "args": [{"name": k, "value": v, "value_type": "str"} for k, v in args.items()],
        },
    }


def email_state(attachment_name: str) -> dict[str, Any]:
    app = EmailClientV2()
    email = Email(sender="a@b.c", recipients=[app.user_email], email_id="evil")
    email.attachments = {attachment_name: base64.b64encode(b"PWNED")}
    app.add_email(email=email, folder_name=EmailFolderName.INBOX)
    state = app.get_state()
    return json.loads(json.dumps(state, default=lambda value: value.decode()))


async def run_json(text: str) -> Simulation:
    sim = Simulation.load(text, mode="manual")
    with anyio.fail_after(GIVE_UP):
        await sim.jump(by=5)
    return sim


@pytest.mark.parametrize("with_files", [True, False])
async def test_an_attachment_named_with_dots_in_app_state_writes_nothing_outside(
    host: Host, with_files: bool
) -> None:
    target = host.from_root("canary/note.txt")
    apps = [
        {
            "name": "EmailClientV2",
            "class_name": "EmailClientV2",
            "app_state": email_state("../" * 12 + target),
        }
    ]
    if with_files:
        apps.append({"name": "Files", "class_name": "Files", "app_state": {}})
    before = host.snapshot()
    for path in ("Downloads/", "/", str(host.canary_dir)):
        event = env_event(
            "EmailClientV2", "download_attachments", {"email_id": "evil", "path_to_save": path}
        )
        sim = await run_json(scenario_json(apps, [event]))
        failed = [e for e in sim.env.event_log.list_view() if e.metadata.exception]
        assert failed, path  # the event ran and failed, logged with its exception
        assert host.snapshot() == before, path


async def test_a_file_system_tree_in_app_state_creates_nothing_outside(host: Host) -> None:
    escape = "../" * 12 + host.from_root("canary")
    tree = {
        "files": {
            "name": "",
            "type": "directory",
            "children": [
                {"name": escape, "type": "directory", "children": []},
                {"name": escape + "/planted", "type": "file"},
                {"name": "ok", "type": "directory", "children": [{"name": "a", "type": "file"}]},
            ],
        }
    }
    before = host.snapshot()
    # ARE's importer logs the refused tree and leaves the app out, as it does any app whose
    # state fails to load; the session runs on.
    await run_json(scenario_json([{"name": "Files", "class_name": "Files", "app_state": tree}], []))
    assert host.snapshot() == before


def messaging_state(attachment_name: str) -> tuple[dict[str, Any], str]:
    app = MessagingAppV2(current_user_id="me", current_user_name="Me")
    app.add_users(["Bob", "Carol"])
    users = [app.name_to_id["Bob"], app.name_to_id["Carol"]]
    conversation = app.create_group_conversation(user_ids=users)
    message = FileMessageV2(
        sender_id=users[0], attachment=b"UFdORUQ=", attachment_name=attachment_name
    )
    message.message_id = "evil"
    app.conversations[conversation].messages.append(message)
    state = json.loads(json.dumps(app.get_state(), default=lambda value: value.decode()))
    return state, conversation


@pytest.mark.parametrize("with_files", [True, False])
async def test_a_messaging_attachment_named_with_dots_writes_nothing_outside(
    host: Host, with_files: bool
) -> None:
    target = "../" * 12 + host.from_root("canary/note.txt")
    state, conversation = messaging_state(target)
    apps = [{"name": "MessagingAppV2", "class_name": "MessagingAppV2", "app_state": state}]
    if with_files:
        apps.append({"name": "Files", "class_name": "Files", "app_state": {}})
    before = host.snapshot()
    for path in ("Downloads/", "/", str(host.canary_dir)):
        event = env_event(
            "MessagingAppV2",
            "download_attachment",
            {"conversation_id": conversation, "message_id": "evil", "download_path": path},
        )
        sim = await run_json(scenario_json(apps, [event]))
        assert [e for e in sim.env.event_log.list_view() if e.metadata.exception], path
        assert host.snapshot() == before, path


# -- over a real server ---------------------------------------------------------------------


async def test_an_agent_cannot_read_the_admin_token_from_proc_self_environ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The attack: attach /proc/self/environ (or cmdline, or fd 1) to an email, read it back.
    async with (
        serving(TUTORIAL) as service,
        attach(service, Role.AGENT, session=TUTORIAL) as agent,
    ):
        replies = [
            await agent.request(
                CallTool,
                tool="EmailClientApp__send_email",
                args={"recipients": ["a@b.c"], "attachment_paths": [path]},
            )
            for path in ("/proc/self/environ", "/proc/self/cmdline", "/proc/self/fd/1")
        ]
        emails = await agent.request(
            CallTool, tool="EmailClientApp__list_emails", args={"folder_name": "SENT"}
        )
        alive = await agent.request(CallTool, tool="SystemApp__get_current_time", args={})
    for reply in replies:
        assert isinstance(reply, Error) and reply.code == ErrorCode.TOOL_FAILED, reply
        assert "outside this session's sandbox" in reply.message
    assert ADMIN not in repr(emails) and ADMIN not in repr(replies)
    assert isinstance(alive, Result)
