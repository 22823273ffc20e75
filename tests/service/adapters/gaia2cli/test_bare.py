"""A session's own port (`--gaia2-ports`): which port, when it is given back, who reaches it."""

from __future__ import annotations

import argparse
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

from areasync.cli.values import port_range
from areasync.protocol.frames import Mode
from areasync.service import Service, ServiceConfig
from areasync.service.adapters.gaia2cli.bare import BarePorts
from tests.service.adapters.gaia2cli.runner import get
from tests.service.support import TUTORIAL, config


@contextmanager
def held_port() -> Iterator[int]:
    """A loopback port this test holds (as another process would), listening."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def free_port() -> int:
    with held_port() as port:
        return port


def test_a_session_takes_the_lowest_port_no_session_holds() -> None:
    port = free_port()
    ports = BarePorts(port, port)
    bound = ports.take("a")
    try:
        assert not isinstance(bound, str) and bound.port == port
        assert bound.sock.getsockname() == ("127.0.0.1", port)
    finally:
        ports.close()


def test_a_used_up_range_says_so_and_which_option_widens_it() -> None:
    port = free_port()
    ports = BarePorts(port, port)
    try:
        assert not isinstance(ports.take("a"), str)
        why = ports.take("b")
    finally:
        ports.close()
    assert isinstance(why, str) and f"--gaia2-ports {port}-{port}" in why
    assert "widen the range" in why and "keep_ended" in why


def test_a_port_another_process_holds_is_skipped() -> None:
    with held_port() as port:
        ports = BarePorts(port, port)
        why = ports.take("a")
    assert isinstance(why, str) and "1 held by other processes" in why


def test_a_released_port_is_taken_again() -> None:
    port = free_port()
    ports = BarePorts(port, port)
    first = ports.take("a")
    assert not isinstance(first, str)
    assert ports.release("a") is first
    first.sock.close()
    second = ports.take("b")
    try:
        assert not isinstance(second, str) and second.port == port
    finally:
        ports.close()


@pytest.mark.parametrize("text", ["9100", "9100-", "x-9101", "9101-9100", "0-10", "1-65536"])
def test_gaia2_ports_that_are_no_range_are_refused_saying_what_is_one(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="FIRST-LAST"):
        port_range(text)


def test_a_config_with_a_backwards_range_is_refused() -> None:
    with pytest.raises(ValueError, match="gaia2_ports"):
        ServiceConfig(gaia2_ports=(9101, 9100))


async def test_the_port_listens_on_loopback_whatever_the_servers_host() -> None:
    port = free_port()
    fields = {"host": "0.0.0.0", "gaia2_ports": (port, port), "mode": Mode.MANUAL}
    async with Service(config(**fields), (TUTORIAL,)) as service:
        assert service.gaia2.bare is not None
        bound = service.gaia2.bare.of_session[TUTORIAL]
        assert bound.sock.getsockname() == ("127.0.0.1", port)


async def test_a_discarded_session_gives_its_port_back() -> None:
    port = free_port()
    fields = {"gaia2_ports": (port, port), "mode": Mode.MANUAL, "keep_ended": 0}
    async with Service(config(**fields), (TUTORIAL,)) as service:
        await service.registry.stop(TUTORIAL)
        assert service.gaia2.bare is not None
        assert service.gaia2.bare.held == {}
        with pytest.raises(ConnectionRefusedError):
            await anyio.to_thread.run_sync(get, f"http://127.0.0.1:{port}", "/health")


async def test_a_foreign_host_header_is_refused_421_on_the_port() -> None:
    port = free_port()
    async with Service(config(gaia2_ports=(port, port)), (TUTORIAL,)) as service:
        assert service.gaia2.bare is not None

        def request() -> tuple[int, bytes]:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: evil.example\r\n\r\n")
                head = sock.recv(65536)
            return int(head.split()[1]), head

        status, head = await anyio.to_thread.run_sync(request)
    assert status == 421, head


async def test_a_session_without_a_port_runs_and_says_why() -> None:
    with held_port() as port:
        async with Service(config(gaia2_ports=(port, port)), (TUTORIAL,)) as service:
            session = service.registry.sessions[TUTORIAL]
            banner = service.banner()
            state = session.sim.state
    error = session.links.gaia2_cli_error
    assert session.links.gaia2_cli_url is None
    assert error is not None and "held by other processes" in error
    assert "no port of its own" in banner and state != "failed"
    assert session.describe("ws://x").gaia2_cli_error == error
