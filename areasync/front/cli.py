"""`areasync serve --workers N`: the front process's main, its banner and its signals.

SIGINT and SIGTERM are the front's (`signals.py`; workers ignore Ctrl-C, which the
terminal sends to the whole process group): the front asks every worker to stop, then ends
what has not within the shutdown's bound (`server.py`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from urllib.parse import quote

from areasync.front.server import Front
from areasync.protocol.frames import Role
from areasync.service.adapters.gaia2cli.bare import banner_lines
from areasync.service.adapters.gaia2cli.paths import adapter_url
from areasync.service.adapters.openenv.paths import base_url as openenv_base_url
from areasync.service.config import ServiceConfig
from areasync.service.starting import ServiceError
from areasync.sessionworker.answers import Banner
from areasync.signals import ShutdownSignals
from areasync.workers.confine import probe

__all__ = ["banner", "serve_front"]


def serve_front(
    config: ServiceConfig,
    workers: int,
    scenarios: Sequence[str],
    shutdown_within: float,
    *,
    require_confinement: bool = False,
) -> int:
    """Run the front until a signal (the whole shutdown bounded by `shutdown_within`
    seconds); the exit status. `require_confinement`: refuse to start where the kernel
    cannot confine the workers wholly."""
    try:
        asyncio.run(_main(config, workers, scenarios, shutdown_within, require_confinement))
    except ServiceError as exc:
        print(f"areasync serve: {exc}", file=sys.stderr)
        return 2
    return 0


async def _main(
    config: ServiceConfig,
    workers: int,
    scenarios: Sequence[str],
    shutdown_within: float,
    require_confinement: bool,
) -> None:
    front = Front(config, workers, scenarios, require_confinement=require_confinement)
    signals = ShutdownSignals(
        saying="stopping the session workers, suspending their sessions in their journals",
        answer_within=config.shutdown_timeout,
        shutdown_within=shutdown_within,
    )
    signals.install()
    async with front:
        print(banner(front, await front.banner_words()), flush=True)
        await signals.taken()
    if front.suspended and config.state_dir is not None:
        print(
            f"areasync: {front.suspended} session(s) suspended in their journals; start "
            f"again with --state-dir {config.state_dir} to resume them",
            file=sys.stderr,
            flush=True,
        )


def banner(front: Front, words: Banner) -> str:
    """What `areasync serve --workers N` prints: URLs and tokens, and what the workers say
    of their sessions and of the judge (`words`), as one process prints them."""
    lines = [
        f"areasync serving on {front.http_url} (WebSocket protocol areasync/1), sessions in "
        f"{len(front.pool.workers)} worker processes",
        f"session {probe().describe()}",
        "",
        f"  dashboard:   {front.dashboard_url()}",
        f"  OpenEnv:     {openenv_base_url(front.http_url, front.tokens.admin)}  "
        "(a fresh session per connection)",
        f"  admin token: {front.tokens.admin}  (every role of every session; "
        "fix it with --token or AREASYNC_TOKEN)",
        "",
        *words.judge,
    ]
    for session_id, worker in sorted(front.seats.where.items()):
        described = words.sessions.get(session_id)
        how = worker if described is None else f"{described.summary}; {worker}"
        lines.append(f"session {session_id}  ({how})")
        lines.append(f"  {front.ws_url(session_id)}")
        tokens = front.tokens.of(session_id)
        if not tokens:
            lines.append("  its tokens are those it had before the restart")
        else:
            for role in (Role.AGENT, Role.USER, Role.OBSERVER, Role.CONTROLLER):
                lines.append(f"  {role.value:<11} {tokens[role]}")
            # OpenEnv's client takes only a base URL: the agent's token rides in its path.
            agent = openenv_base_url(front.http_url, tokens[Role.AGENT])
            lines.append(f"  OpenEnv     {agent}")
        if front.gaia2.port is not None and tokens:
            shared = adapter_url(front.gaia2_base, tokens[Role.USER])
            lines.append(f"  gaia2-cli   {shared}  (the user's token)")
        if front.gaia2_ports is not None:
            links = front.gaia2_links(session_id)
            lines += [f"  gaia2-cli   {line}" for line in banner_lines(links)]
        if front.mcp_port is not None:
            lines.append(
                f"  MCP         {front.mcp_base}/mcp/{quote(session_id, safe='')}  "
                "(Authorization: Bearer <agent token>)"
            )
        if described is not None:
            lines += described.waiting
        lines.append("")
    config = front.config
    where = config.state_dir
    lines.append(f"journals: {where.resolve() if where else 'a private temporary directory'}")
    traces = "not written" if config.trace_dir is None else str(config.trace_dir.resolve())
    lines.append(f"traces: {traces}")
    lines.append("Ctrl-C stops the server and its workers.")
    return "\n".join(lines)
