"""`background.start`: a task of the server's task group that fails is logged and handed to
its `on_failure`; the group and its other tasks go on. Cancellation is not a failure."""

from __future__ import annotations

import logging

import anyio
import anyio.lowlevel
import pytest

from areasync.service import background
from tests.service.support import WAIT


async def fail() -> None:
    raise RuntimeError("deliberately")


async def test_a_failing_task_is_logged_and_handed_on_and_the_others_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures: list[Exception] = []
    survived = anyio.Event()

    async def other() -> None:
        # Checkpoints after the failing task raised: cancelled here, were it not contained.
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        survived.set()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            background.start(tg, fail, what="a doomed task", on_failure=failures.append)
            background.start(tg, other, what="another task")
    assert survived.is_set()
    assert [str(exc) for exc in failures] == ["deliberately"]
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.getMessage() == "a doomed task failed; the server goes on without it"
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


async def test_a_failing_failure_handler_is_logged_too(caplog: pytest.LogCaptureFixture) -> None:
    def handler(exc: Exception) -> None:
        raise ValueError("the handler as well")

    async with anyio.create_task_group() as tg:
        background.start(tg, fail, what="a doomed task", on_failure=handler)
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert messages[-1] == "a doomed task failed, and so did ending what it served"


async def test_a_cancelled_task_is_not_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    failures: list[Exception] = []
    async with anyio.create_task_group() as tg:
        background.start(tg, anyio.sleep_forever, what="a sleeper", on_failure=failures.append)
        await anyio.lowlevel.checkpoint()
        tg.cancel_scope.cancel()
    assert failures == [] and not [r for r in caplog.records if r.levelno >= logging.ERROR]
