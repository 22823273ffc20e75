"""Access: frame types x roles x credentials; constant-time tokens; loopback; dashboard tokens.

`tests/service/gate/test_roles.py` covers the right-token column of the matrix (each role's own
token: every frame is allowed or `forbidden` as the table says). This module completes it:

- wrong token, another session's token: the hello is refused (`unauthorized`, close 4001) and a
  frame pipelined right behind it is never carried out, whatever the role and the frame;
- no hello: every frame type sent first is refused (`bad_state`, close 4000), carried out never;
- every token comparison goes through `hmac.compare_digest`, with as many comparisons whether
  the candidate is right, wrong, nearly right or for a session that does not exist;
- a session that does not exist is answered exactly as a bad token is (same error, message and
  close, after the same comparisons), over WebSocket and HTTP: session ids cannot be enumerated;
- the default bind is loopback;
- a dashboard URL's token opens only what its role allows.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from areasync.cli.parser import build_parser
from areasync.protocol import (
    CloseCode,
    Encoding,
    Error,
    ErrorCode,
    Hello,
    Role,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)
from areasync.service import Service, ServiceConfig
from areasync.service.gate.auth import SESSION_ROLES, Tokens, new_token
from tests.service.gate.test_roles import SAMPLES
from tests.service.support import (
    ADMIN,
    TUTORIAL,
    WAIT,
    attach,
    http_get,
    json_body,
    serving,
    tokens,
)

OTHER = "scenario_validation_tutorial"
ALL_ROLES = list(Role)


def snapshot(service: Service) -> Any:
    """Everything a frame could change: sessions, stream, inputs, clock, clients."""
    session = service.registry.get(TUTORIAL)
    assert session is not None
    sim = session.sim
    return (
        sorted(service.registry.sessions),
        sim.log.seq,
        len(sim.inputs),
        sim.clock_state(),
        len(session.connections),
        sim.ended,
    )


async def pipelined(service: Service, frames: list[Any]) -> tuple[list[Any], int | None]:
    """Send `frames` back to back on a new connection, without waiting; what came back."""
    received: list[Any] = []
    async with connect(service.ws_url(TUTORIAL)) as ws:
        for frame in frames:
            try:
                await ws.send(encode_client_frame(frame, Encoding.JSON))
            except ConnectionClosed:
                break
        with anyio.fail_after(WAIT):
            try:
                while True:
                    received.append(decode_server_frame(await ws.recv()))
            except ConnectionClosed as exc:
                return received, None if exc.rcvd is None else exc.rcvd.code


async def first_reply(service: Service, hello: Hello, session: str = TUTORIAL) -> Any:
    """The server's answer to `hello` on a new connection."""
    async with connect(service.ws_url(session)) as ws:
        await ws.send(encode_client_frame(hello, Encoding.JSON))
        with anyio.fail_after(WAIT):
            return decode_server_frame(await ws.recv())


def bad_tokens(service: Service) -> dict[str, str]:
    """Credentials that must open nothing in session TUTORIAL."""
    own = tokens(service)[Role.CONTROLLER]
    return {
        "wrong token": "not-" + own,
        "nearly right": own[:-1] + ("A" if own[-1] != "A" else "B"),
        "other session's token": tokens(service, OTHER)[Role.CONTROLLER],
        "empty token": "",
    }


@pytest.mark.parametrize("role", ALL_ROLES)
async def test_a_bad_token_opens_no_frame_of_any_role(role: Role) -> None:
    async with serving(TUTORIAL, OTHER) as service:
        before = snapshot(service)
        for credential, token in bad_tokens(service).items():
            # The other session's token of the same role, for the session roles.
            if credential == "other session's token" and role in SESSION_ROLES:
                token = tokens(service, OTHER)[role]
            for kind, fields in SAMPLES:
                hello = Hello(id=1, role=role, token=token)
                received, code = await pipelined(service, [hello, kind(id=2, **fields)])
                case = (credential, role.value, kind.__struct_config__.tag)
                assert code == CloseCode.UNAUTHORIZED, case
                assert len(received) == 1 and isinstance(received[0], Error), (case, received)
                assert (received[0].code, received[0].id) == (ErrorCode.UNAUTHORIZED, 1), case
                assert snapshot(service) == before, case


