"""A simulation's validation is one typed record, `Validation`: what `run` and `stop` return,
what `Simulation.validation` holds and what the `ended` item carries, the same value."""

from __future__ import annotations

from typing import Any

from areasync import Simulation
from areasync.protocol import EndedItem, Validation
from tests.scenarios import TimelineScenario, timeline


class Raising(TimelineScenario):
    def validate(self, env: Any) -> Any:
        raise RuntimeError("validation boom")


async def test_a_runs_validation_is_a_validation_record() -> None:
    sim = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    returned = await sim.run()
    assert returned == sim.validation == Validation(success=True)


async def test_the_ended_item_carries_the_simulations_validation() -> None:
    sim = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    await sim.run()
    ended = [item for item in sim.log.after(0) if isinstance(item, EndedItem)]
    assert [item.validation for item in ended] == [sim.validation]


async def test_a_stopped_simulations_validation_is_a_validation_record() -> None:
    sim = Simulation.load(timeline(1, 2, duration=10), mode="manual")
    returned = await sim.stop()
    assert isinstance(returned, Validation) and returned == sim.validation


async def test_a_validate_that_raises_is_a_validation_with_its_exception() -> None:
    sim = Simulation.load(Raising([1.0], duration=5.0), mode="fast")
    await sim.run()
    assert sim.validation == Validation(exception="RuntimeError: validation boom")
