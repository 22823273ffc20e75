"""Generated scenarios through ARE's exporter, written in ARE's layout and in gaia2-cli's.

Rule: a scenario is its universe's apps and one shape's events, imported by ARE's benchmark
importer and written by ARE's `JsonScenarioExporter` (`areasync.gaia2.dataset`'s path), so
the bytes are ARE's; the Files app's state is exported as generated (see `universe`). Scenario
`k` of a dataset lives in universe `k mod preset.universes` and takes shape `k mod 4`
(`shapes.SHAPES`' order), its choices drawn from a generator seeded by (seed, k): the same
seed, preset and count give the same bytes.

Layouts:

* `are`: `ROOT/<config>/<split>/<scenario_id>.json`, what `are-benchmark run -d ROOT
  --config C --split S` (ARE's `find_scenario_paths`) and `areasync bench run` read;
* `gaia2-cli`: the Hub layout of gaia2-cli's dataset, `ROOT/<config>/<split>.jsonl` (its split
  is `test`), one row `{"scenario_id": ..., "scenario": ...}` per line, `scenario` being the
  text ARE's exporter wrote, and `ROOT/README.md`, the dataset card declaring each config's
  files as the Hub does, so that `datasets.load_dataset(ROOT, config)` (and `--hf-dataset
  ROOT --hf-config C --hf-split test`) reads it.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from areasync.gaia2.dataset import SPLIT, scenario_document, through_ares_exporter
from areasync.gaia2.worlds import shapes
from areasync.gaia2.worlds.presets import Preset
from areasync.gaia2.worlds.universe import START_TIME, Universe, generate

Layout = Literal["are", "gaia2-cli"]
LAYOUTS: tuple[Layout, ...] = ("are", "gaia2-cli")
GAIA2_CLI_SPLIT = "test"  # gaia2-cli's one split per config


@dataclass(frozen=True)
class Exported:
    """One scenario as ARE's exporter wrote it, the dataset config it belongs in, and what a
    faithful agent does on it (`shapes.agent_script`), keyed by its marker for the stub LLM."""

    scenario_id: str
    config: str
    text: str
    agent: tuple[dict[str, Any], ...] = ()

    @property
    def marker(self) -> str:
        return f"<{self.scenario_id}>"


def derived_seed(seed: int, *parts: object) -> int:
    """A seed for one part of a dataset (a universe, a scenario), the same on every machine."""
    digest = hashlib.sha256(":".join(map(str, (seed, *parts))).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def scenario_json(world: Universe, shape: shapes.Shape, scenario_id: str) -> str:
    """One scenario of `world` with `shape`'s events, as ARE's exporter writes it."""
    document = scenario_document(
        scenario_id,
        shapes.duration(shape),
        list(shape.tags),
        world.apps,
        shapes.events(shape),
        START_TIME,
    )
    return _pinned(through_ares_exporter(document, as_given=("Files",)), scenario_id)


def _pinned(text: str, scenario_id: str) -> str:
    """ARE's export with its two draws pinned: each event's `action_id` (a `uuid4` ARE's
    importer gives every non-oracle action) and the annotation's `date` (the export's wall
    time), replaced in place so that the rest stays byte for byte as ARE wrote it."""
    document = json.loads(text)
    for event in document["events"]:
        old = event["action"]["action_id"]
        if old:
            prefix = old.split("-", 1)[0]  # `App.function`, then the uuid
            digest = hashlib.sha256(f"{scenario_id}:{event['event_id']}".encode()).digest()
            stable = uuid.UUID(bytes=digest[:16], version=4)
            text = text.replace(json.dumps(old), json.dumps(f"{prefix}-{stable}"), 1)
    date = document["metadata"]["annotation"]["date"]
    if date is not None:
        text = re.sub(
            rf'("date":\s*){re.escape(repr(date))}', rf"\g<1>{START_TIME!r}", text, count=1
        )
    return text


def scenarios(size: Preset, *, seed: int = 0, count: int = 4) -> Iterator[Exported]:
    """The dataset's `count` scenarios, in order (see the module docstring's rule)."""
    worlds: dict[int, Universe] = {}
    kinds = list(shapes.SHAPES)
    for k in range(count):
        u = k % size.universes
        if u not in worlds:
            worlds[u] = generate(derived_seed(seed, "universe", u), size)
        kind = kinds[k % len(kinds)]
        scenario_id = f"world_{size.name}_s{seed}_{k:04d}_{kind}"
        rng = random.Random(derived_seed(seed, "scenario", k))
        shape = shapes.SHAPES[kind](worlds[u], rng, f"<{scenario_id}>")
        text = scenario_json(worlds[u], shape, scenario_id)
        yield Exported(scenario_id, shape.config, text, tuple(shapes.agent_script(shape)))


def write_worlds(
    root: str | Path,
    size: Preset,
    *,
    seed: int = 0,
    count: int = 4,
    layout: Layout = "are",
    split: str | None = None,
) -> list[Path]:
    """Write the dataset under `root` in `layout` (`split`: ARE's `validation`, gaia2-cli's
    `test` by default); returns the files written, in order."""
    if layout not in LAYOUTS:
        raise ValueError(f"no dataset layout {layout!r}: choose one of {list(LAYOUTS)}")
    root = Path(root)
    written: list[Path] = []
    rows: dict[str, list[str]] = {}
    for exported in scenarios(size, seed=seed, count=count):
        if layout == "are":
            folder = root / exported.config / (split or SPLIT)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{exported.scenario_id}.json"
            path.write_text(exported.text, encoding="utf-8")
            written.append(path)
        else:
            row = {"scenario_id": exported.scenario_id, "scenario": exported.text}
            rows.setdefault(exported.config, []).append(json.dumps(row) + "\n")
    if rows:
        written += _write_hub_layout(root, rows, split or GAIA2_CLI_SPLIT)
    return written


def _write_hub_layout(root: Path, rows: dict[str, list[str]], split: str) -> list[Path]:
    """Each config's rows as `<config>/<split>.jsonl`, and the card declaring them."""
    written: list[Path] = []
    card = ["---", "configs:"]
    for config, lines in sorted(rows.items()):
        path = root / config / f"{split}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines), encoding="utf-8")
        written.append(path)
        card += [
            f"- config_name: {config}",
            "  data_files:",
            f"  - split: {split}",
            f"    path: {config}/{split}.jsonl",
        ]
    readme = root / "README.md"
    readme.write_text("\n".join([*card, "---", ""]), encoding="utf-8")
    return [*written, readme]
