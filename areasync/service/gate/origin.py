"""Which browsers may talk to the service: the Host check and the Origin check.

A token is what authorises a client, but a browser can be made to use one against us: a page of
another site that has learned a token (or guesses session ids without one) can open a WebSocket
to the service, which browsers allow across origins, and a DNS-rebinding page (a name of the
attacker's that resolves to 127.0.0.1) reaches a loopback server as "its own" origin. Two checks
run once per request, before any route or handshake (`HttpRoutes`):

- **Host** (against DNS rebinding): the `Host` header must name the server as it is bound. A
  loopback bind answers to `127.0.0.1`, `localhost` and `[::1]` (and the bound address); a
  specific address or name answers to that; a wildcard bind (`0.0.0.0`, `::`) answers to every
  IP literal and `localhost`, but to no other name, since a rebinding attack needs a name and
  an IP literal cannot be rebound. Any port is accepted with a name (port forwards and proxies
  change the port; rebinding abuses the name); `ServiceConfig.allow_hosts` (`--allow-host`)
  adds names (`host`, any port) or exact `host:port`s. A request without `Host` (HTTP/1.0
  tools) is accepted: browsers always send one. Refused: 421 Misdirected Request.
- **Origin** (against cross-site pages): a request without `Origin` (the Python client, the JS
  agent, curl) is accepted; a browser's `Origin` must be one of the server's own origins -
  `http://HOST:PORT` for the bound host and, for a loopback or wildcard bind,
  `http://127.0.0.1:PORT`, `http://localhost:PORT` and `http://[::1]:PORT` - or the origin the
  request itself was addressed to (`http://` + its accepted `Host`: a same-origin page seen
  through a port forward), or one added with `ServiceConfig.allow_origins` (`--allow-origin`).
  `Origin: null` (file://, sandboxed frames) is refused. Refused: 403 Forbidden.

Both refusals are JSON error bodies that name what was refused and the option that allows it.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from areasync.service.ports import is_port

LOOPBACK_NAMES: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
WILDCARD_BINDS: frozenset[str] = frozenset({"", "0.0.0.0", "::"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_NAME = re.compile(r"[a-z0-9]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9]([a-z0-9_-]*[a-z0-9_])?)*\.?")
_SHOWN = 200  # characters of a refused header quoted back in an error message


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def _valid_name(name: str) -> bool:
    return _ip(name) is not None or _NAME.fullmatch(name) is not None


def split_host(value: str) -> tuple[str, int | None] | None:
    """`name`, `name:port`, `[v6]` or `[v6]:port` as (lower-case name, port); None if malformed.

    An IPv6 name is returned without brackets (`::1`).
    """
    value = value.strip().lower()
    port_text: str | None = None
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or _ip(name) is None or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, colon, port_text_ = value.partition(":")
        port_text = port_text_ if colon else None
        if not _valid_name(name):
            return None
    if port_text is None:
        return name, None
    if not port_text.isdigit() or not is_port(int(port_text), any_free=False):
        return None
    return name, int(port_text)


def show_host(name: str, port: int | None = None) -> str:
    """A host as written in URLs and Host headers (`[::1]:8765`)."""
    shown = f"[{name}]" if ":" in name else name
    return shown if port is None else f"{shown}:{port}"


def origin_key(origin: str) -> tuple[str, str, int] | None:
    """(scheme, lower-case host, port) of `scheme://host[:port]`; None if it is not one."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username or parts.password:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    host = parts.hostname.lower()
    if not _valid_name(host):
        return None
    return scheme, host, port if port is not None else _DEFAULT_PORTS[scheme]


def show_origin(key: tuple[str, str, int]) -> str:
    scheme, host, port = key
    return f"{scheme}://{show_host(host, None if port == _DEFAULT_PORTS[scheme] else port)}"


def normalize_origins(values: Iterable[str]) -> tuple[str, ...]:
    """`ServiceConfig.allow_origins` in canonical form; ValueError names a malformed one."""
    found = []
    for value in values:
        key = origin_key(value)
        if key is None:
            raise ValueError(
                f"allow_origins: {value!r} is not an origin; write scheme://host[:port], "
                "e.g. http://dashboard.example:8080 (no path)"
            )
        found.append(show_origin(key))
    return tuple(dict.fromkeys(found))


