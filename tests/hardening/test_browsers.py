"""Browsers cannot be turned against the service: Origin and Host checks on every request and
handshake, 405 for methods other than GET and HEAD, security headers on every response, and no
token in any log line. Real loopback sockets throughout (raw HTTP where a browser's request
must be reproduced byte for byte)."""

from __future__ import annotations

import json
import logging

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from areasync.protocol import CreateSession, Encoding, Role, Welcome
from areasync.service import Service, ServiceConfig
from areasync.service.http.headers import API_CSP
from tests.service.support import (
    ADMIN,
    TUTORIAL,
    attach,
    http_get,
    http_request,
    json_body,
    serving,
    tokens,
)

UPGRADE = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
}


async def _welcomed(service: Service, **connect_options: object) -> bool:
    """Open the tutorial's socket with `connect_options` and say hello as admin."""
    async with attach(service, Role.OBSERVER, **connect_options) as peer:
        return isinstance(peer.welcome, Welcome)


async def _refused_handshake(service: Service, **connect_options: object) -> InvalidStatus:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(service.ws_url(TUTORIAL), **connect_options):  # type: ignore[arg-type]
            pass
    return refused.value


# -- Origin ----------------------------------------------------------------------------------


async def test_a_websocket_from_another_origin_is_refused_with_403_naming_it() -> None:
    async with serving() as service:
        refused = await _refused_handshake(service, origin="http://evil.example")
    error = json_body(refused.response.body)["error"]
    assert refused.response.status_code == 403 and error["code"] == "origin_not_allowed"
    assert "'http://evil.example'" in error["message"]
    assert "--allow-origin http://evil.example" in error["message"]


async def test_a_client_that_sends_no_origin_is_accepted() -> None:
    async with serving() as service:
        assert await _welcomed(service)  # the Python client, the JS agent: no Origin header


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
async def test_the_servers_own_loopback_origins_are_accepted(host: str) -> None:
    async with serving() as service:
        assert await _welcomed(service, origin=f"http://{host}:{service.port}")


async def test_a_page_on_another_loopback_port_is_refused() -> None:
    # Another local web server (a dev server, a compromised tool) is another origin.
    async with serving() as service:
        refused = await _refused_handshake(service, origin=f"http://127.0.0.1:{service.port + 1}")
    assert refused.response.status_code == 403


async def test_an_opaque_origin_is_refused() -> None:
    async with serving() as service:
        refused = await _refused_handshake(service, origin="null")  # file://, sandboxed frames
    assert refused.response.status_code == 403
    assert "cannot be allowed" in json_body(refused.response.body)["error"]["message"]


async def test_an_origin_given_in_allow_origins_is_accepted() -> None:
    async with serving(allow_origins=("http://Dashboard.example:8080/",)) as service:
        assert await _welcomed(service, origin="http://dashboard.example:8080")


async def test_a_refused_handshake_attaches_nothing_and_opens_no_connection() -> None:
    async with serving() as service:
        await _refused_handshake(service, origin="http://evil.example")
        session = service.registry.get(TUTORIAL)
        assert session is not None and not session.connections
        assert service.metrics.connections_opened == 0 and not service.connections


async def test_a_cross_origin_http_request_is_refused_even_with_a_token() -> None:
    async with serving() as service:
        status, _, body = await http_get(
            service, "/api/sessions", {"Origin": "http://evil.example", "Authorization": ADMIN}
        )
    assert status == 403 and json_body(body)["error"]["code"] == "origin_not_allowed"


async def test_a_same_origin_page_seen_through_a_port_forward_is_accepted() -> None:
    # ssh -L 9000:127.0.0.1:PORT: the browser addresses 127.0.0.1:9000 and is its own origin.
    async with serving() as service:
        forwarded = {"Host": "127.0.0.1:9000", "Origin": "http://127.0.0.1:9000"}
        status, _, _ = await http_get(service, "/health", forwarded)
    assert status == 200


# -- Host (DNS rebinding) --------------------------------------------------------------------


async def test_a_rebinding_host_is_refused_with_421_naming_it() -> None:
    # evil.example resolves to 127.0.0.1: the page is "same origin" with itself, but its
    # requests say Host: evil.example.
    async with serving() as service:
        rebinding = {"Host": f"evil.example:{service.port}", "Origin": None}
        status, _, body = await http_get(service, f"/api/sessions?token={ADMIN}", rebinding)
    error = json_body(body)["error"]
    assert status == 421 and error["code"] == "host_not_allowed"
    assert "evil.example" in error["message"] and "--allow-host evil.example" in error["message"]


