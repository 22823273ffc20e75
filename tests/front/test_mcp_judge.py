"""The front's verdict on an MCP connection's first request head (`front/mcp.py`), with no
socket: which session's worker gets it, and what the worker is sent (never the token)."""

from __future__ import annotations

import hmac

from areasync.front.mcp import McpVerdict, judge
from areasync.protocol.frames import Role
from areasync.service.connection.handoff import encode, salted
from areasync.service.gate.screens import Refusal
from tests.front.verdicts import ADMIN, SESSION, known_tokens


def _head(path: str, token: str | None) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1:9"]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    return "\r\n".join(lines).encode()


def test_the_admin_token_names_its_session_in_the_path_and_is_in_no_byte_the_worker_gets() -> None:
    verdict = judge(_head(f"/mcp/{SESSION}", ADMIN), known_tokens())
    assert isinstance(verdict, McpVerdict)
    assert (verdict.session_id, verdict.credential.role) == (SESSION, Role.ADMIN)
    sent = verdict.handoff()
    assert (sent.session_id, sent.role, sent.mcp) == (SESSION, Role.ADMIN, verdict.credential)
    assert ADMIN.encode() not in encode(sent)
    proof = salted(verdict.credential.salt, ADMIN)
    assert hmac.compare_digest(proof, verdict.credential.proof)  # the worker's check


def test_an_agent_token_names_its_own_session_at_the_bare_path() -> None:
    verdict = judge(_head("/mcp", "agent-token"), known_tokens())
    assert isinstance(verdict, McpVerdict)
    assert (verdict.session_id, verdict.credential.role) == (SESSION, Role.AGENT)


def test_a_token_that_opens_nothing_is_refused_401_saying_what_to_send() -> None:
    refused = judge(_head(f"/mcp/{SESSION}", "wrong"), known_tokens())
    assert isinstance(refused, Refusal) and refused.status == 401
    assert "Authorization: Bearer" in refused.message


def test_a_user_token_is_refused_403_saying_to_use_the_agents() -> None:
    refused = judge(_head("/mcp", "user-token"), known_tokens())
    assert isinstance(refused, Refusal) and refused.status == 403
    assert "agent's token" in refused.message


def test_the_admin_token_without_a_session_is_refused_404_saying_the_url() -> None:
    refused = judge(_head("/mcp", ADMIN), known_tokens())
    assert isinstance(refused, Refusal) and refused.status == 404
    assert "/mcp/<session id>" in refused.message


def test_a_malformed_request_line_is_refused_400() -> None:
    refused = judge(b"GARBAGE", known_tokens())
    assert isinstance(refused, Refusal) and refused.status == 400
