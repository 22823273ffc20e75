"""Security headers of every HTTP response the service sends, on every port (routes, dashboard,
refusals, gaia2-cli's adapter, a cluster's router).

Every response says `Cache-Control: no-store` (session data and tokens must not linger in
caches), `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` (no URL of ours ever
travels in a Referer), `X-Frame-Options: DENY` and `Cross-Origin-Resource-Policy: same-origin`
(no other site may frame or embed what we serve).

The dashboard's files (its page, and its scripts: a worker runs under the policy its script
was served with) carry `dashboard_csp`: scripts, styles and workers only from the server itself
(no inline script, no eval), images from itself or `data:` (the favicon), connections to itself
and to its WebSocket origin (`ws://HOST:PORT`, named explicitly: `'self'` does not cover `ws:`
in every browser), no plugins, no `<base>`, no form posts, and no framing. Everything else (JSON,
Prometheus text, errors) carries `API_CSP`, which allows nothing at all.
"""

from __future__ import annotations

from collections.abc import Iterable

BASE_HEADERS: tuple[tuple[str, str], ...] = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)

API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

# Every response but the dashboard's files: the base headers and the policy that allows nothing.
API_HEADERS: tuple[tuple[str, str], ...] = (*BASE_HEADERS, ("Content-Security-Policy", API_CSP))


def dashboard_csp(socket_hosts: Iterable[str]) -> str:
    """The dashboard's Content-Security-Policy; `socket_hosts` are `host:port` to connect to.

    An IPv6 literal cannot be written in a CSP source expression; `'self'` covers it (browsers
    that match `ws:` with `'self'`, as Chromium and Firefox do).
    """
    sockets = " ".join(
        f"{scheme}://{host}" for host in socket_hosts if "[" not in host for scheme in ("ws", "wss")
    )
    connect = f"'self' {sockets}".strip()
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {connect}; worker-src 'self'; object-src 'none'; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    )
