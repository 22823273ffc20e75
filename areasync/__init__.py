"""areasync: an asyncio-native simulation service for Meta's Agents Research Environments.

ARE's Environment runs on a background thread that ticks a wall clock once per real second;
areasync runs it as an asyncio task on a virtual clock, streams what happens as msgspec frames,
and takes tool calls and clock controls back.
"""

from areasync.bridge.environment import AsyncEnvironment
from areasync.bridge.scenarios import ScenarioError
from areasync.bridge.sync import SyncEnvironment
from areasync.bridge.tools import InvalidArgsError, ToolCallError, ToolFailedError, UnknownToolError
from areasync.loop.clock import ClockMode, VirtualClock
from areasync.simulation import (
    BadStateError,
    InvalidRequestError,
    LagPolicy,
    LeasePolicy,
    Simulation,
    SimulationError,
)

__all__ = [
    "AsyncEnvironment",
    "BadStateError",
    "ClockMode",
    "InvalidArgsError",
    "InvalidRequestError",
    "LagPolicy",
    "LeasePolicy",
    "ScenarioError",
    "Simulation",
    "SimulationError",
    "SyncEnvironment",
    "ToolCallError",
    "ToolFailedError",
    "UnknownToolError",
    "VirtualClock",
]
