"""`areasync bench ...`: its commands take their own arguments before the parser sees them."""

from __future__ import annotations

import pytest

from areasync.cli import main
from areasync.cli.bench import dispatch


@pytest.mark.parametrize(
    "argv", [["bench"], ["bench", "nosuch"], ["run", "bench"], ["serve", "--port", "0"]]
)
def test_arguments_naming_no_bench_command_are_left_to_the_parser(argv: list[str]) -> None:
    assert dispatch(argv, owns_process=False) is None


def test_bench_alone_says_how_to_use_its_commands_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench"]) == 2
    assert "usage: areasync bench run|judge|gaia2-run" in capsys.readouterr().err


def test_bench_report_parses_its_own_options_under_its_own_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "report", "--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage: areasync bench report")
