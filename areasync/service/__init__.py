"""The WebSocket + HTTP service: sessions, stream fan-out, roles and tokens.

Its parts, lowest first; each imports only the parts before it, never one after it, not even
inside a function (tests/test_import_rules.py, `SERVICE_ORDER`):

- the flat helpers: :mod:`~areasync.service.ports`, ``fdlimit.py``, ``gc_policy.py``,
  :mod:`~areasync.service.metrics` (Prometheus counters), ``background.py``;
- :mod:`~areasync.service.gate`: what may come in and who may do what (screens, the pre-hello
  pool, tokens, the role x frame matrix, rate and memory limits), and the socket beneath
  websockets (``sockets.py``, ``screened.py``: every use of its internals);
- :mod:`~areasync.service.config`: every knob, :class:`ServiceConfig` (it reads the gate's
  defaults; the gate reads it through its own protocol, ``ScreenSettings``);
- :mod:`~areasync.service.fanout`: a session's stream, encoded once (``frames.py``), to every
  subscriber;
- :mod:`~areasync.service.durability`: journals, the state directory, restore and fork;
- :mod:`~areasync.service.sessions`: the registry and its sessions (each a Simulation, a hub,
  tokens and clients), a session's bounds;
- :mod:`~areasync.service.connection`: one client from hello to close: the sans-I/O
  :class:`ConnectionCore` (``protocol.py``), its asyncio layer (``websocket.py``), and
  ``requests.py``, where a request (a tool call included) meets its session;
- :mod:`~areasync.service.dashboard`: the dashboard's static files;
- :mod:`~areasync.service.adapters`: ``openenv/`` (OpenEnv, and the MCP tool calls its episodes
  make), below :mod:`~areasync.service.http` (plain HTTP on the same port: health, API, metrics,
  page, and ``/openenv/``), below ``mcp/`` and ``gaia2cli/`` (ports of their own on http's
  capped server);
- :mod:`~areasync.service.starting` (what starting a server needs that imports no ARE: its
  errors, the host it shows, the address it listens on), then
  :mod:`~areasync.service.server` (:class:`Service`, which puts them together).

A lower part that needs something of a higher one names it as a ``Protocol`` of its own, which
the higher one implements (``stalls.Writer``, ``screens.ScreenSettings``,
``durability.kept.KeptSession``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from areasync.lazy import lazy_getattr

__all__ = ["Service", "ServiceConfig", "ServiceError"]

# Imported on first use: `areasync.service.config` (the CLI's parser reads its defaults) must
# not pay for `server`, which imports ARE.
_EXPORTS = {
    "Service": "areasync.service.server",
    "ServiceConfig": "areasync.service.config",
    "ServiceError": "areasync.service.starting",
}

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig
    from areasync.service.server import Service
    from areasync.service.starting import ServiceError


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
