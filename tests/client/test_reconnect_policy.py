"""When the client reconnects, and how long it waits, without a socket."""

from __future__ import annotations

import pytest

from areasync.client.errors import (
    CapacityError,
    ConnectionClosedError,
    SessionNotFoundError,
    UnauthorizedError,
)
from areasync.client.reconnect import after_close, backoff, closed_before_welcome, status_error
from areasync.protocol import CloseCode


def test_a_complete_stream_closes_the_client_quietly() -> None:
    assert after_close(CloseCode.CAPACITY, "full", ended=True, reconnect=True) == (False, None)


def test_a_close_code_a_retry_would_repeat_closes_the_client_with_why() -> None:
    again, error = after_close(CloseCode.UNAUTHORIZED, "bad token", ended=False, reconnect=True)
    assert not again
    assert isinstance(error, ConnectionClosedError)
    assert "UNAUTHORIZED: bad token" in error.message


def test_without_reconnect_any_close_closes_the_client() -> None:
    again, error = after_close(1006, "", ended=False, reconnect=False)
    assert not again
    assert error is not None and "reconnect=False" in error.message


@pytest.mark.parametrize("code", [None, 1001, 1006, CloseCode.CAPACITY])
def test_other_closes_are_reconnected(code: int | None) -> None:
    assert after_close(code, "", ended=False, reconnect=True) == (True, None)


def test_backoff_doubles_up_to_the_longest_with_jitter_below_it() -> None:
    for failures, full in [(1, 0.1), (2, 0.2), (3, 0.4), (10, 1.0)]:
        delay = backoff(failures, initial=0.1, longest=1.0)
        assert full * 0.5 <= delay <= full


def test_a_close_before_the_welcome_is_a_retryable_lost_connection() -> None:
    error = closed_before_welcome(1006, "")
    assert error.code == "connection_lost" and error.retryable


@pytest.mark.parametrize(
    ("status", "kind"),
    [(404, SessionNotFoundError), (401, UnauthorizedError), (403, UnauthorizedError)],
)
def test_refused_handshakes_map_to_their_error(status: int, kind: type[Exception]) -> None:
    assert isinstance(status_error(status, "ws://h/sessions/x"), kind)


def test_a_busy_server_is_a_capacity_error() -> None:
    assert isinstance(status_error(503, "ws://h/sessions/x"), CapacityError)


def test_the_servers_own_message_is_quoted() -> None:
    body = b'{"error": {"message": "token expired"}}'
    assert "token expired" in status_error(401, "ws://h/sessions/x", body).message


def test_other_statuses_are_retryable_only_if_transient() -> None:
    assert status_error(502, "ws://h/sessions/x").retryable
    assert not status_error(400, "ws://h/sessions/x").retryable
