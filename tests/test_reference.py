"""The generated reference pages (`make docs`) equal what the code renders now.

Each page is checked as the reader would find it: the protocol page against the checked-in
schema (itself tested against the frames), and each command's section of the CLI page against
that command's `--help`, run as its own process. A stale page fails, naming `make docs`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from areasync import cli, reference

ROOT = Path(__file__).resolve().parent.parent
STALE = "stale: run `make docs` and commit docs/reference/"
# `bench run`, `judge` and `gaia2-run` import ARE and its CLI to print their help.
SLOW_HELPS = {("bench", "run"), ("bench", "judge"), ("bench", "gaia2-run")}


def page(name: str) -> str:
    return (ROOT / "docs" / "reference" / name).read_text(encoding="utf-8")


def test_the_protocol_page_is_the_schemas() -> None:
    assert page("protocol.md") == reference.protocol_page(), f"protocol.md is {STALE}"


@pytest.mark.parametrize(
    "command",
    [pytest.param(c, marks=pytest.mark.slow) if c in SLOW_HELPS else c for c in reference.COMMANDS],
    ids=lambda c: " ".join(("areasync", *c)),
)
def test_each_commands_section_of_the_cli_page_is_its_help(command: tuple[str, ...]) -> None:
    section = reference.cli_section(command, reference.help_text(command))
    assert section in page("cli.md"), f"cli.md's `areasync {' '.join(command)}` is {STALE}"


def test_the_cli_page_covers_every_subcommand_of_the_parser() -> None:
    def paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        found = {prefix}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found |= paths(sub, (*prefix, name))
        return found

    # `bench` is a dispatcher: its own commands are listed by name in COMMANDS.
    expected = paths(cli._parser(), ()) - {("bench",)}
    assert expected <= set(reference.COMMANDS)


def test_the_check_names_a_page_that_differs_and_passes_an_equal_one(tmp_path: Path) -> None:
    fresh = reference.Page(Path("docs/reference/a.md"), "now\n")
    (tmp_path / "docs" / "reference").mkdir(parents=True)
    (tmp_path / "docs/reference/a.md").write_text("before\n", encoding="utf-8")
    assert reference.stale(tmp_path, [fresh]) == [fresh.path]
    (tmp_path / "docs/reference/a.md").write_text("now\n", encoding="utf-8")
    assert reference.stale(tmp_path, [fresh]) == []
