"""The adapter's decisions with no socket: routes, roles, bodies, messages, status."""

from __future__ import annotations

import dataclasses
import json

import pytest

from areasync.protocol.frames import EventItem, NotificationItem, Role
from areasync.protocol.records import EventRecord, NotificationRecord, Validation
from areasync.service.adapters.gaia2cli import translate as t


def _to_user(content: str, *, exception: str | None = None) -> EventItem:
    event = EventRecord(
        event_id="e",
        event_type="AGENT",
        time=6.0,
        app="AgentUserInterface",
        function="send_message_to_user",
        args={"content": content},
        exception=exception,
    )
    return EventItem(seq=8, event=event)


VIEW = t.SessionView(
    session_id="s",
    state="running",
    ended=False,
    validation=None,
    end_reason=None,
    nb_turns=2,
    turn=1,
    num_events=4,
    last_response="hi",
    connected=True,
    messages=1,
    sse_clients=0,
)


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/notify", t.Route.NOTIFY),
        ("/send_user_message", t.Route.NOTIFY),
        ("/send_notifications", t.Route.NOTIFY),
        ("/call_tool/", t.Route.CALL_TOOL),
        ("/execute_action/", t.Route.EXECUTE),
    ],
)
def test_posts_route_to_the_acts_gaia2_cli_names(path: str, route: t.Route) -> None:
    assert t.route_of("POST", path) is route


def test_head_is_answered_as_get() -> None:
    assert t.route_of("HEAD", "/status") is t.Route.STATUS


@pytest.mark.parametrize(
    ("role", "route", "allowed"),
    [
        (Role.USER, t.Route.NOTIFY, True),
        (Role.ADMIN, t.Route.NOTIFY, True),
        (Role.AGENT, t.Route.NOTIFY, False),
        (Role.AGENT, t.Route.CALL_TOOL, True),
        (Role.USER, t.Route.CALL_TOOL, False),
        (Role.OBSERVER, t.Route.EVENTS, True),
        (Role.CONTROLLER, t.Route.STATUS, True),
    ],
)
def test_a_route_is_open_to_the_roles_of_its_websocket_frame(
    role: Role, route: t.Route, allowed: bool
) -> None:
    assert (t.permission(role, route) is None) is allowed


def test_notify_strips_its_message() -> None:
    assert t.parse_notify(b'{"message": "  hello \\n"}') == t.Notify("hello")


def test_an_action_is_its_apps_tool() -> None:
    body = json.dumps({"app": "EmailClientApp", "action": "send_email"})
    assert t.parse_action(body.encode()) == t.Action("EmailClientApp__send_email", {})


def test_an_idle_without_seen_ends_the_turn_whatever_came_as_upstreams_runner_expects() -> None:
    assert t.act_of(t.Route.IDLE, b"", [4]) == t.Done()
    assert t.act_of(t.Route.IDLE, b"{}", [4]) == t.Done()
    assert t.frame_of(t.Done()).seen is None


def test_an_idles_seen_names_the_stream_seq_of_the_last_notification_read() -> None:
    notified = [4, 9]  # notifications 1 and 2 are stream items 4 and 9
    assert t.act_of(t.Route.IDLE, b'{"seen": 1}', notified) == t.Done(4)
    assert t.act_of(t.Route.IDLE, b'{"seen": 0}', notified) == t.Done(0)
    assert t.frame_of(t.Done(9)).seen == 9


def test_an_idles_seen_past_the_notifications_shown_is_refused() -> None:
    refused = t.act_of(t.Route.IDLE, b'{"seen": 3}', [4, 9])
    assert isinstance(refused, t.Reply) and refused.status == 400
    assert "lastSeq of GET /notifications" in refused.body["error"]


def test_only_the_agents_messages_to_the_user_become_messages() -> None:
    note = NotificationItem(
        seq=3,
        notification=NotificationRecord(message_type="USER_MESSAGE", message="m", timestamp=0),
    )
    assert t.message_of(3, note) is None
    assert t.message_of(8, _to_user("x", exception="ValueError: no")) is None
    message = t.message_of(8, _to_user("Done."))
    assert message is not None and t.text_of(message) == "Done."
    assert message["streamSeq"] == 8 and message["timestamp"].startswith("1970-01-01T00:00:06")


def test_messages_after_n_are_those_numbered_above_n() -> None:
    messages = [{"seq": n} for n in (1, 2, 3)]
    assert t.messages_reply(messages, 1).body == {
        "ok": True,
        "messages": [{"seq": 2}, {"seq": 3}],
        "lastSeq": 3,
    }


def test_sse_frames_are_gaia2_clis_chat_events() -> None:
    assert t.sse_frame({"seq": 1}) == b'event: chat\ndata: {"seq": 1}\n\n'


def test_a_live_session_is_running_with_its_turns() -> None:
    status = t.status_of(VIEW)
    assert status["status"] == "running" and "judgment" not in status
    assert (status["turn"], status["nb_turns"], status["num_events"]) == (1, 2, 4)
    assert status["last_response"] == "hi"


@pytest.mark.parametrize(
    ("state", "success", "reason", "status"),
    [
        ("stopped", True, None, "complete"),
        ("stopped", False, None, "stopped"),
        ("stopped", None, "stopped by a controller", "stopped"),
        ("failed", None, "the scenario raised", "error"),
    ],
)
def test_an_ended_session_is_complete_stopped_or_error(
    state: str, success: bool | None, reason: str | None, status: str
) -> None:
    view = dataclasses.replace(
        VIEW, ended=True, state=state, validation=Validation(success=success), end_reason=reason
    )
    assert t.status_of(view)["status"] == status


def test_a_judged_end_carries_the_judgment_and_its_rationale() -> None:
    view = dataclasses.replace(
        VIEW, ended=True, state="stopped", validation=Validation(success=False, rationale="wrong")
    )
    assert t.status_of(view)["judgment"] == {"success": False, "failure_reason": "wrong"}
