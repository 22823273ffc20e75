"""Hardening suite: a line in pytest's summary with how much garbage the fuzz tests sent."""

from __future__ import annotations

import pytest

from tests.hardening import fuzzing


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    tally = fuzzing.TALLY
    if tally["runs"]:
        terminalreporter.write_line(
            f"fuzz: {tally['runs']} runs, {tally['frames']} hostile frames "
            f"({tally['fresh']} on fresh connections) sent"
        )
