"""The kernel's confinement of a worker process (`areasync/workers/confine.py`): real workers
of a real `WorkerPool`, each confined as it starts, try what an agent's code would (the
handlers of `tests/workers/confined.py`), and the kernel refuses what the spec does not allow.

Nothing is skipped on a kernel with Landlock ABI 6 and seccomp (Linux 6.7 and later); on an
older one the tests that need a missing feature say which and skip.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from areasync.service.config import ServiceConfig
from areasync.service.durability.state_dir import ADMIN_TOKEN_FILE, Journals
from areasync.workers import confine
from areasync.workers.confine import Confinement
from areasync.workers.pool import CallFailed, PoolError, WorkerPool
from tests.workers import confined

BOUND_S = 120.0  # a worker start (the fork server's first one imports its preload) and a call
PRELOAD = ("tests.workers.confined",)
FILES = 64  # the fd limit the workers get
MEMORY = 4 << 30  # the address-space limit the workers get

SUPPORT = confine.probe()
needs_landlock = pytest.mark.skipif(
    SUPPORT.landlock_abi < 4, reason=f"needs Landlock ABI 4 (this kernel: {SUPPORT.landlock_abi})"
)
needs_scopes = pytest.mark.skipif(
    SUPPORT.landlock_abi < 6, reason=f"needs Landlock ABI 6 (this kernel: {SUPPORT.landlock_abi})"
)
needs_seccomp = pytest.mark.skipif(SUPPORT.seccomp is not None, reason=str(SUPPORT.seccomp))


@pytest.fixture
def places(tmp_path: Path) -> Iterator[Path]:
    """`tmp_path` with a read-write dir (`rw/`) and a temp root (`tmp/`) for the workers."""
    (tmp_path / "rw").mkdir()
    (tmp_path / "tmp").mkdir()
    (tmp_path / "outside.txt").write_text("not the worker's")
    yield tmp_path


async def started(spec: Confinement) -> WorkerPool:
    pool = WorkerPool(1, confined.serving, preload=PRELOAD, confinement=spec)
    pool.start()
    await asyncio.wait_for(pool.ready(), BOUND_S)
    return pool


def spec_for(places: Path, **more: object) -> Confinement:
    return Confinement(
        read_write=(str(places / "rw"),),
        tmp_under=str(places / "tmp"),
        files=FILES,
        memory_bytes=MEMORY,
        **more,  # type: ignore[arg-type]
    )


@pytest.fixture
async def pool(places: Path) -> AsyncIterator[WorkerPool]:
    running = await started(spec_for(places))
    yield running
    await running.close()


async def call(pool: WorkerPool, method: str, *args: object) -> object:
    return await asyncio.wait_for(pool.call(pool.workers[0], method, *args), BOUND_S)


async def refused(pool: WorkerPool, method: str, *args: object) -> CallFailed:
    with pytest.raises(CallFailed) as failed:
        await call(pool, method, *args)
    return failed.value


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on loopback, opened by the test: its port."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


async def test_a_confined_worker_reports_every_layer_applied(pool: WorkerPool) -> None:
    report = pool.workers[0].confined
    assert report is not None and report.confined, report
    assert report.pid == pool.workers[0].pid
    assert report.files_confined and report.no_new_privs
    assert (report.files, report.memory_bytes) == (FILES, MEMORY)


@needs_landlock
async def test_reading_a_file_outside_the_workers_paths_is_refused(
    pool: WorkerPool, places: Path
) -> None:
    failed = await refused(pool, "read", str(places / "outside.txt"))
    assert failed.kind == "PermissionError"


@needs_landlock
async def test_listing_or_reading_the_home_directory_is_refused(pool: WorkerPool) -> None:
    home = Path.home()
    assert (await refused(pool, "listdir", str(home))).kind == "PermissionError"
    files = [path for path in home.iterdir() if path.is_file()]
    if files:
        assert (await refused(pool, "read", str(files[0]))).kind == "PermissionError"


@needs_landlock
async def test_reading_another_processs_environment_is_refused(pool: WorkerPool) -> None:
    failed = await refused(pool, "read", f"/proc/{os.getpid()}/environ")
    assert failed.kind == "PermissionError"


@needs_landlock
async def test_opening_a_state_dirs_admin_token_is_refused(places: Path) -> None:
    """A session worker may write its state dir's journals, never read the admin token."""
    state = places / "state"
    await Journals(ServiceConfig(state_dir=state)).open(None)
    (state / "sessions").mkdir(exist_ok=True)
    assert (state / ADMIN_TOKEN_FILE).is_file()
    spec = confine.session_worker_confinement(
        str(state / "sessions"), (str(places / "rw"),), str(places / "tmp")
    )
    pool = await started(spec)
    try:
        failed = await refused(pool, "read", str(state / ADMIN_TOKEN_FILE))
        assert failed.kind == "PermissionError"
        assert await call(pool, "write", str(state / "sessions" / "j"), "x")
        assert await call(pool, "write", str(places / "rw" / "sandbox"), "x")
        failed = await refused(pool, "write", str(state / "beside-the-journals"), "x")
        assert failed.kind == "PermissionError"
    finally:
        await pool.close()


async def test_writing_inside_a_read_write_path_works(pool: WorkerPool, places: Path) -> None:
    target = places / "rw" / "written.txt"
    assert await call(pool, "write", str(target), "hello") == str(target)
    assert target.read_text() == "hello"


