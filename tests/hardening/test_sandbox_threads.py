"""The file guard holds for a session's code in every thread, whatever another thread does.

The garbage collector runs in whichever thread allocated when a generation filled up, and the
finalizers it calls belong to the objects it frees, not to the session whose code happened to
allocate: they run as no session's code. That must open nothing for a session's code running
in any other thread meanwhile: an agent's tool calls on the event loop while a scenario is
imported in a worker thread (`create_session`, a fork, a restore, an OpenEnv reset), and a
scenario's own code in that worker while the loop collects.

The first two tests hold a collection open in one thread (a finalizer that waits) while the
other thread's session code reaches for a host file; the stress test hammers host paths through
the tool path while other threads collect and import without pause, and counts what got
through.
"""

from __future__ import annotations

import base64
import gc
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from are.simulation.apps.email_client import Email, EmailFolderName
from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem
from are.simulation.scenarios.scenario import Scenario

from areasync.bridge.sandbox.audit import Sandbox, SandboxViolation
from areasync.simulation import Simulation
from areasync.simulation.loading import build_scenario

CANARY = "HOST-CANARY-threads"
BOUND = 60.0  # wall seconds: only a bound on waits that would otherwise hang a broken test
HAMMERED = 2000  # tool calls at host paths in the stress test


class _Finalizer:
    """Garbage in a reference cycle whose finalizer, run by a collection in `thread`, says so
    and waits for `release`: the collection stays open until then."""

    def __init__(self, thread: int, entered: threading.Event, release: threading.Event) -> None:
        self.cycle = self
        self.thread, self.entered, self.release = thread, entered, release

    def __del__(self) -> None:
        if threading.get_ident() == self.thread and not self.entered.is_set():
            self.entered.set()
            self.release.wait(BOUND)


def collect_until_inside(entered: threading.Event, release: threading.Event) -> None:
    """Collect in this thread until one of its collections runs a waiting finalizer (which
    then holds it open until `release`)."""
    me = threading.get_ident()
    while not entered.is_set():
        _Finalizer(me, entered, release)
        gc.collect()


@contextmanager
def a_collection_open_in_another_thread() -> Iterator[None]:
    """The body runs while another thread is inside a collection (its finalizer waiting)."""
    entered, release = threading.Event(), threading.Event()
    collector = threading.Thread(target=collect_until_inside, args=(entered, release))
    collector.start()
    try:
        assert entered.wait(BOUND), "the other thread's collection never ran its finalizer"
        yield
    finally:
        release.set()
        collector.join(BOUND)


def during_a_collection_in_this_thread(probe: Callable[[], Any]) -> Any:
    """`probe()`, run in another thread while this one is inside a collection."""
    entered, release = threading.Event(), threading.Event()
    outcome: list[Any] = []

    def run() -> None:
        try:
            assert entered.wait(BOUND), "this thread's collection never ran its finalizer"
            outcome.append(probe())
        except BaseException as exc:
            outcome.append(exc)
        finally:
            release.set()

    prober = threading.Thread(target=run)
    prober.start()
    collect_until_inside(entered, release)
    prober.join(BOUND)
    return outcome[0]


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text(CANARY)
    return path


@pytest.fixture
def tutorial() -> Simulation:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    email = Email(sender="a@b.c", recipients=["me@b.c"], email_id="e1")
    email.attachments = {"note.txt": base64.b64encode(b"PWNED")}
    sim.env.apps["EmailClientApp"].add_email(email=email, folder_name=EmailFolderName.INBOX)
    return sim


async def attach_host_file(sim: Simulation, path: Path) -> bool:
    """Whether the agent's `send_email` with a host file attached got through."""
    try:
        await sim.call_tool(
            "EmailClientApp__send_email",
            {"recipients": ["a@b.c"], "attachment_paths": [str(path)]},
        )
    except Exception as exc:
        assert "outside this session's sandbox" in str(exc), exc
        return False
    return True


async def download_to_host_dir(sim: Simulation, directory: Path) -> bool:
    """Whether the agent's `download_attachments` to a host directory got through."""
    try:
        await sim.call_tool(
            "EmailClientApp__download_attachments",
            {"email_id": "e1", "path_to_save": f"{directory}/"},
        )
    except Exception as exc:
        assert "outside this session's sandbox" in str(exc), exc
        return False
    return True


async def test_a_tool_call_is_refused_while_another_thread_collects(
    tutorial: Simulation, secret: Path, tmp_path: Path
) -> None:
    with a_collection_open_in_another_thread():
        read = await attach_host_file(tutorial, secret)
        wrote = await download_to_host_dir(tutorial, tmp_path)
    assert not read and not wrote
    assert not (tmp_path / "note.txt").exists()


