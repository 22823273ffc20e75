"""Service suite: a line in pytest's summary with what the durable fault tests did."""

from __future__ import annotations

import pytest

from tests.service.durable_support import TALLY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TALLY["runs"]:
        terminalreporter.write_line(
            f"durable faults: {TALLY['runs']} runs, {TALLY['kills']} SIGKILLs, "
            f"{TALLY['resolved']} requests in flight at a kill resolved from the stream, "
            f"{TALLY['clients']} clients, {TALLY['reconnects']} reconnects, "
            f"{TALLY['items']} items checked exactly once"
        )
