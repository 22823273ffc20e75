"""The client's hello/welcome exchange without a socket: what hello asks for, what answers mean.

Optional features come from `welcome.capabilities`, never from an error's text."""

from __future__ import annotations

from areasync.client.handshake import Handshake, Refusal
from areasync.protocol import Capability, ClockState, Error, Hello, Role, Welcome


def welcome(capabilities: list[str]) -> Welcome:
    return Welcome(
        session_id="s",
        role=Role.AGENT,
        epoch="e1",
        seq=0,
        scenario_id="scenario",
        clock=ClockState(state="running", time=0.0, tick=0, mode="manual", speed=1.0),
        capabilities=capabilities,
    )


def error(code: str, message: str = "refused") -> Error:
    return Error(id=0, code=code, message=message)


def welcomed(handshake: Handshake, capabilities: list[str]) -> Hello:
    hello = handshake.hello(None, None)
    handshake.welcomed(hello, welcome(capabilities))
    return hello


# -- what hello says --------------------------------------------------------------------------


def test_hello_carries_the_role_token_and_resume_point() -> None:
    hello = Handshake(Role.OBSERVER, "T", batch=True).hello(4, "e1")
    assert (hello.role, hello.token, hello.since, hello.epoch) == (Role.OBSERVER, "T", 4, "e1")


def test_the_first_hello_asks_for_batches_when_the_client_wants_them() -> None:
    assert Handshake(Role.AGENT, "T", batch=True).hello(None, None).batch is True
    assert Handshake(Role.AGENT, "T", batch=False).hello(None, None).batch is False


def test_batches_are_granted_when_asked_for_and_offered() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=True)
    welcomed(handshake, [Capability.BATCH])
    assert handshake.batching
    assert handshake.hello(None, None).batch is True


def test_a_welcome_without_batch_grants_none_and_the_next_hello_does_not_ask() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=True)
    welcomed(handshake, [])
    assert not handshake.batching
    assert handshake.hello(None, None).batch is False


def test_an_offer_is_not_taken_when_the_client_did_not_ask() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=False)
    welcomed(handshake, [Capability.BATCH])
    assert not handshake.batching


def test_capabilities_the_client_does_not_know_are_kept_and_ignored() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=True)
    welcomed(handshake, ["teleport", Capability.BATCH])
    assert handshake.offered == {"teleport", "batch"}
    assert handshake.batching


def test_after_a_connection_that_delivered_nothing_hello_asks_for_single_frames() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=True)
    welcomed(handshake, [Capability.BATCH])
    handshake.link_ended(delivered=False)
    assert handshake.hello(None, None).batch is False
    handshake.link_ended(delivered=True)
    assert handshake.hello(None, None).batch is True


# -- what a refusal means ---------------------------------------------------------------------


def test_a_batch_hello_refused_for_a_field_is_asked_again_plainly() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=True)
    hello = handshake.hello(None, None)
    assert handshake.refused(hello, error("invalid_field", "unknown field")) is Refusal.ASK_PLAINLY
    assert handshake.offered == frozenset()
    assert handshake.hello(None, None).batch is False


def test_a_plain_hello_refused_for_a_field_is_final() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=False)
    hello = handshake.hello(None, None)
    assert handshake.refused(hello, error("invalid_field", "`batch`")) is Refusal.FATAL


def test_the_text_of_an_error_is_never_read() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=True)
    hello = handshake.hello(None, None)
    refusal = handshake.refused(hello, error("unauthorized", "unknown field `batch`"))
    assert refusal is Refusal.FATAL
    assert handshake.hello(None, None).batch is True


def test_rate_limits_and_capacity_are_retried() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=True)
    hello = handshake.hello(None, None)
    assert handshake.refused(hello, error("rate_limited")) is Refusal.RETRY
    assert handshake.refused(hello, error("capacity")) is Refusal.RETRY


def test_replay_unavailable_is_reported_as_such() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=True)
    hello = handshake.hello(5, "e1")
    assert handshake.refused(hello, error("replay_unavailable")) is Refusal.REPLAY_UNAVAILABLE


def test_other_refusals_are_final() -> None:
    handshake = Handshake(Role.AGENT, "T", batch=True)
    hello = handshake.hello(None, None)
    assert handshake.refused(hello, error("unauthorized")) is Refusal.FATAL
    assert handshake.refused(hello, error("session_not_found")) is Refusal.FATAL
    assert handshake.refused(hello, error("a_code_from_the_future")) is Refusal.FATAL
