"""The keyword options of `Simulation.load`: typed, defaulted and checked in one place."""

from __future__ import annotations

import pytest

from areasync import LagPolicy
from areasync.simulation import InvalidRequestError, SimulationOptions, SimulationSettings
from areasync.simulation.options import option_names


def test_the_typed_options_name_exactly_the_settings() -> None:
    assert set(SimulationOptions.__annotations__) == option_names()


def test_policies_given_as_strings_become_enums() -> None:
    assert SimulationSettings.of({"lag_policy": "strict"}).lag_policy is LagPolicy.STRICT


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_ticks": 0}, "max_ticks must be a whole number"),
        ({"max_ticks": True}, "max_ticks must be a whole number"),
        ({"max_jump": float("inf")}, "max_jump must be a finite number"),
        ({"step_budget": 0}, "step_budget must be > 0"),
        ({"control_budget": -1.0}, "control_budget must be > 0"),
    ],
)
def test_an_option_out_of_range_is_refused(options: SimulationOptions, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        SimulationSettings.of(options)
