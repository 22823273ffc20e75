"""Module attributes imported on first use (PEP 562), so that importing a package stays cheap.

`import areasync` and `areasync --help` must not import ARE (over a second); the names that
need it are imported the first time someone reads them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `exports` maps a name to the module defining it;
    the value is imported once, then kept in `namespace` (the package's globals)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
