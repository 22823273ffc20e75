"""`Creation`: how a session was made, typed end to end: its options are the session's
`SimulationSettings` (policies as enums), in a journal and back, and a creation written with
untyped options (journals before them) still decodes to the same settings."""

from __future__ import annotations

import msgspec

from areasync import Simulation
from areasync.policies import LagPolicy, LeasePolicy
from areasync.simulation import Creation, SimulationSettings


def test_a_creations_options_are_the_sessions_settings_typed() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual", lease_policy="end", max_ticks=7)
    assert sim.creation is not None
    assert isinstance(sim.creation.options, SimulationSettings)
    assert sim.creation.options == sim.settings
    assert sim.creation.options.lease_policy is LeasePolicy.END


def test_a_creation_goes_to_msgpack_and_back_unchanged() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual", lag_policy="strict")
    assert sim.creation is not None
    data = msgspec.msgpack.encode(sim.creation)
    assert msgspec.msgpack.decode(data, type=Creation) == sim.creation


def test_a_creation_written_with_untyped_options_decodes_to_typed_settings() -> None:
    untyped = {
        "seed": 4,
        "created_at": 50.0,
        "mode": "fast",
        "speed": 1.0,
        "oracle": False,
        "exit_when_no_events": None,
        "import_mode": "auto",
        "max_file_bytes": 1 << 20,
        # As journals wrote them before the options were typed: policies by value, and no
        # setting added since (its default applies).
        "options": {"lag_policy": "catch_up", "lease_policy": "end", "max_ticks": 9},
    }
    creation = msgspec.msgpack.decode(msgspec.msgpack.encode(untyped), type=Creation)
    assert creation.options == SimulationSettings(
        lag_policy=LagPolicy.CATCH_UP, lease_policy=LeasePolicy.END, max_ticks=9
    )


def test_a_creation_makes_the_same_settings_again() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual", max_jump=60.0, tool_budget=5.0)
    assert sim.creation is not None
    again = Simulation.load("scenario_tutorial", **sim.creation.load_arguments())
    assert again.settings == sim.settings
