"""The WebSocket + HTTP service: sessions, stream fan-out, roles and tokens.

Its folders, one concern each, in the order a frame meets them:

- :mod:`~areasync.service.gate`: what may come in and who may do what (screens, the pre-hello
  pool, tokens, the role x frame matrix, rate and memory limits);
- :mod:`~areasync.service.connection`: one client from hello to close: the sans-I/O
  :class:`ConnectionCore` (``protocol.py``), its asyncio layer (``websocket.py``), and
  ``requests.py``, where a request (a tool call included) meets its session;
- :mod:`~areasync.service.sessions`: the registry and its sessions (each a Simulation, a hub,
  tokens and clients), judged sessions, a session's bounds;
- :mod:`~areasync.service.fanout`: a session's stream, encoded once, to every subscriber;
- :mod:`~areasync.service.durability`: journals, the state directory, restore and fork;
- :mod:`~areasync.service.http`: plain HTTP on the same port (health, API, metrics, page);
- :mod:`~areasync.service.adapters`: OpenEnv, gaia2-cli and MCP onto the same sessions;
- :mod:`~areasync.service.dashboard`: the dashboard's static files.

Beside them: :mod:`~areasync.service.config` (every knob, :class:`ServiceConfig`),
:mod:`~areasync.service.metrics` (Prometheus counters),
:mod:`~areasync.service.starting` (what starting a server needs that imports no ARE: its
errors, the host it shows, the address it listens on), and
:mod:`~areasync.service.server` (:class:`Service`, which puts them together).
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
