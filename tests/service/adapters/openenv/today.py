"""Today's OpenEnv client (PyPI `openenv` 0.10, the package `openenv-core` was renamed to).

Both packages ship the top-level module `openenv`, so they cannot share a site-packages: `make
install` puts `openenv` in a directory of its own (`.venv/openenv-0.10`, `pip install
--no-deps --target`). Its client modules are imported from there unchanged under the name
`openenv_today` (they import each other relatively), beside `openenv-core` 0.3's `openenv`
(`client.py`), so one test process drives areasync with both.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from tests.service.adapters.openenv.client import namespaces

VERSION = "0.10.0"
ROOT = Path(sys.prefix) / "openenv-0.10"

if not (ROOT / "openenv").is_dir():
    raise RuntimeError(
        f"openenv {VERSION} is not installed in {ROOT}: `make install` installs it (pip install "
        f"--no-deps --target {ROOT} openenv=={VERSION})"
    )
namespaces("openenv_today", ROOT / "openenv")

GenericEnvClient: Any = importlib.import_module(
    "openenv_today.core.generic_client"
).GenericEnvClient
MCPToolClient: Any = importlib.import_module("openenv_today.core.mcp_client").MCPToolClient


def version() -> str:
    from importlib.metadata import PathDistribution

    return PathDistribution(ROOT / f"openenv-{VERSION}.dist-info").version
