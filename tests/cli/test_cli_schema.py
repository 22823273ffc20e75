"""`areasync schema`: the protocol's JSON Schema on stdout, as checked in."""

from __future__ import annotations

import pytest

from areasync.cli import main
from areasync.protocol.schema import SCHEMA_PATH


def test_schema_command_prints_the_checked_in_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == SCHEMA_PATH.read_text()
