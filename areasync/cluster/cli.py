"""`areasync serve --ray ADDRESS`: this process connects to the Ray cluster and is its router.

It starts a host on every node (`router.py`), creates the `--scenario` sessions on the least
loaded hosts unless the cluster already holds live sessions (the same command run again after
a stop: their journals were restored instead), prints where to connect, and serves until
SIGINT/SIGTERM, which stops every host with its sessions suspended in their journals (the next
start restores them).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Sequence

import ray

from areasync.cluster.nodes import NAMESPACE
from areasync.cluster.router import Router
from areasync.protocol.errors import ProtocolError
from areasync.protocol.merged import PlacedSession
from areasync.service.config import ServiceConfig

__all__ = ["serve_cluster"]


def serve_cluster(
    address: str,
    config: ServiceConfig,
    scenarios: Sequence[str],
    workers: int | None = None,
    require_confinement: bool = False,
) -> int:
    """Run the router on the cluster at `address` until a signal; the exit status. Each node
    runs `workers` session workers (None: one per CPU of that node; 0: its sessions in its
    host's process), confined as on one machine (`require_confinement`: refused unless
    wholly)."""
    if config.state_dir is None:
        print(
            "areasync serve: --ray needs --state-dir DIR on a directory every node mounts "
            "(a lost node's sessions are restored from their journals there)",
            file=sys.stderr,
        )
        return 2
    try:
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        print(
            f"areasync serve: cannot join the Ray cluster at {address!r} ({exc}); start one "
            "with `ray start --head` or give its address (HOST:PORT)",
            file=sys.stderr,
        )
        return 2
    try:
        router = Router(config, workers=workers, require_confinement=require_confinement)
        return asyncio.run(_serve(router, config, scenarios))
    finally:
        ray.shutdown()


async def _serve(router: Router, config: ServiceConfig, scenarios: Sequence[str]) -> int:
    await router.start()
    created = []
    try:
        if not router.where:
            for scenario in scenarios:
                created.append(await router.create_session(scenario=scenario, mode=config.mode))
    except ProtocolError as exc:
        print(f"areasync serve: {exc.message}", file=sys.stderr)
        await router.stop()
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    # Only now: a signal sent once the banner is read must find these handlers, not Ray's
    # (its driver's SIGTERM handler exits with status 15 at once, stopping no host).
    print(banner(router, created), flush=True)
    await stop.wait()
    print("\nareasync: stopping the cluster's hosts (sessions suspended)...", file=sys.stderr)
    suspended = await router.stop()
    print(f"areasync: {suspended} session(s) suspended in their journals", file=sys.stderr)
    return 0


def banner(router: Router, created: list[PlacedSession]) -> str:
    """Where to connect: the router, its nodes, the sessions created and their tokens."""
    lines = [
        f"areasync cluster router on {router.http_url} ({len(router.hosts)} node(s))",
        f"  admin token: {router.admin_token}",
        f"  sessions:    {router.http_url}/api/sessions (admin token; every node's sessions)",
    ]
    for link in router.hosts.values():
        workers = link.info.workers
        held = f"{workers} session worker(s)" if link.info.front else "one process, unconfined"
        lines.append(f"  node {link.node_id[:12]}  {link.info.http_url}  ({held})")
    if router.where and not created:
        lines.append(f"  {len(router.where)} session(s) restored from their journals")
    for session in created:
        lines.append(f"session {session.session_id} on node {str(session.node)[:12]}")
        lines.append(f"  {session.url}")
        lines += [f"  {role:<11} {token}" for role, token in session.tokens.items()]
        if session.gaia2_url is not None:
            lines.append(f"  gaia2-cli   {session.gaia2_url}  (the user's token, on its node)")
        if session.gaia2_cli_url is not None:
            lines.append(
                f"  gaia2-cli   {session.gaia2_cli_url}  (its own port, on the loopback of "
                f"{session.node_host})"
            )
        if session.mcp_url is not None:
            lines.append(f"  MCP         {session.mcp_url}  (Authorization: Bearer <agent token>)")
    lines.append("Ctrl-C stops every host: live sessions are suspended in their journals.")
    return "\n".join(lines)
