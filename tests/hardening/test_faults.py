"""`watch_faults`, the hardening tests' own check, sees what it must: an error log record, and
a task's exception nobody retrieved, also when the task is only freed by a collection."""

from __future__ import annotations

import asyncio
import logging

import anyio.lowlevel

from tests.hardening.faults import watch_faults


async def lose_a_task_exception_in_a_cycle() -> None:
    """A task that fails, its exception never retrieved, left in a reference cycle (the task
    holds its exception, which holds the task): only a garbage collection frees it."""
    holder: list[asyncio.Task[None]] = []

    async def fail() -> None:
        raise RuntimeError("lost", holder)

    task = asyncio.create_task(fail())
    holder.append(task)
    await asyncio.wait([task])  # done, and its exception not retrieved


async def test_a_lost_task_exception_freed_only_by_a_collection_is_a_fault() -> None:
    with watch_faults() as faults:
        await lose_a_task_exception_in_a_cycle()
    assert any("Task exception was never retrieved" in p for p in faults.problems), faults


async def test_an_error_log_record_is_a_fault() -> None:
    with watch_faults() as faults:
        logging.getLogger("areasync.test").error("something broke")
    assert faults.problems == ["ERROR areasync.test: something broke"]


async def test_a_clean_block_has_no_fault() -> None:
    with watch_faults() as faults:
        await anyio.lowlevel.checkpoint()
    assert faults.problems == []