def test_a_file_system_freed_by_a_collection_in_a_sessions_call_removes_its_directory(
    secret: Path,
) -> None:
    # Another session's file system, garbage in a cycle: its finalizer removes its own
    # directory, whichever session's code the collection interrupted; that session's guard
    # is back once the collection is over.
    other = SandboxLocalFileSystem()
    directory = Path(other.tmpdir)
    other.cycle = other  # type: ignore[attr-defined]
    del other
    gc.disable()  # no collection but the one below
    try:
        with Sandbox().entered():
            gc.collect()
            with pytest.raises(SandboxViolation):
                secret.read_text()
    finally:
        gc.enable()
    assert not directory.exists()


# Enters and leaves a session's sandbox 3,000 times in one context holding other variables,
# with a collection at nearly every allocation: some start inside CPython's own update of the
# sandbox's context variable. Prints how many times a sandbox stayed current after its exit.
CHURN = """
import contextvars, gc
from areasync.bridge.sandbox import audit as sandbox

others = [contextvars.ContextVar(f"v{i}") for i in range(20)]

def churn():
    for var in others:
        var.set(1)
    stale = 0
    for _ in range(3000):
        cycle = [[]]
        cycle[0].append(cycle)
        with sandbox.Sandbox().entered():
            pass
        stale += sandbox.current() is not None
    return stale

sandbox.install()
gc.set_threshold(1)
print(contextvars.Context().run(churn))
"""


def test_collections_inside_a_sandboxs_own_entry_and_exit_leave_nothing_behind() -> None:
    # The collection callback must not touch context variables: a `ContextVar.set` there
    # crashed this process (a use after free in CPython) or left a sandbox current.
    done = subprocess.run(
        [sys.executable, "-c", CHURN], capture_output=True, text=True, timeout=BOUND, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0"


class HostReadingScenario(Scenario):
    """A scenario whose own code reads a host file while it is built (in a worker thread, as
    `create_session` builds it); `seen` holds what it got, or the refusal."""

    scenario_id: str = "areasync_test_host_reading"

    def __init__(self, target: Path) -> None:
        super().__init__()
        self.target = target
        self.seen: list[str | Exception] = []

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        try:
            self.seen.append(self.target.read_text())
        except SandboxViolation as exc:
            self.seen.append(exc)
        self.apps = []

    def build_events_flow(self) -> None:
        self.events = []


def test_a_scenario_built_in_a_worker_is_refused_while_the_loop_thread_collects(
    secret: Path,
) -> None:
    scenario = HostReadingScenario(secret)
    failure = during_a_collection_in_this_thread(lambda: build_scenario(scenario))
    assert not isinstance(failure, BaseException), failure
    assert len(scenario.seen) == 1 and isinstance(scenario.seen[0], SandboxViolation)


def collect_without_pause(stop: threading.Event) -> None:
    while not stop.is_set():
        gc.collect(1)  # the young generations: a collection every few hundred microseconds


def import_without_pause(stop: threading.Event, failures: list[Exception]) -> None:
    """What `create_session` does in its worker thread, again and again: build a scenario
    (imports, allocations, its own sandbox), then discard it; what failed."""
    while not stop.is_set():
        try:
            _, sandbox = build_scenario("scenario_tutorial")
        except Exception as exc:
            failures.append(exc)
        else:
            sandbox.remove_directories()


@pytest.mark.slow  # a stress run: 2,000 calls at host paths beside two hammering threads, ~10 s
async def test_no_host_path_is_reached_while_other_threads_collect_and_import(
    tutorial: Simulation, secret: Path, tmp_path: Path
) -> None:
    stop = threading.Event()
    failed_imports: list[Exception] = []
    workers = [
        threading.Thread(target=collect_without_pause, args=(stop,)),
        threading.Thread(target=import_without_pause, args=(stop, failed_imports)),
    ]
    for worker in workers:
        worker.start()
    passed = 0
    try:
        for i in range(HAMMERED):
            if i % 2:
                passed += await download_to_host_dir(tutorial, tmp_path)
            else:
                passed += await attach_host_file(tutorial, secret)
    finally:
        stop.set()
        for worker in workers:
            await anyio.to_thread.run_sync(worker.join, BOUND)
    assert passed == 0
    assert not (tmp_path / "note.txt").exists()
    assert failed_imports == []  # and the scenarios built meanwhile were not refused their own
    assert await tutorial.call_tool("SystemApp__get_current_time", {})  # it still works
