"""areasync on a Ray cluster: one areasync server per node, and a router users connect to.

An optional part (`pip install 'areasync[ray]'`): nothing else in areasync imports it except
`areasync serve --ray`, lazily. Why this shape (measured with Ray 2.60:
docs/topics/performance.md, "Design measurements"): a Ray actor per session costs far more
memory and start-up time than a session in a host actor per node, which costs what it costs in a
plain process; and putting Ray on the path of every frame costs several times areasync's own
server per tool call, which it keeps inside an actor. So a node's host (`host.py`) runs the
unchanged server, the router (`router.py`) places sessions and answers each WebSocket handshake
with a 307 to the session's node (`routes.py`: once per connection), and a lost node's sessions
come back on the others from their journals in a shared directory.

    router = Router(ServiceConfig(host=..., port=..., state_dir=Path("/shared/state")))
    await router.start()                        # a host on every node of the running cluster
    created = await router.create_session(scenario="scenario_tutorial", mode="fast")
    created.url                                 # ws://ROUTER/sessions/<id>: dial this, always
"""

from __future__ import annotations

try:
    import ray  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("areasync's cluster mode needs Ray: pip install 'areasync[ray]'") from exc

from areasync.cluster.host import HostLink
from areasync.cluster.placement import Load, least_loaded, spread
from areasync.cluster.router import Router

__all__ = ["HostLink", "Load", "Router", "least_loaded", "spread"]
