"""`serve`'s limits and tuning: an option per ServiceConfig field of the table, and only those
given reach the config."""

from __future__ import annotations

import typing

from areasync.cli.parser import build_parser, subcommands
from areasync.cli.tunables import SERVE_TUNABLES, tunables_given
from areasync.service.config import ServiceConfig


def test_every_tunable_names_a_service_config_field_that_takes_its_type() -> None:
    fields = typing.get_type_hints(ServiceConfig)
    assert [
        t.field
        for t in SERVE_TUNABLES
        if t.field not in fields
        or t.kind not in (fields[t.field], *typing.get_args(fields[t.field]))
    ] == []


def test_an_option_left_out_keeps_the_service_configs_default() -> None:
    args = build_parser().parse_args(["serve", "--max-ticks", "5", "--rate", "2.5"])
    assert tunables_given(args) == {"max_ticks": 5, "rate": 2.5}


def test_each_tunables_help_ends_with_the_service_configs_default() -> None:
    serve = subcommands(build_parser())["serve"]
    helps = {action.dest: action.help for action in serve._actions}
    defaults = ServiceConfig()
    assert [
        t.field
        for t in SERVE_TUNABLES
        if not str(helps[t.field]).endswith(f"({getattr(defaults, t.field)})")
    ] == []
