"""Hardening suite: lines in pytest's summary with what the fuzz and storm tests did."""

from __future__ import annotations

import pytest

from tests.hardening import fuzzing, storm


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    tally = fuzzing.TALLY
    if tally["runs"]:
        terminalreporter.write_line(
            f"fuzz: {tally['runs']} runs, {tally['frames']} hostile frames "
            f"({tally['fresh']} on fresh connections) sent"
        )
    storms = storm.TALLY
    if storms["storms"]:
        terminalreporter.write_line(
            f"storm: {storms['storms']} storms, {storms['clients']} clients, {storms['cuts']} "
            f"disconnects ({storms['cuts_during_run']} of the raw observers' mid-run), "
            f"{storms['evictions']} evictions, {storms['items']} items received in order"
        )