async def test_a_rebinding_host_cannot_open_a_websocket() -> None:
    async with serving() as service:
        rebinding = {**UPGRADE, "Host": f"evil.example:{service.port}"}
        status, _, _ = await http_get(service, f"/sessions/{TUTORIAL}", rebinding)
        assert status == 421 and service.metrics.connections_opened == 0


async def test_health_checks_the_host_too() -> None:
    async with serving() as service:
        status, _, _ = await http_get(service, "/health", {"Host": "evil.example"})
    assert status == 421


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "LOCALHOST"])
async def test_loopback_names_are_accepted_with_or_without_the_port(host: str) -> None:
    async with serving() as service:
        bare, _, _ = await http_get(service, "/health", {"Host": host})
        with_port, _, _ = await http_get(service, "/health", {"Host": f"{host}:{service.port}"})
    assert (bare, with_port) == (200, 200)


async def test_a_request_without_a_host_header_is_accepted() -> None:
    async with serving() as service:
        status, _, _ = await http_get(service, "/health", {"Host": None})  # HTTP/1.0 tools
    assert status == 200


async def test_a_name_given_in_allow_hosts_is_accepted_on_any_port() -> None:
    async with serving(allow_hosts=("box.lan",)) as service:
        status, _, _ = await http_get(service, "/health", {"Host": "box.lan:1234"})
    assert status == 200


async def test_a_host_given_with_a_port_is_accepted_only_on_that_port() -> None:
    async with serving(allow_hosts=("box.lan:8000",)) as service:
        right, _, _ = await http_get(service, "/health", {"Host": "box.lan:8000"})
        wrong, _, _ = await http_get(service, "/health", {"Host": "box.lan:8001"})
    assert (right, wrong) == (200, 421)


async def test_a_wildcard_bind_answers_to_ip_addresses_but_to_no_other_name() -> None:
    async with serving(host="0.0.0.0") as service:
        by_address, _, _ = await http_get(service, "/health", {"Host": "192.0.2.7:8765"})
        by_name, _, _ = await http_get(service, "/health", {"Host": "evil.example"})
    assert (by_address, by_name) == (200, 421)


def test_a_malformed_allow_origin_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match=r"allow_origins: 'evil\.example/path'"):
        ServiceConfig(allow_origins=("evil.example/path",))


def test_a_malformed_allow_host_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match=r"allow_hosts: 'a b'"):
        ServiceConfig(allow_hosts=("a b",))


# -- methods ---------------------------------------------------------------------------------

FORM = b"session=scenario_tutorial&action=stop"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "XYZZY"])
async def test_a_method_other_than_get_or_head_is_405_with_allow(method: str) -> None:
    async with serving() as service:
        status, headers, body = await http_request(service, method, f"/api/sessions?token={ADMIN}")
    assert status == 405 and headers["allow"] == "GET, HEAD"
    assert method in json_body(body)["error"]["message"]


@pytest.mark.parametrize("path", ["/api/sessions", f"/sessions/{TUTORIAL}", "/", "/nowhere"])
async def test_a_post_with_a_body_is_405_not_a_dropped_connection(path: str) -> None:
    # websockets' own parser closes without a word on a request with a body; a browser's form
    # or fetch POST always has one.
    async with serving() as service:
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        form["Content-Length"] = str(len(FORM))
        status, headers, _ = await http_request(service, "POST", path, form, FORM)
    assert status == 405 and headers["allow"] == "GET, HEAD"


async def test_a_chunked_post_is_405() -> None:
    async with serving() as service:
        chunked = {"Transfer-Encoding": "chunked"}
        status, _, _ = await http_request(service, "POST", "/", chunked, b"5\r\nhello\r\n0\r\n\r\n")
    assert status == 405


async def test_a_refused_method_changes_nothing() -> None:
    async with serving() as service:
        status, _, _ = await http_request(
            service, "DELETE", f"/sessions/{TUTORIAL}", {"Authorization": f"Bearer {ADMIN}"}
        )
        session = service.registry.get(TUTORIAL)
        assert status == 405 and session is not None and not session.ended
        assert await _welcomed(service)  # and the server goes on serving


