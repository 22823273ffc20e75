"""The admin's session answers have one definition, shared by the server and the client."""

from __future__ import annotations

import msgspec

import areasync.client
from areasync.protocol import sessions
from areasync.protocol.sessions import CreatedSession, SessionLinks


def test_the_client_decodes_session_answers_with_the_protocols_structs() -> None:
    assert areasync.client.CreatedSession is sessions.CreatedSession
    assert areasync.client.StoppedSession is sessions.StoppedSession


def test_a_created_session_without_links_leaves_them_off_the_wire() -> None:
    created = CreatedSession(
        session_id="s",
        scenario_id="s",
        import_mode=None,
        judge=None,
        url="ws://h/sessions/s",
        epoch="e",
        mode="fast",
        tokens={},
        **SessionLinks().fields(),
    )
    assert msgspec.json.encode(created) == (
        b'{"session_id":"s","scenario_id":"s","import_mode":null,"judge":null,'
        b'"url":"ws://h/sessions/s","epoch":"e","mode":"fast","tokens":{}}'
    )


def test_a_created_session_decoded_without_links_reads_none() -> None:
    data = b'{"session_id":"s","scenario_id":"s","import_mode":null,"judge":null,'
    data += b'"url":"u","epoch":"e","mode":"fast","tokens":{}}'
    created = msgspec.json.decode(data, type=CreatedSession)
    assert created.gaia2_cli_url is None and created.mcp_url is None
