"""The server's memory ceiling (`service/gate/memory.py`): at or above `memory_limit` of resident
memory (read from /proc/self/statm, for real), `create_session`, `fork_session` and an OpenEnv
reset are refused with `capacity`, naming the ceiling and the option that sets it, and nothing
is created. A ceiling of one byte stands for a server that has reached its ceiling; the sessions
the operator names at start-up start whatever it says.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from areasync.protocol import CreateSession, Error, ErrorCode, Role
from areasync.protocol.frames import ForkSession
from areasync.service.gate.memory import (
    DEFAULT_FRACTION,
    default_memory_limit,
    machine_memory_bytes,
    parse_memory_limit,
    resident_bytes,
)
from tests.service.adapters.openenv.client import GenericEnvClient
from tests.service.support import TUTORIAL, WAIT, attach, serving

AT_THE_CEILING = 1  # bytes: every process is above it


async def refused_at_the_ceiling(kind: type[Any], **fields: Any) -> Error:
    """An admin's `kind` request to a server at its ceiling: its error (nothing was created)."""
    async with (
        serving(memory_limit=AT_THE_CEILING) as service,
        attach(service, Role.ADMIN) as admin,
    ):
        error = await admin.fail(kind, **fields)
        assert list(service.registry.sessions) == [TUTORIAL]
    return error


async def test_create_session_at_the_memory_ceiling_is_capacity_naming_the_option() -> None:
    error = await refused_at_the_ceiling(CreateSession, scenario=TUTORIAL)
    assert error.code == ErrorCode.CAPACITY and error.retryable
    assert "ceiling" in error.message and "--memory-limit" in error.message


async def test_fork_session_at_the_memory_ceiling_is_capacity() -> None:
    error = await refused_at_the_ceiling(ForkSession, session_id=TUTORIAL)
    assert error.code == ErrorCode.CAPACITY and "no fork" in error.message


async def test_an_openenv_reset_at_the_memory_ceiling_is_a_capacity_error() -> None:
    async with (
        serving(memory_limit=AT_THE_CEILING) as service,
        GenericEnvClient(base_url=service.openenv_url()) as env,
    ):
        with anyio.fail_after(WAIT), pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            await env.reset(scenario=TUTORIAL)
        assert list(service.registry.sessions) == [TUTORIAL]


async def test_below_the_ceiling_sessions_are_created() -> None:
    resident = resident_bytes()
    assert resident is not None
    async with (
        serving(memory_limit=resident + 2**30) as service,
        attach(service, Role.ADMIN) as admin,
    ):
        created = await admin.call(CreateSession, scenario=TUTORIAL)
        assert service.registry.get(created["session_id"]) is not None


def test_the_default_ceiling_is_a_share_of_the_machines_memory() -> None:
    total = machine_memory_bytes()
    assert total is not None
    assert default_memory_limit() == int(total * DEFAULT_FRACTION)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4G", 4 * 2**30), ("512M", 512 * 2**20), ("1.5g", 3 * 2**29), ("1024", 1024), ("none", None)],
)
def test_a_memory_limit_is_a_size_or_none(text: str, expected: int | None) -> None:
    assert parse_memory_limit(text) == expected


def test_a_memory_limit_may_be_a_share_of_the_machines_memory() -> None:
    total = machine_memory_bytes()
    assert total is not None
    assert parse_memory_limit("50%") == total // 2


@pytest.mark.parametrize("text", ["lots", "-1G", "150%", "4 parsecs"])
def test_a_memory_limit_that_is_neither_is_refused_saying_what_is_accepted(text: str) -> None:
    with pytest.raises(ValueError, match="memory-limit"):
        parse_memory_limit(text)