@pytest.mark.parametrize("path", ["/health", f"/api/sessions?token={ADMIN}", "/", "/app.js"])
async def test_head_is_answered_like_get_without_a_body(path: str) -> None:
    async with serving() as service:
        got_status, got_headers, got_body = await http_request(service, "GET", path)
        status, headers, body = await http_request(service, "HEAD", path)
    assert status == got_status == 200 and body == b""
    assert headers["content-length"] == got_headers["content-length"] == str(len(got_body))
    assert headers["content-type"] == got_headers["content-type"]


async def test_head_on_a_websocket_endpoint_is_426() -> None:
    async with serving() as service:
        status, headers, body = await http_request(service, "HEAD", f"/sessions/{TUTORIAL}")
    assert status == 426 and body == b"" and headers["upgrade"] == "websocket"


# -- security headers ------------------------------------------------------------------------

SECURITY = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


async def test_the_dashboard_page_carries_a_strict_csp_and_the_security_headers() -> None:
    async with serving() as service:
        _, headers, _ = await http_get(service, "/")
    csp = headers["content-security-policy"]
    assert {k: headers[k] for k in SECURITY} == SECURITY
    assert "default-src 'self'" in csp and "script-src 'self';" in csp
    assert f"connect-src 'self' ws://127.0.0.1:{service.port}" in csp
    assert "frame-ancestors 'none'" in csp and "unsafe" not in csp
    assert csp.count("default-src") == 1  # one policy: browsers enforce every one they get


async def test_the_socket_worker_script_carries_the_pages_policy() -> None:
    # A worker runs under the policy its script came with: it must allow the WebSocket.
    async with serving() as service:
        _, page, _ = await http_get(service, "/")
        _, worker, _ = await http_get(service, "/socket-worker.js")
    assert worker["content-security-policy"] == page["content-security-policy"]


@pytest.mark.parametrize(
    "target", ["/health", f"/api/sessions?token={ADMIN}", f"/metrics?token={ADMIN}", "/api/schema"]
)
async def test_json_routes_and_refusals_carry_the_security_headers_and_allow_nothing(
    target: str,
) -> None:
    async with serving() as service:
        _, headers, _ = await http_get(service, target)
    assert {k: headers[k] for k in SECURITY} == SECURITY
    assert headers["content-security-policy"] == API_CSP


async def test_websockets_own_refusals_carry_the_security_headers() -> None:
    async with serving() as service:
        status, headers, _ = await http_get(service, f"/sessions/{TUTORIAL}")  # no Upgrade
    assert status == 426 and {k: headers[k] for k in SECURITY} == SECURITY


# -- logs ------------------------------------------------------------------------------------


async def _send_unanswered(service: Service, request: bytes) -> None:
    """Send bytes the server cannot parse as a request (it closes without answering)."""
    async with await anyio.connect_tcp("127.0.0.1", service.port or 0) as stream:
        await stream.send(request)
        with anyio.fail_after(10):
            try:
                while await stream.receive():
                    pass
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass


async def test_no_token_appears_in_any_log_record_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serving() as service:
        secrets = {ADMIN, *tokens(service).values()}
        query = f"?token={ADMIN}"
        async with (
            connect(service.ws_url(TUTORIAL) + query) as ws,
            attach(
                service, Role.ADMIN, additional_headers={"Authorization": f"Bearer {ADMIN}"}
            ) as admin,
        ):
            hello = {"type": "hello", "id": 1, "role": "observer", "token": ADMIN}
            await ws.send(json.dumps(hello))
            await ws.recv()
            created = await admin.call(CreateSession, scenario=TUTORIAL)  # sends fresh tokens
            secrets |= set(created["tokens"].values())
            await http_get(service, f"/api/sessions{query}")
            await http_get(service, "/metrics", {"Authorization": f"Bearer {ADMIN}"})
            await http_get(service, f"/{query}&x=1", {"Cookie": f"t={ADMIN}"})
            await _send_unanswered(service, f"GET /{query} HTTP/1.1 extra\r\n\r\n".encode())
            await http_request(service, "POST", f"/{query}", {"Content-Length": "1"}, b"x")
            async with attach(service, Role.OBSERVER, encoding=Encoding.MSGPACK):  # binary hello
                pass
    served = [r for r in caplog.records if not r.name.startswith("websockets.client")]  # ours
    handler = logging.StreamHandler()  # the full text of each record, exceptions included
    logged = "\n".join(handler.format(record) for record in served)
    assert any(record.name == "websockets.server" for record in served)
    assert [secret for secret in secrets if secret in logged] == []
    assert "[redacted]" in logged  # the request lines and headers were there, without tokens
