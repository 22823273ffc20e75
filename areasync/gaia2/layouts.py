"""gaia2-cli's dataset layout read as ARE's, so `areasync bench` runs either.

Why: ARE's Hub loader (`are.simulation.benchmark.huggingface_loader`) reads rows whose scenario
JSON is in a `data` column (`meta-agents-research-environments/gaia2`: configs `execution`,
`search`, ..., splits `validation` and `test`). gaia2-cli's dataset
(`meta-agents-research-environments/gaia2-cli`, and Omnilingual-Gaia2's `{language}_{split}`
configs) has rows of `{scenario_id, scenario}`: its five splits (`execution`, `search`,
`ambiguity`, `adaptability`, `time`) are its configs, each with one split, `test`. ARE would
find no `data` and load nothing.

`with_data` is applied to whatever `datasets.load_dataset` returns while `areasync bench` runs
(`runner.virtual_clock` patches the one name ARE calls): a row with a `scenario` and no `data`
gets `data` = its `scenario`, lazily, row by row, streaming or not; ARE's rows are left as they
are. So `--hf-dataset meta-agents-research-environments/gaia2-cli --hf-config execution
--hf-split test` (or `--hf-config fr_execution`), and the same options on a local copy of such a
dataset (`--hf-dataset DIR`: `datasets` reads a directory), run as ARE's do. gaia2-cli's
materialized layout (its runner's cache and `export_hf_to_json.py`: `DIR/<config>/<id>.json`)
is ARE's local layout without a split level: `-d DIR --config execution`.
"""

from __future__ import annotations

from typing import Any


def _data_of(row: dict[str, Any]) -> dict[str, Any]:
    """The column a gaia2-cli row lacks for ARE: `data`, its `scenario` (nothing otherwise)."""
    if "data" not in row and "scenario" in row:
        return {"data": row["scenario"]}
    return {}


def with_data(loaded: Any) -> Any:
    """`loaded` (a dataset, or a dict of them by split), its gaia2-cli rows given `data`."""
    names = _column_names(loaded)
    if names is not None and ("data" in names or "scenario" not in names):
        return loaded  # ARE's own rows (or rows of neither kind): as they are
    return loaded.map(_data_of)


def _column_names(loaded: Any) -> set[str] | None:
    """The columns of `loaded` (of any of its splits), None when they are not known yet (a
    streamed dataset without features): then each row is looked at as it comes."""
    columns = getattr(loaded, "column_names", None)
    if isinstance(columns, dict):  # a dict of splits: {split: [names]}
        names: set[str] = set()
        for split_columns in columns.values():
            if split_columns is None:
                return None
            names.update(split_columns)
        return names
    if isinstance(columns, list):
        return set(columns)
    return None
