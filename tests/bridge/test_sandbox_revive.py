"""A thawed copy of a session's sandbox is made one of its own by `Sandbox.revive` (a
snapshot's fork calls it: `areasync.simulation.snapshots`), never by a caller setting its
private fields: its roots and the directories it removes are the copy's apps' own."""

from __future__ import annotations

import os
import tempfile

from areasync.bridge.sandbox.audit import Sandbox
from areasync.simulation import build_scenario


def test_a_revived_sandbox_owns_the_directories_of_the_apps_it_is_given() -> None:
    scenario, original = build_scenario("scenario_tutorial")
    original.remove_directories()  # the original's: the copy is given its own
    copied = Sandbox(max_file_bytes=original.max_file_bytes)
    copied.temp_files = {os.path.join(tempfile.gettempdir(), "the-originals")}
    moved = tempfile.mkdtemp()
    file_systems = [app for app in scenario.apps or [] if hasattr(app, "tmpdir")]
    assert file_systems, "scenario_tutorial has a file-system app"
    for app in file_systems:
        app.tmpdir = moved
    copied.revive(scenario.apps or [])
    assert copied.roots == [os.path.realpath(moved)] * len(file_systems)
    assert copied.temp_files == set()
    copied.remove_directories()
    assert not os.path.exists(moved)
