"""Reconnect storm: observers dropping at random moments of a 20,000-event run, resuming with
`since`, each end up with the whole stream, contiguous, exactly once (see `storm.py`).

`make test` runs one storm (8 raw observers + 2 areasync Clients, 5 cuts each); the `soak`
version runs bigger storms for STORM_SECONDS (default 120) with fresh seeds.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.hardening.faults import watch_faults
from tests.hardening.storm import StormReport, replays_were_full, run_storm

SEED = int(os.environ.get("STORM_SEED", "20240607"))


def assert_lossless(report: StormReport) -> None:
    everything = list(range(1, report.final_seq + 1))
    for log in report.observers:
        assert log.seqs == everything, (log.name, _first_gap(log.seqs))
        assert replays_were_full(log), (log.name, log.replays)
    for history in report.clients:
        assert history == everything, _first_gap(history)


def _first_gap(seqs: list[int]) -> str:
    for index, seq in enumerate(seqs, start=1):
        if seq != index:
            return f"at position {index}: got seq {seq}"
    return f"ends at {len(seqs)}"


async def test_every_observer_receives_the_whole_stream_through_a_reconnect_storm() -> None:
    with watch_faults() as faults:
        report = await run_storm(events=20_000, clients=8, cuts_per_client=5, seed=SEED)
    assert report.final_seq > 20_000
    assert_lossless(report)
    assert sum(log.cuts for log in report.observers) == 8 * 5
    assert faults.problems == []


async def test_evicted_slow_observers_also_resume_losslessly() -> None:
    # Observers that stop reading for a moment, and a tiny lag bound: they are evicted (4008)
    # over and over as the run outpaces their full sockets.
    report = await run_storm(
        events=20_000, clients=4, cuts_per_client=4, seed=SEED, max_lag=50, freezes=True
    )
    assert_lossless(report)
    evictions = sum(log.evictions for log in report.observers)
    # Each one the server's own (the real clients may be evicted too, and reconnect unseen).
    assert 0 < evictions <= report.slow_consumer_closes


@pytest.mark.soak
async def test_reconnect_storms_for_a_while() -> None:
    deadline = time.monotonic() + float(os.environ.get("STORM_SECONDS", "120"))
    seed = SEED
    while time.monotonic() < deadline:
        with watch_faults() as faults:
            report = await run_storm(events=20_000, clients=40, cuts_per_client=20, seed=seed)
        assert_lossless(report)
        assert faults.problems == []
        seed += 1
