"""The `areasync` parser: one argparse tree, every command in it, built without ARE."""

from __future__ import annotations

import subprocess
import sys

from areasync.cli.parser import build_parser, command_paths, subcommands
from tests.bounds import PROCESS_S


def test_the_tree_lists_every_command_before_its_subcommands_in_the_helps_order() -> None:
    assert command_paths(build_parser()) == [
        (),
        ("run",),
        ("schema",),
        ("bench",),
        ("agent",),
        ("agent", "oracle"),
        ("agent", "are"),
        ("session",),
        ("session", "create"),
        ("session", "stop"),
        ("session", "fork"),
        ("session", "list"),
        ("serve",),
    ]


def test_a_command_without_subcommands_has_none() -> None:
    assert subcommands(subcommands(build_parser())["run"]) == {}


def test_a_command_is_parsed_into_its_name_and_none_into_none() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "scenario_tutorial"]).command == "run"
    assert parser.parse_args(["serve"]).command == "serve"
    assert parser.parse_args([]).command is None


def test_building_the_parser_imports_no_are() -> None:
    code = (
        "import sys\n"
        "from areasync.cli.parser import build_parser\n"
        "build_parser()\n"
        "sys.exit(1 if 'are' in sys.modules else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], timeout=PROCESS_S, check=False)
    assert done.returncode == 0
