"""The real OpenEnv client (PyPI `openenv-core`), imported without OpenEnv's server stack.

`make install` installs `openenv-core` with `--no-deps`: its client modules
(`openenv.core.env_client`, `generic_client`, `client_types`, `utils`, `containers.runtime`)
need only websockets and requests, but the package's `__init__` modules import OpenEnv's
server too (fastapi, fastmcp, gradio, openai...), which the service must not depend on. So the
two package modules are registered as plain namespaces over the installed directory, and the
client modules are then imported from it unchanged, by their own names.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any


def namespaces(name: str, root: Path) -> None:
    """Register `name` (and its `core`, `core.env_server`) as namespaces over OpenEnv's package
    directory `root`, so its client modules import without its package `__init__`s."""
    for module_name, path in (
        (name, root),
        (f"{name}.core", root / "core"),
        (f"{name}.core.env_server", root / "core" / "env_server"),
    ):
        if module_name not in sys.modules:
            module = types.ModuleType(module_name)
            module.__path__ = [str(path)]
            sys.modules[module_name] = module


def _installed() -> Path:
    spec = importlib.util.find_spec("openenv")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "openenv-core is not installed: `make install` installs it (pip install --no-deps "
            "openenv-core==0.3.0)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


namespaces("openenv", _installed())

from openenv.core.client_types import StepResult  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402

__all__ = ["GenericEnvClient", "StepResult", "version"]


def version() -> str:
    from importlib.metadata import version as _version

    return _version("openenv-core")


def observation(result: Any) -> dict[str, Any]:
    """A StepResult's observation (a dict with the generic client)."""
    observed: dict[str, Any] = result.observation
    return observed
