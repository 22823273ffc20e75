"""The WebSocket + HTTP service: sessions, stream fan-out, roles and tokens.

Modules, each with one job:

- :mod:`~areasync.service.config`: every knob and limit (:class:`ServiceConfig`);
- :mod:`~areasync.service.gate.auth`: per-session role tokens and the admin token;
- :mod:`~areasync.service.gate.roles`: which role may send which frame;
- :mod:`~areasync.service.fanout.hub`: a session's stream, encoded once, fanned out to cursors;
- :mod:`~areasync.service.sessions.session`: a session (Simulation + hub + tokens + clients);
- :mod:`~areasync.service.sessions.registry`: every session of the server: create, stop, forget;
- :mod:`~areasync.service.connection.protocol`: a connection's protocol state machine, with no I/O;
- :mod:`~areasync.service.connection.sessionview`: a session as that core sees it;
- :mod:`~areasync.service.connection.hello`: whether a hello may join (the table of refusals);
- :mod:`~areasync.service.connection.door`: the server's side of a hello (tokens, admission);
- :mod:`~areasync.service.connection.requests`: what each request does to its session;
- :mod:`~areasync.service.connection.websocket`: the asyncio layer around the core, hello to close;
- :mod:`~areasync.service.fanout.outbox`: a connection's stream cursor, reply queue and writer;
- :mod:`~areasync.service.connection.wire`: frame bytes, batching, and every use of websockets' internals;
- :mod:`~areasync.service.gate.limits`: the per-connection request-rate bucket;
- :mod:`~areasync.service.http.routes`: plain HTTP GET on the same port (health, API, metrics, page);
- :mod:`~areasync.service.http.answers`: the HTTP answers every port's routes share;
- :mod:`~areasync.service.metrics`: Prometheus counters;
- :mod:`~areasync.service.server`: :class:`Service`, which puts them together.
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
