"""`bridge/state_copy.py`: a live session's object graph copied whole, and independent of it."""

from __future__ import annotations

import gc
import os
import threading
from typing import Any

import anyio
from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem

from areasync import Simulation
from areasync.bridge.state_copy import freeze, thaw, with_attributes

TUTORIAL = "scenario_tutorial"


def copied(sim: Simulation) -> Any:
    replaced = [
        (sim, with_attributes(sim, record_listeners=[])),
        (sim.log, with_attributes(sim.log, listeners=[])),
    ]
    return thaw(freeze(sim, replaced, list(sim.env.apps.values())))


def file_system(sim: Any) -> SandboxLocalFileSystem:
    return next(a for a in sim.scenario.apps if isinstance(a, SandboxLocalFileSystem))


def test_a_copy_has_the_same_stream_and_draws_the_same_ids_next() -> None:
    sim = Simulation.load(TUTORIAL, mode="manual", seed=3, created_at=0.0)
    copy = copied(sim)
    assert copy.log.items == sim.log.items
    with sim.sandbox.entered():
        ours = sim.sandbox.entropy.uuid4()
    with copy.sandbox.entered():
        theirs = copy.sandbox.entropy.uuid4()
    assert ours == theirs


def test_a_copys_file_system_lives_in_a_directory_of_its_own_with_the_same_files() -> None:
    sim = Simulation.load(TUTORIAL, mode="manual", seed=3, created_at=0.0)
    original = file_system(sim)
    with open(os.path.join(original.tmpdir, "note.txt"), "w") as file:
        file.write("kept")
    copy = file_system(copied(sim))
    assert copy.tmpdir != original.tmpdir
    with open(os.path.join(copy.tmpdir, "note.txt")) as file:
        assert file.read() == "kept"
    with open(os.path.join(copy.tmpdir, "note.txt"), "w") as file:
        file.write("changed in the copy")
    with open(os.path.join(original.tmpdir, "note.txt")) as file:
        assert file.read() == "kept"


def test_a_copy_goes_straight_to_the_collectors_oldest_generation() -> None:
    sim = Simulation.load(TUTORIAL, mode="manual", seed=3, created_at=0.0)
    gc.collect()  # the generations' counts at zero: without the move, the copy ends younger
    copy = copied(sim)
    oldest = {id(obj) for obj in gc.get_objects(generation=2)}
    assert id(copy) in oldest and id(copy.env) in oldest and id(copy.log) in oldest


def test_the_objects_copied_by_one_reduction_keep_their_types() -> None:
    # The reduction is picked once per type: a lock, an anyio event and a plain object of a
    # graph copied twice come back as what they were, both times.
    graph = {"lock": threading.Lock(), "event": anyio.Event(), "list": [1, 2]}
    for _ in range(2):
        copy = thaw(freeze(graph, [], []))
        assert type(copy["lock"]) is type(graph["lock"]) and not copy["lock"].locked()
        assert isinstance(copy["event"], anyio.Event) and copy["list"] == [1, 2]


class Holder:
    def __init__(self, secret: str) -> None:
        self.secret = secret


def test_only_the_object_replaced_is_replaced_not_others_of_its_type() -> None:
    one, other = Holder("one"), Holder("other")
    data = freeze([one, other], [(one, with_attributes(one, secret="kept out"))], [])
    copy_of_one, copy_of_other = thaw(data)
    assert (copy_of_one.secret, copy_of_other.secret) == ("kept out", "other")
