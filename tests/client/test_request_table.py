"""The client's request table without a socket: requests out, replies in, outcomes settled."""

from __future__ import annotations

import pytest

from areasync.client.errors import (
    ConnectionClosedError,
    ConnectionLostError,
    UnknownToolError,
)
from areasync.client.requests import RequestTable
from areasync.protocol import CallTool, Error, GetState, Pong, Result


def test_ids_count_up_from_1() -> None:
    table = RequestTable()
    first = table.add(lambda id: CallTool(id=id, tool="A__a"))
    second = table.add(lambda id: GetState(id=id), resend=True)
    assert (first.id, second.id) == (1, 2)
    assert first.frame.id == 1


def test_a_result_settles_its_request_with_the_value() -> None:
    table = RequestTable()
    request = table.add(lambda id: CallTool(id=id, tool="A__a"))
    assert table.receive(Result(id=request.id, value={"ok": 1})) is request
    assert request.done
    assert request.outcome() == {"ok": 1}


def test_an_error_settles_its_request_with_the_exception_of_its_code() -> None:
    table = RequestTable()
    request = table.add(lambda id: CallTool(id=id, tool="A__a"))
    table.receive(Error(id=request.id, code="unknown_tool", message="no such tool"))
    with pytest.raises(UnknownToolError, match="no such tool"):
        request.outcome()


def test_a_pong_settles_its_ping() -> None:
    table = RequestTable()
    request = table.add(lambda id: GetState(id=id), resend=True)
    assert table.receive(Pong(id=request.id)) is request
    assert request.outcome() is None


def test_a_reply_to_no_waiting_request_settles_nothing() -> None:
    table = RequestTable()
    assert table.receive(Result(id=99, value=1)) is None
    assert table.receive(Error(code="internal", message="connection-level")) is None


def test_a_second_reply_changes_nothing() -> None:
    table = RequestTable()
    request = table.add(lambda id: CallTool(id=id, tool="A__a"))
    table.receive(Result(id=request.id, value="first"))
    assert table.receive(Result(id=request.id, value="second")) is None
    assert request.outcome() == "first"


def test_a_removed_request_ignores_its_late_reply() -> None:
    table = RequestTable()
    request = table.add(lambda id: CallTool(id=id, tool="A__a"))
    table.remove(request)
    assert table.receive(Result(id=request.id, value=1)) is None
    assert not request.done and len(table) == 0


def test_a_lost_link_fails_what_was_sent_on_it_and_may_have_been_applied() -> None:
    table = RequestTable()
    request = table.add(lambda id: CallTool(id=id, tool="A__a"))
    table.sent(request, link=1)
    assert table.link_lost(1) == [request]
    with pytest.raises(ConnectionLostError, match="`call_tool` \\(id 1\\)") as raised:
        request.outcome()
    assert raised.value.retryable and raised.value.request_id == 1


def test_a_lost_link_marks_read_only_requests_to_be_sent_again() -> None:
    table = RequestTable()
    request = table.add(lambda id: GetState(id=id), resend=True)
    table.sent(request, link=1)
    assert table.link_lost(1) == [request]
    assert not request.done and request.link is None


def test_a_lost_link_leaves_requests_sent_on_another_alone() -> None:
    table = RequestTable()
    request = table.add(lambda id: CallTool(id=id, tool="A__a"))
    table.sent(request, link=2)
    assert table.link_lost(1) == []
    assert not request.done


def test_a_lost_link_leaves_requests_with_a_reply_alone() -> None:
    table = RequestTable()
    request = table.add(lambda id: CallTool(id=id, tool="A__a"))
    table.sent(request, link=1)
    table.receive(Result(id=request.id, value="done"))
    assert table.link_lost(1) == []
    assert request.outcome() == "done"


def test_failing_all_gives_each_request_its_own_error() -> None:
    table = RequestTable()
    first = table.add(lambda id: CallTool(id=id, tool="A__a"))
    second = table.add(lambda id: GetState(id=id), resend=True)
    assert table.fail_all(lambda: ConnectionClosedError("closed")) == [first, second]
    assert first.error is not None and second.error is not None
    assert first.error is not second.error
    assert isinstance(first.error, ConnectionClosedError)