@pytest.mark.parametrize(("kind", "fields"), SAMPLES, ids=lambda v: getattr(v, "__name__", ""))
async def test_no_frame_is_carried_out_before_hello(
    kind: type[Any], fields: dict[str, Any]
) -> None:
    async with serving() as service:
        before = snapshot(service)
        received, code = await pipelined(
            service, [kind(id=7, **fields), Hello(id=8, role=Role.ADMIN, token=ADMIN)]
        )
        assert snapshot(service) == before
    assert code == CloseCode.BAD_HELLO
    assert len(received) == 1 and isinstance(received[0], Error)
    assert (received[0].code, received[0].id) == (ErrorCode.BAD_STATE, 7)


async def test_session_tokens_never_open_another_role() -> None:
    async with serving() as service:
        own = tokens(service)
        for holder, token in own.items():
            for role in ALL_ROLES:
                reply = await first_reply(service, Hello(id=1, role=role, token=token))
                assert isinstance(reply, Welcome) == (role is holder), (holder, role, reply)


# -- constant-time comparison --------------------------------------------------------------


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[bytes, bytes]]]:
    """Every call to hmac.compare_digest (the real one still answers)."""
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((bytes(a), bytes(b)))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    yield calls


def test_token_checks_compare_through_hmac_compare_digest(
    compared: list[tuple[bytes, bytes]],
) -> None:
    table = Tokens("admin-token")
    minted = table.mint("s1")
    assert table.allows(minted[Role.OBSERVER], "s1", Role.OBSERVER)
    assert (minted[Role.OBSERVER].encode(), minted[Role.OBSERVER].encode()) in compared


def test_a_check_costs_the_same_comparisons_whatever_the_candidate(
    compared: list[tuple[bytes, bytes]],
) -> None:
    table = Tokens("admin-token")
    minted = table.mint("s1")
    table.mint("s2")
    right = minted[Role.AGENT]
    candidates = [right, "x" + right[1:], right[:-1] + "x", "", "admin-token", "\udc80"]
    counts = set()
    for candidate in candidates:
        for session_id in ("s1", "no-such-session"):
            compared.clear()
            table.allows(candidate, session_id, Role.AGENT)
            counts.add(len(compared))
    assert counts == {2}  # the admin token and the role's token (or a stand-in), always both


def test_identifying_a_token_compares_it_with_every_token(
    compared: list[tuple[bytes, bytes]],
) -> None:
    table = Tokens("admin-token")
    first = table.mint("s1")
    table.mint("s2")
    every = 1 + 2 * len(SESSION_ROLES)
    for candidate in ("admin-token", first[Role.AGENT], "wrong"):
        compared.clear()
        table.identify(candidate)
        assert len(compared) == every


async def test_a_hello_is_checked_with_compare_digest(compared: list[tuple[bytes, bytes]]) -> None:
    async with serving() as service:
        observer = tokens(service)[Role.OBSERVER]
        async with attach(service, Role.OBSERVER, token=observer):
            pass
    assert (observer.encode(), observer.encode()) in compared


async def test_an_http_token_is_checked_with_compare_digest(
    compared: list[tuple[bytes, bytes]],
) -> None:
    async with serving() as service:
        status, _, _ = await http_get(service, f"/api/sessions?token={ADMIN}")
    assert status == 200 and (ADMIN.encode(), ADMIN.encode()) in compared


# -- session ids cannot be enumerated -------------------------------------------------------


async def refusal(service: Service, hello: Hello, session: str) -> tuple[Any, Any, str]:
    """The error frame, close code and close reason a hello gets on a new connection."""
    async with connect(service.ws_url(session)) as ws:
        await ws.send(encode_client_frame(hello, Encoding.JSON))
        with anyio.fail_after(WAIT):
            error = decode_server_frame(await ws.recv())
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
    rcvd = closed.value.rcvd
    assert rcvd is not None
    return error, rcvd.code, rcvd.reason


@pytest.mark.parametrize("role", [Role.OBSERVER, Role.CONTROLLER, Role.ADMIN])
async def test_a_missing_session_is_answered_exactly_as_a_bad_token(role: Role) -> None:
    async with serving() as service:
        token = tokens(service)[Role.OBSERVER] + "x"
        hello = Hello(id=5, role=role, token=token)
        bad_token = await refusal(service, hello, TUTORIAL)
        no_session = await refusal(service, hello, "no_such_session")
    assert no_session == bad_token  # same frame (code, message, id), same close code and reason
    assert isinstance(bad_token[0], Error) and bad_token[0].code == ErrorCode.UNAUTHORIZED
    assert bad_token[1] == CloseCode.UNAUTHORIZED


