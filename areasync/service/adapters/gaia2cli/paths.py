"""Where gaia2-cli's shared adapter port answers: its path, its URLs, its unknown-token words.

The front process serves that port's connections (`front/gaia2.py`) and prints its URLs
without importing the adapter itself (`http.py`, which reaches sessions), so these live apart.
"""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["PREFIX", "UNKNOWN_TOKEN", "adapter_url"]

PREFIX = "/gaia2/"
UNKNOWN_TOKEN = (
    "the token in the URL is not valid: use http://HOST:PORT/gaia2/<session token> "
    "(a token the server printed or create_session returned)"
)


def adapter_url(base: str, token: str, session_id: str | None = None) -> str:
    """A harness's base URL on the adapter at `base` (http://HOST:PORT): `token`'s session,
    or `session_id` with the admin token."""
    path = quote(token, safe="")
    if session_id is not None:
        path += "/" + quote(session_id, safe="")
    return f"{base}{PREFIX}{path}"
