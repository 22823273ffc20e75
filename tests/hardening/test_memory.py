"""Memory: a server that runs session after session keeps only what it means to keep.

ARE parks each app's AppTool on the app class's (shared) method, and every Action built later
picks it up, so a new session's events point at an earlier session's app, whose callbacks point
at its environment: without `areasync.bridge.scenarios.loading.detach_apps`, every session served
kept the one before it alive, and resident memory grew without bound (found by the soak,
`bench/soak.py`).
"""

from __future__ import annotations

import gc
import weakref

from areasync.service import Service
from tests.service.support import TUTORIAL, serving


async def run_session(service: Service) -> weakref.ref[object]:
    """Run one oracle session of the tutorial to its end; a weak reference to its simulation."""
    session = service.registry.create(TUTORIAL, oracle=True)
    session.sim.list_tools()  # its apps' AppTools now sit on ARE's shared methods
    await session.done.wait()
    return weakref.ref(session.sim)


async def test_a_discarded_session_is_freed_though_later_sessions_point_at_its_apps() -> None:
    async with serving(mode="fast", keep_ended=0) as service:
        first = await run_session(service)
        later = [await run_session(service) for _ in range(3)]
        gc.collect()
        assert first() is None
        assert all(ref() is None for ref in later[:-1])


async def test_memory_does_not_grow_with_sessions_served() -> None:
    from are.simulation.apps.utils.fallback_file_system import FallbackFileSystem

    async with serving(mode="fast", keep_ended=2) as service:
        for _ in range(5):
            await run_session(service)
        gc.collect()
        before = len(FallbackFileSystem._cache)
        refs = [await run_session(service) for _ in range(20)]
        gc.collect()
        alive = sum(ref() is not None for ref in refs)
        after = len(FallbackFileSystem._cache)
    assert alive <= 2  # the ended sessions the server keeps (keep_ended)
    assert after <= before + 2
