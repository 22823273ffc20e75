"""Where OpenEnv's routes answer on a port: the prefix, the routes, a request's token.

The front process reads OpenEnv's paths (which session a request is for) and prints its base
URLs without importing the routes themselves (`routes.py`, which reach sessions and ARE's
scenarios), so these live apart.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from areasync.service.gate.auth import token_from_http
from areasync.service.gate.methods import OPENENV_PREFIX as PREFIX

__all__ = ["ENV_NAME", "PREFIX", "ROUTES", "base_url", "locate"]

ENV_NAME = "areasync"  # the one environment this server's Task API lists

ROUTES = frozenset(
    {
        "/ws",
        "/health",
        "/schema",
        "/metadata",
        "/state",
        "/reset",
        "/step",
        "/harness",
        "/mcp",
        "/list_environments",
    }
)


def locate(path: str, authorization: str | None) -> tuple[str, str] | None:
    """(token, route) of an OpenEnv request, or None if `path` is not OpenEnv's: the token is
    the path's (`/openenv/<token><route>`), or, when the path goes on with a route at once
    (`/openenv<route>`, as today's client builds it from a base URL and `headers=`), the
    `Authorization: Bearer` header's ("" when there is none). A token is never a route's name:
    tokens are random."""
    if not path.startswith(PREFIX):
        return None
    rest = path[len(PREFIX) :]
    first, slash, tail = rest.partition("/")
    if "/" + first in ROUTES or first.lower() == ENV_NAME:
        return token_from_http("", authorization) or "", "/" + rest
    return unquote(first), slash + tail


def base_url(http_url: str, token: str) -> str:
    """The OpenEnv base URL to paste into `EnvClient(base_url=...)`."""
    return f"{http_url}{PREFIX}{quote(token, safe='')}"
