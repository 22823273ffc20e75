"""`Simulation`'s private members are its own: no other module of the package reaches them.

Replay, snapshots, the judge's recorded answers and the service drive a session through its
public methods only (`Simulation.apply_record` applies a record live or replayed, `revive`
makes a thawed copy a session of its own), so the class can change how it keeps its state
without breaking them. Checked on the source with `ast`, importing nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent / "areasync"
# The files `Simulation` and its parts are written in.
CLASS_FILES = {
    ROOT / "simulation" / name
    for name in (
        "simulation.py",
        "record_book.py",
        "publisher.py",
        "ending.py",
        "leases.py",
        "lease_keeper.py",
        "driver.py",
        "controls.py",
        "agent.py",
        "judging.py",
        "wakeup.py",
    )
}


def private_members() -> set[str]:
    """Every `_name` (not dunder) the class files define on a class or assign on `self`."""
    names: set[str] = set()
    for path in CLASS_FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        names.add(item.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                names.add(node.attr)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _own(value: ast.expr) -> bool:
    """`self`, `cls` or `super()`: a class reaching its own members."""
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "super"
    )


def reach_ins() -> list[str]:
    """`obj._name` outside the class files, `_name` one of the class's private members and
    `obj` not the module's own (`_own`)."""
    private = private_members()
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        # `areasync.workers` imports nothing else of areasync (tests/test_import_rules.py), so
        # it holds no simulation: its `_stop` is multiprocessing's fork server's.
        if path in CLASS_FILES or ROOT / "workers" in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private and not _own(node.value):
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: .{node.attr}")
    return found


def test_no_module_outside_the_class_touches_a_private_member_of_a_simulation() -> None:
    assert reach_ins() == []


def subclasses_of_simulation() -> list[str]:
    """`class X(Simulation)` anywhere in the package: a subclass would patch its internals."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                (isinstance(base, ast.Name) and base.id == "Simulation")
                or (isinstance(base, ast.Attribute) and base.attr == "Simulation")
                for base in node.bases
            ):
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {node.name}")
    return found


def test_no_module_subclasses_a_simulation_its_judge_is_a_part_it_is_given() -> None:
    assert subclasses_of_simulation() == []
