"""Synchronous code as cooperative tasks: `cooperative.spawn`/`wait` and `GreenletLocal`."""

from __future__ import annotations

import contextvars

import anyio
import anyio.lowlevel
import pytest

from areasync.gaia2.cooperative import GreenletLocal, cooperating, spawn, wait


async def test_spawn_returns_what_the_function_returns() -> None:
    assert await spawn(lambda a, b: a + b, 2, b=3) == 5


async def test_wait_returns_the_awaited_result_to_synchronous_code() -> None:
    async def answer() -> int:
        await anyio.lowlevel.checkpoint()
        return 42

    def sync_code() -> int:
        return wait(answer()) + 1

    assert await spawn(sync_code) == 43


async def test_wait_raises_the_awaited_error_in_synchronous_code() -> None:
    async def failing() -> None:
        raise KeyError("nope")

    def sync_code() -> str:
        try:
            wait(failing())
        except KeyError as error:
            return f"caught {error}"
        return "not raised"

    assert await spawn(sync_code) == "caught 'nope'"


async def test_an_error_of_the_function_propagates_out_of_spawn() -> None:
    def sync_code() -> None:
        wait(anyio.lowlevel.checkpoint())
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await spawn(sync_code)


async def test_spawned_functions_interleave_at_their_waits() -> None:
    trace: list[str] = []

    def worker(name: str) -> None:
        for step in range(2):
            trace.append(f"{name}{step}")
            wait(anyio.lowlevel.checkpoint())

    async with anyio.create_task_group() as tg:
        tg.start_soon(spawn, worker, "a")
        tg.start_soon(spawn, worker, "b")
    assert trace[:2] == ["a0", "b0"] and sorted(trace) == ["a0", "a1", "b0", "b1"]


async def test_cancelling_the_task_cancels_the_function_at_its_wait() -> None:
    reached: list[str] = []

    waiting = anyio.Event()

    def sync_code() -> None:
        reached.append("before")
        waiting.set()
        wait(anyio.sleep_forever())
        reached.append("after")

    async with anyio.create_task_group() as tg:
        tg.start_soon(spawn, sync_code)
        await waiting.wait()
        tg.cancel_scope.cancel()
    assert reached == ["before"]


def test_wait_outside_spawn_is_a_clear_error() -> None:
    async def never() -> None:
        raise AssertionError("must not run")

    assert not cooperating()
    with pytest.raises(RuntimeError, match="outside spawn"):
        wait(never())


async def test_cooperating_is_true_only_under_spawn() -> None:
    assert not cooperating()
    assert await spawn(cooperating)


async def test_each_spawned_function_has_its_own_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    def worker(name: str) -> tuple[str, str]:
        var.set(name)
        wait(anyio.lowlevel.checkpoint())
        return name, var.get()

    results: list[tuple[str, str]] = []

    async def run(name: str) -> None:
        results.append(await spawn(worker, name))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "a")
        tg.start_soon(run, "b")
    assert sorted(results) == [("a", "a"), ("b", "b")]
    assert var.get() == "unset"


async def test_greenlet_local_keeps_each_greenlets_attributes_apart() -> None:
    local = GreenletLocal()
    local.value = "outer"

    def worker(name: str) -> tuple[bool, str]:
        had_value = hasattr(local, "value")
        local.value = name
        wait(anyio.lowlevel.checkpoint())
        return had_value, local.value

    results: list[tuple[bool, str]] = []

    async def run(name: str) -> None:
        results.append(await spawn(worker, name))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "a")
        tg.start_soon(run, "b")
    assert sorted(results) == [(False, "a"), (False, "b")]
    assert local.value == "outer"
    del local.value
    with pytest.raises(AttributeError):
        _ = local.value
