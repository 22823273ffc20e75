"""The browser dashboard's static files (HTML, CSS, JavaScript modules), shipped as package data.

This module exists so the service can locate the assets without hard-coding a path:
``ASSETS_DIR / "index.html"`` is the page served at ``/``. No build step: the files are served
as they are, and :data:`CONTENT_TYPES` gives the MIME type for each suffix (module scripts must
be served as JavaScript, or browsers refuse to run them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

ASSETS_DIR: Final = Path(__file__).parent
"""Directory holding ``index.html`` and the files it loads."""

CONTENT_TYPES: Final[dict[str, str]] = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".ico": "image/x-icon",
    ".png": "image/png",
}
"""Content-Type to send for each asset suffix."""


def asset_path(url_path: str) -> Path | None:
    """The file for a URL path under the dashboard (``/`` is ``index.html``), or None.

    Refuses anything outside :data:`ASSETS_DIR` (``..``, absolute paths) and Python files.
    """
    name = url_path.lstrip("/") or "index.html"
    candidate = (ASSETS_DIR / name).resolve()
    if ASSETS_DIR.resolve() not in candidate.parents or candidate.suffix not in CONTENT_TYPES:
        return None
    return candidate if candidate.is_file() else None
