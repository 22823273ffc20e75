"""Where a scenario came from: one tagged union, `ScenarioSource`, used wherever a source is
named as data (a journal keeps a session's; OpenEnv's initialize names one; `Simulation.load`
takes the resolved ones as it takes an id or JSON text).

- `RegisteredScenario`: an id the server's registry knows;
- `InlineScenario`: ARE/Gaia2 JSON, as text, with its SHA-256 (a restore can say which);
- `ScenarioFile`: a path the server's catalog resolves (a registered id, or a .json file under
  its scenario directory);
- `DatasetTask`: a Task API task (`split`, `index`), resolved by the catalog.

A session is made from a resolved source (`ResolvedScenario`: registered or inline), the two a
file or a task resolves to and the two a journal keeps. Plain data, tagged (`kind`) for msgspec;
it lives in the journal, the lowest layer that stores one (it imports nothing else of areasync).
"""

from __future__ import annotations

import hashlib
from typing import TypeAlias

import msgspec

__all__ = [
    "DatasetTask",
    "InlineScenario",
    "RegisteredScenario",
    "ResolvedScenario",
    "ScenarioFile",
    "ScenarioSource",
]


class RegisteredScenario(msgspec.Struct, frozen=True, tag="registered"):
    """A scenario the server knows by id (its registry rebuilds it from the id)."""

    id: str


class InlineScenario(msgspec.Struct, frozen=True, tag="inline"):
    """A scenario sent as JSON: the full text, and its SHA-256 so a restore can say which."""

    sha256: str
    json: str

    def __post_init__(self) -> None:
        if hashlib.sha256(self.json.encode()).hexdigest() != self.sha256:
            raise ValueError("the scenario's JSON text does not match its sha256")

    @classmethod
    def of(cls, json_text: str) -> InlineScenario:
        return cls(hashlib.sha256(json_text.encode()).hexdigest(), json_text)


class ScenarioFile(msgspec.Struct, frozen=True, tag="file"):
    """A path the server's catalog resolves: a registered id, or a .json file under its
    scenario directory (OpenEnv's `scenario_path`)."""

    path: str


class DatasetTask(msgspec.Struct, frozen=True, tag="task"):
    """A Task API task: `split` and `index`, resolved by the server's catalog."""

    split: str
    index: int


ResolvedScenario: TypeAlias = RegisteredScenario | InlineScenario
"""A source a session is made from: what a file or a task resolves to, what a journal keeps."""

ScenarioSource: TypeAlias = RegisteredScenario | InlineScenario | ScenarioFile | DatasetTask
"""Where a scenario came from (module docstring)."""
