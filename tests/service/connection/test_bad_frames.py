"""Errors are data: every bad frame gets an error frame, changes nothing, and the socket stays."""

from __future__ import annotations

import msgspec
import pytest

from areasync.protocol import Error, ErrorCode, Ping, Pong, Role
from tests.service.support import attach, serving

BAD_FRAMES: list[tuple[str | bytes, ErrorCode]] = [
    ("{not json", ErrorCode.BAD_FRAME),
    ("[1, 2]", ErrorCode.BAD_FRAME),
    ('{"id": 1}', ErrorCode.BAD_FRAME),
    ('{"type": "teleport", "id": 2}', ErrorCode.UNKNOWN_TYPE),
    ('{"type": "jump", "id": 3}', ErrorCode.INVALID_FIELD),
    ('{"type": "jump", "id": 4, "by": -1}', ErrorCode.INVALID_FIELD),
    ('{"type": "jump", "id": 7, "next_event": true, "inclusive": false}', ErrorCode.INVALID_FIELD),
    ('{"type": "tick", "id": 5, "n": 2, "typo": true}', ErrorCode.INVALID_FIELD),
    (b"\x93\x01", ErrorCode.BAD_FRAME),  # msgpack, truncated
    (msgspec.msgpack.encode({"type": "call_tool", "id": 6}), ErrorCode.INVALID_FIELD),
    ("[" * 5000 + "]" * 5000, ErrorCode.BAD_FRAME),
]


@pytest.mark.parametrize(("data", "code"), BAD_FRAMES)
async def test_a_bad_frame_gets_an_error_and_changes_nothing(
    data: str | bytes, code: ErrorCode
) -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as peer:
        sim = service.registry.get("scenario_tutorial").sim  # type: ignore[union-attr]
        before = (sim.clock_state(), sim.log.seq, len(sim.inputs))
        await peer.send_raw(data)
        error = await peer.until(lambda f: isinstance(f, Error))
        assert isinstance(await peer.request(Ping), Pong)
        assert (sim.clock_state(), sim.log.seq, len(sim.inputs)) == before
    assert isinstance(error, Error) and error.code == code and error.message
