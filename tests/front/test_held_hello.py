"""The front's hello deadline, as a server's: a hello that reached the front while its loop was
held is read, not timed out; one that stalled part way is closed (`front/server.py`'s
`_read_hello`). The front runs in this process (its loop is the test's to hold) with one
session worker, its heartbeat spaced beyond the test so that the held loop is not taken for a
stuck worker's."""

from __future__ import annotations

from pathlib import Path

from areasync.front.server import Front
from areasync.protocol.errors import CloseCode
from areasync.protocol.frames import Mode, Role
from areasync.service.config import ServiceConfig
from bench.misbehaving import close_code, hello_frame, partial_frame
from tests.front.support import ADMIN
from tests.heldloop import HeldLoop, first_frame_while_held

TUTORIAL = "scenario_tutorial"
# A hello deadline the wall never reaches in a test: the test moves the loop's clock past it.
HELLO_TIMEOUT = 30.0
# No heartbeat while the test runs (the first is sent as the front starts).
BEATS = 3600.0


def _config(tmp_path: Path) -> ServiceConfig:
    return ServiceConfig(
        port=0,
        mode=Mode.MANUAL,
        trace_dir=None,
        state_dir=tmp_path / "state",
        admin_token=ADMIN,
        hello_timeout=HELLO_TIMEOUT,
    )


async def _first_answer(tmp_path: Path, data: bytes | None) -> bytes:
    """What the front answers a first frame (None: the observer's hello) sent while it was held
    past its hello deadline."""
    with HeldLoop() as held:
        async with Front(_config(tmp_path), 1, [TUTORIAL], beat_interval=BEATS) as front:
            assert front.port is not None
            first = data or hello_frame(front.tokens.of(TUTORIAL)[Role.OBSERVER])
            return await first_frame_while_held(
                held,
                front.port,
                front.admission,
                TUTORIAL,
                first,
                past=HELLO_TIMEOUT + 1,
                stalls=data is not None,
            )


async def test_a_hello_that_reached_a_held_front_before_its_deadline_is_welcomed(
    tmp_path: Path,
) -> None:
    answer = await _first_answer(tmp_path, None)
    assert b'"welcome"' in answer and close_code(answer) is None


async def test_a_partial_hello_that_reached_a_held_front_is_closed_at_its_deadline(
    tmp_path: Path,
) -> None:
    answer = await _first_answer(tmp_path, partial_frame())
    assert close_code(answer) == CloseCode.HELLO_TIMEOUT
