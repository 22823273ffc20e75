"""Memory: tools built from the tool cache (`areasync.bridge.tool_cache`) keep no session alive.

Every session below builds its whole tool registry through the cache (`list_tools`) and makes
a tool call; once the server forgets the sessions, they are collected, and what the cache holds
does not grow with the sessions served (one entry per app-class function, whatever the count).
"""

from __future__ import annotations

import gc
import weakref

from areasync.bridge import tool_cache
from areasync.service import Service
from tests.service.support import TUTORIAL, serving


async def serve_one(service: Service) -> tuple[weakref.ref[object], list[weakref.ref[object]]]:
    """One oracle session of the tutorial, its tools listed and one tool called, run to its end;
    weak references to its simulation and to its apps."""
    session = service.registry.create(TUTORIAL, oracle=True)
    assert session.sim.list_tools()
    await session.sim.call_tool("SystemApp__get_current_time", {})
    await session.done.wait()
    apps = [weakref.ref(app) for app in session.sim.env.apps.values()]
    return weakref.ref(session.sim), apps


async def test_sessions_built_from_the_tool_cache_are_collected() -> None:
    async with serving(mode="fast", keep_ended=0) as service:
        await serve_one(service)  # fills the cache
        gc.collect()
        entries = len(tool_cache.cached_functions())
        served = [await serve_one(service) for _ in range(12)]
        gc.collect()
        # The last session's apps are still what ARE's class-level AppTool attributes point at
        # (as without the cache: `test_memory`); every earlier one must be gone.
        alive = [sim for sim, _ in served[:-1] if sim() is not None]
        apps_alive = [app for _, apps in served[:-1] for app in apps if app() is not None]
        assert not alive
        assert not apps_alive
        assert len(tool_cache.cached_functions()) == entries
