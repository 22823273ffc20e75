"""areasync: an asyncio-native simulation service for Meta's Agents Research Environments.

ARE's Environment runs on a background thread that ticks a wall clock once per real second;
areasync runs it as an asyncio task on a virtual clock, streams what happens as msgspec frames,
and takes tool calls and clock controls back.

Names are imported lazily: `import areasync.client` or `areasync.protocol` (and the pytest plugin,
loaded at every pytest start) must not pay for importing ARE (about a second).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from areasync.lazy import lazy_getattr

_EXPORTS = {
    "AsyncEnvironment": "areasync.bridge.environment",
    "ScenarioError": "areasync.bridge.scenarios.loading",
    "SyncEnvironment": "areasync.bridge.sync",
    "InvalidArgsError": "areasync.bridge.tools",
    "ToolCallError": "areasync.bridge.tools",
    "ToolFailedError": "areasync.bridge.tools",
    "UnknownToolError": "areasync.bridge.tools",
    "Mode": "areasync.protocol.frames",
    "VirtualClock": "areasync.engine.clock",
    "BadStateError": "areasync.simulation",
    "InvalidRequestError": "areasync.simulation",
    "LagPolicy": "areasync.simulation",
    "LeasePolicy": "areasync.simulation",
    "Simulation": "areasync.simulation",
    "SimulationError": "areasync.simulation",
}

__all__ = [
    "AsyncEnvironment",
    "BadStateError",
    "InvalidArgsError",
    "InvalidRequestError",
    "LagPolicy",
    "LeasePolicy",
    "Mode",
    "ScenarioError",
    "Simulation",
    "SimulationError",
    "SyncEnvironment",
    "ToolCallError",
    "ToolFailedError",
    "UnknownToolError",
    "VirtualClock",
]

if TYPE_CHECKING:
    from areasync.bridge.environment import AsyncEnvironment
    from areasync.bridge.scenarios.loading import ScenarioError
    from areasync.bridge.sync import SyncEnvironment
    from areasync.bridge.tools import (
        InvalidArgsError,
        ToolCallError,
        ToolFailedError,
        UnknownToolError,
    )
    from areasync.engine.clock import VirtualClock
    from areasync.protocol.frames import Mode
    from areasync.simulation import (
        BadStateError,
        InvalidRequestError,
        LagPolicy,
        LeasePolicy,
        Simulation,
        SimulationError,
    )


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