def normalize_hosts(values: Iterable[str]) -> tuple[str, ...]:
    """`ServiceConfig.allow_hosts` in canonical form; ValueError names a malformed one."""
    found = []
    for value in values:
        parsed = split_host(value)
        if parsed is None or not parsed[0]:
            raise ValueError(
                f"allow_hosts: {value!r} is not a host; write a name or address, with an "
                "optional :port (e.g. box.lan, 192.168.1.5:8765, [fe80::1])"
            )
        found.append(show_host(*parsed))
    return tuple(dict.fromkeys(found))


def _quote(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "...")


@dataclasses.dataclass(frozen=True)
class SitePolicy:
    """The hosts and origins one running server accepts (see the module docstring)."""

    names: frozenset[str]  # accepted with any port
    host_ports: frozenset[tuple[str, int]]  # accepted with exactly this port
    any_ip: bool  # a wildcard bind: every IP literal is one of ours
    origins: frozenset[tuple[str, str, int]]

    @classmethod
    def for_server(
        cls,
        bind_host: str,
        port: int,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
    ) -> SitePolicy:
        bound = split_host(bind_host)
        bind = bound[0] if bound is not None else bind_host.strip("[]").lower()
        wildcard = bind in WILDCARD_BINDS
        address = _ip(bind)
        loopback = bind == "localhost" or (address is not None and address.is_loopback)
        own: set[str] = set(LOOPBACK_NAMES) if (wildcard or loopback) else set()
        if not wildcard:
            own.add(bind)
        origins = {("http", name, port) for name in own}
        names = set(own)
        host_ports = set()
        for entry in allow_hosts:
            parsed = split_host(entry)
            if parsed is None:
                continue
            name, entry_port = parsed
            if entry_port is None:
                names.add(name)
            else:
                host_ports.add((name, entry_port))
        for origin in allow_origins:
            key = origin_key(origin)
            if key is not None:
                origins.add(key)
        return cls(frozenset(names), frozenset(host_ports), wildcard, frozenset(origins))

    # -- checks ------------------------------------------------------------------------------

    def host_allowed(self, host: str | None) -> bool:
        if host is None:
            return True  # not a browser (browsers always send Host)
        parsed = split_host(host)
        if parsed is None:
            return False
        name, port = parsed
        if name in self.names or (port is not None and (name, port) in self.host_ports):
            return True
        return self.any_ip and _ip(name) is not None

    def origin_allowed(self, origin: str | None, host: str | None) -> bool:
        if origin is None:
            return True  # not a browser page: the Python client, the JS agent, curl
        key = origin_key(origin)
        if key is None:
            return False  # "null" (file://, sandboxed frames) or garbage
        if key in self.origins:
            return True
        if host is None or not self.host_allowed(host):
            return False
        parsed = split_host(host)
        if parsed is None:
            return False
        name, port = parsed
        return key == ("http", name, port if port is not None else 80)  # same origin

    # -- refusals ----------------------------------------------------------------------------

    def shown_hosts(self) -> str:
        shown = sorted(show_host(name) for name in self.names)
        shown += sorted(show_host(name, port) for name, port in self.host_ports)
        if self.any_ip:
            shown.append("any IP address")
        return ", ".join(shown)

    def host_refusal(self, host: str) -> str:
        parsed = split_host(host)
        name = show_host(parsed[0]) if parsed is not None else host
        return (
            f"this server does not answer to Host {_quote(host)} (a guard against DNS "
            f"rebinding); it answers to {self.shown_hosts()}. If it really is reachable under "
            f"that name, restart it with `areasync serve --allow-host {name}` "
            "(ServiceConfig.allow_hosts)"
        )

    def origin_refusal(self, origin: str) -> str:
        shown = ", ".join(sorted(show_origin(key) for key in self.origins))
        key = origin_key(origin)
        if key is None:
            how = (
                "an opaque or malformed origin (a file:// page, a sandboxed frame) cannot be "
                "allowed: serve the page from an http(s) origin"
            )
        else:
            how = (
                f"to allow that page, restart with `areasync serve --allow-origin "
                f"{show_origin(key)}` (ServiceConfig.allow_origins)"
            )
        return (
            f"pages of origin {_quote(origin)} may not use this server: it accepts its own "
            f"origins ({shown}, or the one a request is addressed to) and clients that send no "
            f"Origin header; {how}"
        )
