"""Confinement of a scenario's file-system apps to their own sandbox directory.

ARE's `SandboxLocalFileSystem` (and `Files`) checks a path with a plain string prefix test
(`full_path.startswith(tmpdir)`), which lets `/../<sandbox name>_x/...` write beside the sandbox,
and its error messages reveal the sandbox name. The confined check compares whole path
components of the resolved path (symlinks included) with the sandbox root. Every loaded
scenario's apps get it (`confine_file_systems`); a session's sandbox
(`areasync.bridge.sandbox.audit`) confines the apps it adopts too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from are.simulation.scenarios.scenario import Scenario

__all__ = ["confine_file_system", "confine_file_systems"]


def confine_file_systems(scenario: Scenario) -> None:
    """Give every sandboxed file-system app of `scenario` the strict path check."""
    from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem

    for app in getattr(scenario, "apps", None) or []:
        if isinstance(app, SandboxLocalFileSystem):
            confine_file_system(app)


def confine_file_system(app: Any) -> None:
    """Give a `SandboxLocalFileSystem` app the strict path check (see the module docstring);
    idempotent."""
    if "_validate_path" not in vars(app):
        # An instance attribute shadows the class's method for this app only.
        app._validate_path = _confined(app._validate_path, app.tmpdir)


def _confined(are_check: Callable[[str], str], tmpdir: str) -> Callable[[str], str]:
    root = os.path.realpath(tmpdir)

    def validate_path(path: str) -> str:
        refused = PermissionError(f"operation not allowed outside the sandbox: {path!r}")
        try:
            full_path = are_check(path)  # ARE's mapping: "/" is the sandbox root, "~" home
        except PermissionError:
            raise refused from None
        real = os.path.realpath(full_path)
        if real != root and os.path.commonpath([root, real]) != root:
            raise refused
        return full_path

    return validate_path
