"""The server's `max_sessions` and `max_connections` split over its session workers
(`front/shares.py`), a new session placed where there is most room (`front/seats.py`), and
what else of the front's configuration a worker is given (`sessionworker/handlers.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from areasync.front.seats import Seats
from areasync.front.server import Front
from areasync.front.shares import check, for_worker, split
from areasync.service.config import ServiceConfig
from areasync.service.gate.auth import Tokens
from areasync.service.starting import ServiceError
from areasync.sessionworker.answers import Seat, worker_config


def test_a_limit_is_split_as_evenly_as_can_be_the_first_workers_one_more() -> None:
    assert split(64, 2) == [32, 32]
    assert split(5, 3) == [2, 2, 1]
    assert sum(split(1024, 7)) == 1024


def test_each_worker_is_configured_with_its_share_of_the_servers_limits() -> None:
    config = ServiceConfig(max_sessions=5, max_connections=7)
    shares = [for_worker(config, 2, index) for index in range(2)]
    assert [c.max_sessions for c in shares] == [3, 2]
    assert [c.max_connections for c in shares] == [4, 3]


def test_fewer_sessions_than_workers_cannot_be_split_and_says_what_to_raise() -> None:
    why = check(ServiceConfig(max_sessions=1), 2)
    assert why is not None and "--max-sessions 1 is below --workers 2" in why
    assert check(ServiceConfig(max_sessions=2, max_connections=2), 2) is None


def test_a_front_refuses_to_start_with_limits_it_cannot_split() -> None:
    with pytest.raises(ServiceError, match="--max-connections 1 is below --workers 2"):
        Front(ServiceConfig(max_connections=1), workers=2)


def test_a_new_session_goes_where_most_room_is_left_under_the_shares() -> None:
    seats = Seats(Tokens("admin"))
    seats.seat("worker-1", [Seat("a", True, None)])
    shares = {"worker-1": 2, "worker-2": 1}
    assert seats.least_loaded(["worker-1", "worker-2"], shares) == "worker-1"  # a tie: first
    seats.seat("worker-1", [Seat("b", True, None)])
    assert seats.least_loaded(["worker-1", "worker-2"], shares) == "worker-2"


def test_a_workers_config_has_no_admin_token_nor_any_port_of_the_fronts(tmp_path: Path) -> None:
    front = ServiceConfig(
        admin_token="front-only",
        port=8000,
        gaia2_port=8001,
        gaia2_ports=(9000, 9010),
        mcp_port=8002,
    )
    worker = worker_config(front, tmp_path)
    assert worker.admin_token is None and worker.state_dir == tmp_path
    assert (worker.port, worker.gaia2_port, worker.gaia2_ports, worker.mcp_port) == (
        0,
        None,
        None,
        None,
    )
