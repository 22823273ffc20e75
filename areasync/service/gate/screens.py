"""The screens every port applies to a request before any route sees it, as plain decisions.

The server answers HTTP on three kinds of port: its main port (websockets' `process_request`:
health, the API, the dashboard, OpenEnv's routes, the WebSocket handshakes), gaia2-cli's adapter
port (aiohttp) and a cluster's router (websockets again). Each stack has a thin adapter that
turns a request's head (request line and headers, before a byte of its body) into a `Head`,
asks its port's `PortScreen.check`, and either writes the `Refusal` it gets or goes on, reading
exactly the body length it was granted: `screened.py` (websockets' parser, for both websockets
ports), `http/routes.py` and `cluster/routes.py` (their `process_request`),
`adapters/gaia2cli/http.py` (aiohttp). The decisions, in order:

1. **One Host, one Origin** (400), **Host** (421: DNS rebinding) and **Origin** (403: pages of
   other sites), by `origin.py`'s `SitePolicy` for the port's bind.
2. **A body is judged by its head.** A request for a route that takes a body (the port's
   `BodyRule`: OpenEnv's POSTs, gaia2-cli's, the router's `POST /api/sessions`) is refused for
   its credential first (401, or whatever the port's rule says), then for its length: a body
   without `Content-Length` (chunked) gets 411, one longer than the route takes 413 - all
   before a byte of it is read, so a request that may not send one costs its headers only.
3. **Bodies in flight** are counted per port and per credential (`Slots`): past either bound a
   request is refused (503 or 429) before its body is read. The slot is held until the request
   is answered, so a token cannot hold more than `max_bodies_per_token` bodies in memory.

Requests for routes without a body pass step 2 unread (the route answers them: 405 for a method
it does not serve). The same `Slots` bound gaia2-cli's event streams per port and per token.
Every response a port sends, refusals included, carries `headers.API_HEADERS` (the adapters
add them). A refusal is a status, a code and a message saying what was wrong and what to do;
each adapter writes it in its port's JSON shape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, Protocol
from urllib.parse import urlsplit

from areasync.protocol.errors import ErrorCode
from areasync.service.gate.origin import SitePolicy

RETRY_AFTER_S: Final = "1"


class ScreenSettings(Protocol):
    """What a port's screens read of its server's settings (`ServiceConfig` has them: the
    gate sits below the configuration, which reads the gate's defaults)."""

    @property
    def max_bodies(self) -> int: ...

    @property
    def max_bodies_per_token(self) -> int: ...

    @property
    def allow_hosts(self) -> tuple[str, ...]: ...

    @property
    def allow_origins(self) -> tuple[str, ...]: ...


@dataclasses.dataclass(frozen=True, slots=True)
class Head:
    """A request as far as its headers: what every screen decides on."""

    method: str
    target: str  # the request target as sent: path and query
    headers: tuple[tuple[str, str], ...]

    def values(self, name: str) -> list[str]:
        """Every value of header `name` (case-insensitive), in order."""
        name = name.lower()
        return [value for key, value in self.headers if key.lower() == name]

    def first(self, name: str) -> str | None:
        found = self.values(name)
        return found[0] if found else None

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> str:
        return urlsplit(self.target).query


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    """An answer refusing a request: status, error code, what was wrong and what to do."""

    status: int
    code: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class BodyRule:
    """A route that takes a body: at most `limit` bytes (the option `option` sets it), counted
    against `key` (the credential) among the bodies in flight; `refused` is this request's
    refusal for its credential (None: it may send a body)."""

    limit: int
    option: str
    key: str
    refused: Refusal | None = None


BodyRules = Callable[[Head], "BodyRule | None"]
"""A port's routes that take a body: the rule for a head, or None (no body is read for it)."""


class Slot:
    """A place taken among a port's `Slots`, given back by `release` (once) or on leaving its
    `with` block."""

    __slots__ = ("_key", "_slots")

    def __init__(self, slots: Slots, key: str) -> None:
        self._slots: Slots | None = slots
        self._key = key

    def release(self) -> None:
        slots, self._slots = self._slots, None
        if slots is not None:
            slots.give_back(self._key)

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class Slots:
    """Places of one kind on one port (bodies in flight, event streams): at most `per_port` at
    once, `per_key` of them for one key (a token). `take` answers a `Slot` or the refusal: 429
    for the key's bound, 503 for the port's, each naming the bound and its option."""

    def __init__(
        self, what: str, *, per_port: int, per_key: int, port_option: str, key_option: str
    ) -> None:
        self.what = what
        self.per_port = per_port
        self.per_key = per_key
        self.port_option = port_option
        self.key_option = key_option
        self.taken = 0
        self._by_key: dict[str, int] = {}

    def held(self, key: str) -> int:
        return self._by_key.get(key, 0)

    def take(self, key: str) -> Slot | Refusal:
        held = self._by_key.get(key, 0)
        if held >= self.per_key:
            return Refusal(
                429,
                ErrorCode.CAPACITY,
                f"this token already has {held} {self.what} open, its limit "
                f"({self.key_option}); close one (or wait for one to be answered), then retry",
                (("Retry-After", RETRY_AFTER_S),),
            )
        if self.taken >= self.per_port:
            return Refusal(
                503,
                ErrorCode.CAPACITY,
                f"this port has {self.taken} {self.what} open, its limit ({self.port_option}); "
                "retry later",
                (("Retry-After", RETRY_AFTER_S),),
            )
        self._by_key[key] = held + 1
        self.taken += 1
        return Slot(self, key)

    def give_back(self, key: str) -> None:
        held = self._by_key.pop(key) - 1
        if held:
            self._by_key[key] = held
        self.taken -= 1


@dataclasses.dataclass(frozen=True, slots=True)
class Admitted:
    """A request that passed every screen: read `length` bytes of body (0: none), holding
    `slot` (its place among the port's bodies in flight, if it has a body route) until it is
    answered."""

    length: int = 0
    slot: Slot | None = None

    @contextmanager
    def holding(self) -> Iterator[Admitted]:
        """The request's handling: its slot is given back when it ends, however it ends."""
        try:
            yield self
        finally:
            if self.slot is not None:
                self.slot.release()


class PortScreen:
    """The screens of one port (module docstring): its site policy (set once the port is bound;
    None until then: no Host/Origin check), its body routes and its bodies in flight."""

    def __init__(self, rules: BodyRules, *, max_bodies: int, max_bodies_per_token: int) -> None:
        self.site: SitePolicy | None = None
        self.rules = rules
        self.bodies = Slots(
            "requests with a body",
            per_port=max_bodies,
            per_key=max_bodies_per_token,
            port_option="max_bodies",
            key_option="max_bodies_per_token",
        )
        self._allowed: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    @classmethod
    def of(cls, rules: BodyRules, config: ScreenSettings) -> PortScreen:
        """The screens of a port of a server with `config`: its bodies in flight bounded by
        `max_bodies` and `max_bodies_per_token`, its site policy (`bind`) by `allow_hosts`
        and `allow_origins`."""
        screen = cls(
            rules, max_bodies=config.max_bodies, max_bodies_per_token=config.max_bodies_per_token
        )
        screen._allowed = (config.allow_hosts, config.allow_origins)
        return screen

    def bind(self, host: str, port: int) -> None:
        """The port listens on `host`:`port`: the Host/Origin checks from now on."""
        self.site = SitePolicy.for_server(host, port, *self._allowed)

    def check(self, head: Head, rules: BodyRules | None = None) -> Admitted | Refusal:
        """Every screen, in order, on a request's head: a refusal, or what to read of it
        (`rules`: this request's body rules, when not the port's: a request whose caller
        was verified before it came here)."""
        refused = self.check_site(head)
        if refused is not None:
            return refused
        rule = (rules or self.rules)(head)
        if rule is None:
            return Admitted()
        if rule.refused is not None:
            return rule.refused
        length = body_length(head, rule)
        if isinstance(length, Refusal):
            return length
        slot = self.bodies.take(rule.key)
        if isinstance(slot, Refusal):
            return slot
        return Admitted(length, slot)

    def check_site(self, head: Head) -> Refusal | None:
        """The Host and Origin checks of `site` (origin.py): a refusal, or None to go on."""
        site = self.site
        if site is None:
            return None
        hosts = head.values("Host")
        origins = head.values("Origin")
        if len(hosts) > 1 or len(origins) > 1:
            return Refusal(400, "bad_request", "a request has at most one Host and one Origin")
        host = hosts[0] if hosts else None
        if not site.host_allowed(host):
            return Refusal(421, "host_not_allowed", site.host_refusal(host or ""))
        origin = origins[0] if origins else None
        if not site.origin_allowed(origin, host):
            return Refusal(403, "origin_not_allowed", site.origin_refusal(origin or ""))
        return None


def body_length(head: Head, rule: BodyRule) -> int | Refusal:
    """The body length a head announces for a body route: its Content-Length, at most the
    rule's limit; else the refusal (411 without one, 413 above the limit, 400 if unreadable)."""
    if head.values("Transfer-Encoding"):
        return Refusal(
            411,
            "length_required",
            "send the body with a Content-Length (chunked bodies are not read here), of at "
            f"most {rule.limit} bytes ({rule.option})",
        )
    lengths = {value.strip() for value in head.values("Content-Length")}
    if not lengths:
        return 0
    text = lengths.pop()
    if lengths or not text.isdigit():
        return Refusal(400, "bad_request", "a request has at most one Content-Length, a number")
    length = int(text)
    if length > rule.limit:
        return Refusal(
            413,
            ErrorCode.TOO_LARGE,
            f"the body has {length} bytes; this route takes at most {rule.limit} "
            f"({rule.option}): send less",
        )
    return length
