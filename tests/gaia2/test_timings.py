"""`--timings PATH`: the command writes its own phase marks (areasync/gaia2/timings.py), which
bench/fixed_costs.py reads; every phase of a run is marked, in order, and the option changes
nothing else the command does."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from areasync.gaia2 import compare
from areasync.gaia2.cli import main as bench_main
from areasync.gaia2.dataset import write_dataset
from areasync.gaia2.timings import Marks

# Nothing answers here: an oracle run calls no model.
NO_MODEL = "http://127.0.0.1:9/v1"


def test_timings_mark_every_phase_of_a_run_in_order(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "dataset", only=["tiny_email"])
    marks_to = tmp_path / "timings.json"
    args = compare.bench_args(dataset, tmp_path / "out", NO_MODEL, oracle=True)
    assert bench_main([*args, "--workers", "0", "--timings", str(marks_to)]) == 0
    marks = json.loads(marks_to.read_text())
    names = list(msgspec.structs.fields(Marks))
    assert list(marks) == [field.name for field in names]
    times = [marks[field.name] for field in names]
    assert None not in times, marks
    assert times == sorted(times), marks


def test_each_command_in_a_process_marks_its_own_phases(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "dataset", only=["tiny_email"])
    marked = []
    for name in ("first", "second"):
        args = compare.bench_args(dataset, tmp_path / name, NO_MODEL, oracle=True)
        marks_to = tmp_path / f"{name}.json"
        assert bench_main([*args, "--workers", "0", "--timings", str(marks_to)]) == 0
        marked.append(json.loads(marks_to.read_text()))
    first, second = marked
    assert second["entered"] >= first["exiting"]
    assert second["first_run_started"] >= second["entered"]


def test_timings_are_not_kept_among_the_sweeps_options(tmp_path: Path) -> None:
    """A sweep measured once can be resumed without it, and the other way round."""
    dataset = write_dataset(tmp_path / "dataset", only=["tiny_email"])
    out = tmp_path / "out"
    args = compare.bench_args(dataset, out, NO_MODEL, oracle=True, extra=["--workers", "0"])
    assert bench_main([*args, "--timings", str(tmp_path / "timings.json")]) == 0
    assert bench_main([*args, "--resume"]) == 0
    options = json.loads((out / ".areasync" / "options.json").read_text())
    assert "timings" not in options
