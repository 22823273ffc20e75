"""Gaia2-sized worlds: seeded universes filling every app Gaia2's scenarios carry.

Why it exists: what areasync costs - to import, hold, pre-run an oracle, judge, fork, restore -
depends on the size of the world a scenario carries, and Gaia2's worlds hold hundreds to
thousands of items per app (a few MB of JSON per scenario), where the toy scenarios of
`areasync.gaia2.dataset` hold a handful. This package writes such worlds, deterministically,
with ARE's own apps and exporter: `presets` (how big), `universe` (one world's apps),
`shapes` (the scenarios' events over it), `export` (ARE's and gaia2-cli's layouts).
`python -m areasync.gaia2.worlds ROOT --preset gaia2 [--layout gaia2-cli]` writes a dataset.
"""

from areasync.gaia2.worlds.export import LAYOUTS, Exported, Layout, scenarios, write_worlds
from areasync.gaia2.worlds.presets import GAIA2, MEDIUM, PRESETS, SMALL, Preset, preset

__all__ = [
    "GAIA2",
    "LAYOUTS",
    "MEDIUM",
    "PRESETS",
    "SMALL",
    "Exported",
    "Layout",
    "Preset",
    "preset",
    "scenarios",
    "write_worlds",
]