async def test_the_worker_writes_its_temp_files_in_a_dir_of_its_own(
    pool: WorkerPool, places: Path
) -> None:
    worker = pool.workers[0]
    own = confine.worker_tmp(str(places / "tmp"), worker.pid or 0)
    assert await call(pool, "temp_dir") == own
    assert worker.confined is not None and worker.confined.tmp == own
    assert await call(pool, "write", os.path.join(own, "t"), "x")


@needs_landlock
async def test_writing_beside_a_read_write_path_is_refused(pool: WorkerPool, places: Path) -> None:
    failed = await refused(pool, "write", str(places / "beside.txt"), "x")
    assert failed.kind == "PermissionError"
    assert not (places / "beside.txt").exists()


@needs_seccomp
async def test_a_tcp_connect_to_a_loopback_listener_is_refused(
    pool: WorkerPool, listener: int
) -> None:
    failed = await refused(pool, "connect", listener)
    assert failed.kind == "PermissionError"


@needs_seccomp
async def test_creating_a_udp_socket_is_refused(pool: WorkerPool) -> None:
    assert (await refused(pool, "udp")).kind == "PermissionError"


@needs_landlock
async def test_a_tcp_connect_reaches_only_the_ports_the_spec_allows(
    places: Path, listener: int
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as other:
        pool = await started(spec_for(places, connect_ports=(listener,)))
        try:
            assert "127.0.0.1" in str(await call(pool, "connect", listener))
            failed = await refused(pool, "connect", other.getsockname()[1])
            assert failed.kind == "PermissionError"
            assert (await refused(pool, "udp")).kind == "PermissionError"
        finally:
            await pool.close()


async def test_the_fd_limit_holds_and_cannot_be_raised(pool: WorkerPool) -> None:
    failed = await refused(pool, "open_files", FILES)
    assert failed.kind == "OSError" and "Too many open files" in failed.message
    assert (await refused(pool, "raise_fd_limit", FILES * 2)).kind == "ValueError"


async def test_the_memory_limit_holds(pool: WorkerPool) -> None:
    assert (await refused(pool, "allocate", MEMORY)).kind == "MemoryError"


async def test_no_new_privs_is_set(pool: WorkerPool) -> None:
    assert await call(pool, "no_new_privs") == 1


@needs_scopes
async def test_signalling_a_process_outside_the_worker_is_refused(pool: WorkerPool) -> None:
    failed = await refused(pool, "signal_process", os.getpid())
    assert failed.kind == "PermissionError"


@needs_landlock
async def test_tracing_a_process_outside_the_worker_is_refused(pool: WorkerPool) -> None:
    assert (await refused(pool, "trace", os.getpid())).kind == "PermissionError"


async def test_a_worker_whose_temp_root_is_gone_does_not_start_nor_make_it_again(
    places: Path,
) -> None:
    """A start its pool's closing cancelled runs after the pool removed the temp root."""
    gone = places / "removed"
    pool = WorkerPool(
        1, confined.serving, preload=PRELOAD, confinement=Confinement(tmp_under=str(gone))
    )
    pool.start()
    try:
        with pytest.raises(PoolError, match="could not confine itself: the temp dir's parent"):
            await asyncio.wait_for(pool.ready(), BOUND_S)
        assert not gone.exists()
    finally:
        await pool.close()


async def test_an_unconfined_pool_reports_no_confinement(places: Path) -> None:
    pool = WorkerPool(1, confined.serving, preload=PRELOAD)
    pool.start()
    try:
        await asyncio.wait_for(pool.ready(), BOUND_S)
        assert pool.workers[0].confined is None
        assert await call(pool, "read", str(places / "outside.txt")) == b"not the worker's"
    finally:
        await pool.close()


def confining(code: str) -> subprocess.CompletedProcess[str]:
    """`code` run by a fresh interpreter (a process of its own, which it may confine)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=BOUND_S
    )


UNCHANGED = """
from pathlib import Path
status = Path("/proc/self/status").read_text()
assert "NoNewPrivs:\t0" in status and "Seccomp:\t0" in status, status
Path("/etc/passwd").read_bytes()  # no Landlock either
"""


def test_a_required_confinement_the_kernel_lacks_is_refused_and_changes_nothing() -> None:
    done = confining(
        "from areasync.workers.confine import *\n"
        "try:\n"
        "    confine(Confinement(required=True), Support(landlock_abi=0, seccomp=None))\n"
        "except ConfinementUnavailable as error:\n"
        "    print(error)\n" + UNCHANGED
    )
    assert done.returncode == 0, done.stderr
    assert "this kernel has no Landlock" in done.stdout
    assert "run without --require-confinement" in done.stdout


def test_a_process_with_a_thread_running_is_refused_and_changes_nothing() -> None:
    done = confining(
        "import threading\n"
        "from areasync.workers.confine import *\n"
        "stop = threading.Event()\n"
        "threading.Thread(target=stop.wait).start()\n"
        "try:\n"
        "    confine(Confinement())\n"
        "except ConfinementError as error:\n"
        "    print(error)\n"
        "stop.set()\n" + UNCHANGED
    )
    assert done.returncode == 0, done.stderr
    assert "a process with 2 threads cannot be confined" in done.stdout


@needs_landlock
def test_a_rule_the_kernel_refuses_is_an_error_that_changes_nothing() -> None:
    done = confining(
        "from areasync.workers.confine import *\n"
        "from areasync.workers.landlock import LandlockError\n"
        "try:\n"
        "    confine(Confinement(connect_ports=(70000,), files=64))\n"
        "except LandlockError as error:\n"
        "    print(error)\n"
        "import resource\n"
        "assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] != 64\n" + UNCHANGED
    )
    assert done.returncode == 0, done.stderr
    assert "landlock add_rule port 70000: Invalid argument" in done.stdout
