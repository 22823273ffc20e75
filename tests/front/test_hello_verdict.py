"""The front's verdict on a hello (`front/hello.py`), with no socket: what a worker is sent."""

from __future__ import annotations

import json

import msgspec

from areasync.front.hello import Verdict, judge
from areasync.protocol.codec import decode_client_frame
from areasync.protocol.frames import Hello, Role
from areasync.service.connection.handoff import TEXT_OPCODE
from areasync.service.connection.hello import Refusal
from tests.front.verdicts import ADMIN, SESSION, known_tokens


def _hello(role: str, token: str) -> bytes:
    return json.dumps({"type": "hello", "id": 0, "role": role, "token": token}).encode()


def test_the_hello_a_worker_is_sent_holds_no_token_not_even_the_admins() -> None:
    verdict = judge(TEXT_OPCODE, _hello("admin", ADMIN), SESSION, known_tokens(), True)
    assert isinstance(verdict, Verdict) and verdict.role is Role.ADMIN
    assert ADMIN.encode() not in verdict.hello
    frame = decode_client_frame(verdict.hello.decode())
    assert isinstance(frame, Hello) and frame.token == ""


def test_a_session_token_opens_its_role_and_is_removed_too() -> None:
    verdict = judge(TEXT_OPCODE, _hello("agent", "agent-token"), SESSION, known_tokens(), True)
    assert isinstance(verdict, Verdict) and verdict.role is Role.AGENT
    assert b"agent-token" not in verdict.hello


def test_a_msgpack_hello_stays_msgpack() -> None:
    payload = msgspec.msgpack.encode(
        {"type": "hello", "id": 0, "role": "user", "token": "user-token"}
    )
    verdict = judge(0x2, payload, SESSION, known_tokens(), True)
    assert isinstance(verdict, Verdict) and not verdict.text
    assert b"user-token" not in verdict.hello


def test_a_token_of_another_role_is_refused_unauthorized() -> None:
    refusal = judge(TEXT_OPCODE, _hello("user", "agent-token"), SESSION, known_tokens(), True)
    assert isinstance(refusal, Refusal) and refusal.code == 4001


def test_only_the_admin_learns_that_a_session_does_not_exist() -> None:
    admin = judge(TEXT_OPCODE, _hello("admin", ADMIN), "nope", known_tokens(), False)
    other = judge(TEXT_OPCODE, _hello("agent", "agent-token"), "nope", known_tokens(), False)
    assert isinstance(admin, Refusal) and admin.code == 4004
    assert isinstance(other, Refusal) and other.code == 4001


def test_a_first_frame_that_is_not_a_hello_is_refused_bad_hello() -> None:
    ping = json.dumps({"type": "ping", "id": 1}).encode()
    refusal = judge(TEXT_OPCODE, ping, SESSION, known_tokens(), True)
    assert isinstance(refusal, Refusal) and refusal.code == 4000


def test_a_text_hello_that_is_not_utf8_is_refused_bad_hello() -> None:
    refusal = judge(TEXT_OPCODE, b"\xff\xfe", SESSION, known_tokens(), True)
    assert isinstance(refusal, Refusal) and refusal.code == 4000