async def test_a_session_token_cannot_tell_a_missing_session_from_another_one() -> None:
    async with serving(TUTORIAL, OTHER) as service:
        mine = tokens(service)[Role.OBSERVER]
        hello = Hello(id=1, role=Role.OBSERVER, token=mine)
        existing = await refusal(service, hello, OTHER)
        missing = await refusal(service, hello, "no_such_session")
    assert existing == missing


async def test_a_missing_session_costs_the_same_comparisons_as_a_bad_token(
    compared: list[tuple[bytes, bytes]],
) -> None:
    async with serving() as service:
        hello = Hello(id=1, role=Role.OBSERVER, token="wrong")
        compared.clear()
        await refusal(service, hello, TUTORIAL)
        for_bad_token = len(compared)
        compared.clear()
        await refusal(service, hello, "no_such_session")
    assert len(compared) == for_bad_token == 2


async def test_the_admin_token_alone_learns_that_a_session_does_not_exist() -> None:
    # An admin may list every session anyway; telling it `session_not_found` reveals nothing.
    async with serving() as service:
        error, code, _ = await refusal(service, Hello(id=1, role=Role.OBSERVER, token=ADMIN), "x")
    assert isinstance(error, Error) and error.code == ErrorCode.SESSION_NOT_FOUND
    assert code == CloseCode.SESSION_NOT_FOUND


@pytest.mark.parametrize("target", ["/sessions/{id}", "/api/sessions?session={id}&token=bad"])
async def test_http_answers_do_not_depend_on_which_session_is_named(target: str) -> None:
    async with serving() as service:
        existing = await http_get(service, target.format(id=TUTORIAL))
        missing = await http_get(service, target.format(id="no_such_session"))
    (status, headers, body), (status2, headers2, body2) = existing, missing
    headers.pop("date"), headers2.pop("date")
    assert (status, headers, body) == (status2, headers2, body2)


# -- where the server listens --------------------------------------------------------------


def test_the_default_bind_is_loopback() -> None:
    assert ServiceConfig().host == "127.0.0.1"
    assert build_parser().parse_args(["serve"]).host == "127.0.0.1"


async def test_a_default_server_listens_on_loopback_only() -> None:
    async with Service(ServiceConfig(port=0, trace_dir=None), [TUTORIAL]) as service:
        server_sockets = service.registry.ws_base
        async with attach(service, Role.OBSERVER, token=service.tokens.admin) as peer:
            host = peer.ws.remote_address[0]
    assert host == "127.0.0.1" and server_sockets.startswith("ws://127.0.0.1:")


# -- dashboard URLs --------------------------------------------------------------------------


@pytest.mark.parametrize("holder", SESSION_ROLES)
async def test_a_dashboard_url_token_opens_only_its_role_in_its_session(holder: Role) -> None:
    async with serving(TUTORIAL, OTHER) as service:
        token = tokens(service)[holder]
        url = service.dashboard_url(token)
        page = url.removeprefix(service.http_url).partition("#")[0]  # a browser keeps the fragment
        status, _, _ = await http_get(service, page)
        _, _, body = await http_get(service, "/api/sessions", {"Authorization": f"Bearer {token}"})
        listing = json_body(body)
        welcomed = []
        for session in (TUTORIAL, OTHER):
            for role in ALL_ROLES:
                reply = await first_reply(service, Hello(id=1, role=role, token=token), session)
                if isinstance(reply, Welcome):
                    welcomed.append((session, role))
    assert status == 200
    assert [s["id"] for s in listing["sessions"]] == [TUTORIAL]
    assert listing["access"] == {"role": holder.value, "session_id": TUTORIAL}
    assert welcomed == [(TUTORIAL, holder)]


def test_minted_tokens_never_look_like_command_line_options() -> None:
    # `areasync agent oracle --token -x...` would be taken for an option (one token in 64).
    assert not any(new_token().startswith("-") for _ in range(5000))
