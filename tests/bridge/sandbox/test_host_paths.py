"""What an agent is told of its sandbox's files (`areasync.bridge.sandbox.host_paths`): its
paths."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from areasync.bridge.sandbox.host_paths import HostPaths, as_agent_sees

ROOT = "/tmp/are_simulation_sandbox_ab12cd34/are_simulation_fs_sandbox_ef56gh78"


def test_a_path_under_a_root_is_shown_as_the_agent_names_it() -> None:
    text = f"[Errno 2] No such file or directory: '{ROOT}/notes/plan.txt'"
    assert HostPaths([ROOT]).shown(text) == "[Errno 2] No such file or directory: '/notes/plan.txt'"


def test_the_root_itself_is_shown_as_slash() -> None:
    assert HostPaths([ROOT]).shown(f"cannot list '{ROOT}'") == "cannot list '/'"
    assert HostPaths([ROOT]).shown(f"{ROOT}/") == "/"


def test_every_path_of_a_message_is_shown_so() -> None:
    text = f"cannot move '{ROOT}/a' to '{ROOT}/b/c'"
    assert HostPaths([ROOT]).shown(text) == "cannot move '/a' to '/b/c'"


def test_a_name_that_only_starts_like_a_root_is_another_directory_and_left_alone() -> None:
    text = f"'{ROOT}_x/a' and '{ROOT}.bak'"
    assert HostPaths([ROOT]).shown(text) == text


def test_an_apps_root_is_hidden_as_given_and_as_its_real_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    app = SimpleNamespace(tmpdir=str(tmp_path / "link"))
    text = f"'{tmp_path}/link/a' or '{real}/a'"
    assert as_agent_sees([app], text) == "'/a' or '/a'"


def test_apps_without_a_file_system_change_nothing() -> None:
    text = f"'{ROOT}/a'"
    assert as_agent_sees([SimpleNamespace(), SimpleNamespace(tmpdir=None)], text) == text
