"""The generated reference pages (`make docs`) equal what the code renders now.

Each page is checked as the reader would find it: the protocol page against the checked-in
schema (itself tested against the frames), and the CLI page against the `areasync` parser it is
generated from, and each of its sections against that command's `--help` run as its own
process. A stale page fails, naming `make docs`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from areasync import reference
from areasync.cli import bench
from areasync.cli.parser import build_parser, command_paths, subcommands

ROOT = Path(__file__).resolve().parent.parent
STALE = "stale: run `make docs` and commit docs/reference/"
# `bench run`, `judge` and `gaia2-run` import ARE and its CLI to print their help.
SLOW_HELPS = {("bench", c) for c in bench.ARE_BENCHMARK}


def page(name: str) -> str:
    return (ROOT / "docs" / "reference" / name).read_text(encoding="utf-8")


def parser_commands() -> list[tuple[str, ...]]:
    return [c for c in command_paths(build_parser()) if c != ("bench",)]


def test_the_protocol_page_is_the_schemas() -> None:
    assert page("protocol.md") == reference.protocol_page(), f"protocol.md is {STALE}"


def test_the_cli_page_has_a_section_per_command_of_the_parser_then_per_bench_command() -> None:
    titles = re.findall(r"^## `areasync(.*)`$", page("cli.md"), flags=re.MULTILINE)
    expected = [*parser_commands(), *(("bench", c) for c in bench.COMMANDS)]
    assert [tuple(title.split()) for title in titles] == expected, f"cli.md is {STALE}"


@pytest.mark.parametrize("command", parser_commands(), ids=lambda c: " ".join(("areasync", *c)))
def test_each_section_of_the_cli_page_is_its_help_rendered_from_the_parser(
    command: tuple[str, ...],
) -> None:
    section = reference.cli_section(command, reference.parser_help(build_parser(), command))
    assert section in page("cli.md"), f"cli.md's `areasync {' '.join(command)}` is {STALE}"


def test_an_option_added_to_the_parser_makes_its_section_stale() -> None:
    parser = build_parser()
    subcommands(parser)["run"].add_argument("--new-option", help="not in the page yet")
    section = reference.cli_section(("run",), reference.parser_help(parser, ("run",)))
    assert section not in page("cli.md")


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(c, marks=pytest.mark.slow) if c in SLOW_HELPS else c
        for c in reference.commands()
    ],
    ids=lambda c: " ".join(("areasync", *c)),
)
def test_each_commands_section_of_the_cli_page_is_its_help_as_run(command: tuple[str, ...]) -> None:
    section = reference.cli_section(command, reference.help_text(command))
    assert section in page("cli.md"), f"cli.md's `areasync {' '.join(command)}` is {STALE}"


def test_the_check_names_a_page_that_differs_and_passes_an_equal_one(tmp_path: Path) -> None:
    fresh = reference.Page(Path("docs/reference/a.md"), "now\n")
    (tmp_path / "docs" / "reference").mkdir(parents=True)
    (tmp_path / "docs/reference/a.md").write_text("before\n", encoding="utf-8")
    assert reference.stale(tmp_path, [fresh]) == [fresh.path]
    (tmp_path / "docs/reference/a.md").write_text("now\n", encoding="utf-8")
    assert reference.stale(tmp_path, [fresh]) == []
