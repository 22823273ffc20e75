"""`ServerDoor`: the tokens and the admission a hello goes through, for one connection."""

from __future__ import annotations

from areasync.protocol.frames import Role
from areasync.service.connection.door import ServerDoor
from areasync.service.gate.admission import Admission
from areasync.service.gate.auth import Tokens

ADMIN = "the-admin-token"


def door(admission: Admission | None = None, *, verified: bool = False) -> ServerDoor:
    tokens = Tokens(ADMIN)
    tokens.mint("s")
    return ServerDoor(tokens, "s", verified=verified, admission=admission, key=object())


def test_a_door_opens_a_role_to_its_token_only() -> None:
    assert door().allows(ADMIN, Role.AGENT) and not door().allows("nope", Role.AGENT)


def test_a_verified_door_opens_to_any_token() -> None:
    assert door(verified=True).allows("", Role.AGENT)


def test_a_door_admits_while_the_server_has_room_and_says_how_many_it_holds() -> None:
    admission = Admission(max_pending=4, max_connections=1)
    first, second = door(admission), door(admission)
    assert first.admit() and not second.admit()
    assert second.admitted() == 1


def test_a_door_gives_back_the_place_it_took_once_and_only_once() -> None:
    admission = Admission(max_pending=4, max_connections=1)
    taken, refused = door(admission), door(admission)
    taken.admit()
    refused.admit()
    refused.release()  # it took none: the other's stays counted
    assert admission.authenticated == 1
    taken.release()
    taken.release()
    assert admission.authenticated == 0
