"""`events.jsonl` lines and `daemon_status.json` with no socket: upstream's formats."""

from __future__ import annotations

from typing import Any

import pytest

from areasync.protocol.frames import EventItem
from areasync.protocol.records import EventRecord
from areasync.service.adapters.gaia2cli import artifacts


def item(event_type: str, function: str, **fields: Any) -> EventItem:
    record = EventRecord(
        event_id=fields.pop("event_id", f"{event_type}-App.{function}-1"),
        event_type=event_type,
        time=1728979205.0,
        app=fields.pop("app", "EmailClientV2"),
        function=function,
        args={"a": 1},
        return_value="r",
        **fields,
    )
    return EventItem(seq=1, event=record)


def writes_all(app: str, function: str) -> bool:
    return True


def test_an_agents_call_is_upstreams_cli_entry_without_an_id() -> None:
    line = artifacts.event_line(item("AGENT", "send_email"), writes_all)
    assert line == {
        "t": 1728979205.0,
        "app": "EmailClientV2",
        "fn": "send_email",
        "args": {"a": 1},
        "w": True,
        "ret": "r",
        "sim_t": "2024-10-15 08:00:05",
    }


@pytest.mark.parametrize(
    ("event_type", "event_id", "upstream"),
    [
        ("ENV", "Event-ENV-abc", "Event-ENV-abc"),
        ("USER", "Event-USER-abc", "Event-USER-abc"),
        ("ENV", "ENV-App.fn-abc", "Event-ENV-App.fn-abc"),
        ("USER", "USER-App.fn-abc", "Event-USER-App.fn-abc"),
    ],
)
def test_what_the_environment_and_the_user_did_carries_upstreams_id(
    event_type: str, event_id: str, upstream: str
) -> None:
    line = artifacts.event_line(item(event_type, "fn", event_id=event_id), writes_all)
    assert line is not None and line["event_id"] == upstream


def test_a_user_message_is_a_read() -> None:
    told = item("USER", "send_message_to_agent", app="AgentUserInterface")
    line = artifacts.event_line(told, writes_all)
    assert line is not None and line["w"] is False


@pytest.mark.parametrize(
    "stream_item",
    [
        item("AGENT", "send_email", exception="ValueError: no"),
        item("CONDITION", "check"),
        item("STOP", "stop"),
    ],
)
def test_what_is_no_completed_action_on_the_apps_has_no_line(stream_item: EventItem) -> None:
    assert artifacts.event_line(stream_item, writes_all) is None


@pytest.mark.parametrize(
    ("stream_item", "counted"),
    [
        (item("AGENT", "send_email"), True),
        (item("USER", "send_message_to_agent"), True),
        (item("ENV", "send_email_to_user_only"), False),
        (item("AGENT", "send_email", exception="ValueError: no"), False),
    ],
)
def test_num_events_counts_the_lines_upstreams_daemon_counts(
    stream_item: EventItem, counted: bool
) -> None:
    assert artifacts.is_agents_line(stream_item) is counted
