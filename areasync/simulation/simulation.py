"""`Simulation`: loading a scenario into a session, and the agent's side of it (tool calls,
the user's messages).

The rest of what a simulation does is in the classes it is made of: `SimulationCore` (state,
reading, the end), `Driver` (the asyncio task that runs the engine), `Controls` (the clock
controls).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Unpack

from areasync.bridge.environment import session_environment
from areasync.bridge.operator_files import DEFAULT_MAX_SCENARIO_BYTES
from areasync.bridge.sandbox import Sandbox
from areasync.loop.clock import WallSleep
from areasync.policies import DEFAULT_MAX_FILE_BYTES
from areasync.protocol.frames import ImportMode, Mode
from areasync.simulation.agent_side import AgentSide
from areasync.simulation.loading import ScenarioSource, load_in, sandboxed_loading
from areasync.simulation.options import SimulationOptions
from areasync.simulation.records import Creation, InputRecord
from areasync.simulation.replay import replay_into


class Simulation(AgentSide):
    """An ARE scenario on a virtual clock, driven by an asyncio task (see `areasync.simulation`)."""

    @classmethod
    def load(
        cls,
        source: ScenarioSource,
        *,
        mode: Mode | str = Mode.FAST,
        oracle: bool = False,
        speed: float = 1.0,
        exit_when_no_events: bool | None = None,
        wall: Callable[[], float] = time.monotonic,
        sleep: WallSleep | None = None,
        import_mode: ImportMode | str = ImportMode.AUTO,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_scenario_bytes: int = DEFAULT_MAX_SCENARIO_BYTES,
        sandbox: Sandbox | None = None,
        seed: int | None = None,
        created_at: float | None = None,
        **options: Unpack[SimulationOptions],
    ) -> Simulation:
        """Load a scenario (registered id, JSON path, JSON text or Scenario) ready to run.

        `oracle=True` runs the scenario's oracle events as the agent's actions (ARE's oracle
        mode); by default the run then ends when no event is left, as ARE's does.
        `import_mode` says how a JSON scenario is imported: `auto` (default), `benchmark`
        (Gaia2's runner: turns rewired so that a live agent reaches each one) or `plain`
        (ARE's plain import); see `areasync.bridge.scenarios`. The session's code runs in a
        sandbox (`areasync.bridge.sandbox`) from the moment the scenario is built: its apps may
        touch only its file-system apps' files, and read none larger than `max_file_bytes`;
        a scenario file (the operator's) may be up to `max_scenario_bytes`.
        A Scenario built by `build_scenario` comes with its `sandbox`: pass it on (it is
        cleaned up if the simulation cannot be made). `options`: the session's tuning
        (`SimulationOptions`).

        `seed` (a random one if None) makes every id the session's code draws, and
        `created_at` (the wall's epoch seconds now if None) every wall-clock read it makes
        while loading (`areasync.bridge.determinism`): with them and its records, the run can
        be replayed exactly (`sim.creation`, `sim.records`, `Simulation.replay`). A sandbox
        from `build_scenario` brings the seed and time it was built with.

        `wall` is what realtime pacing and lease deadlines read; the driver waits on the event
        loop's clock, unless `sleep` says how to wait seconds of an injected `wall`.
        """
        with sandboxed_loading(
            source,
            sandbox=sandbox,
            max_file_bytes=max_file_bytes,
            seed=seed,
            created_at=created_at,
        ) as box:
            scenario = load_in(
                box,
                source,
                import_mode=import_mode,
                oracle=oracle,
                max_scenario_bytes=max_scenario_bytes,
            )
            env = session_environment(
                scenario,
                oracle=oracle,
                exit_when_no_events=exit_when_no_events,
                mode=mode,
                speed=speed,
                wall=wall,
            )
            assert box.entropy is not None  # `sandboxed_loading` gives every sandbox one
            box.entropy.clock = env.clock
            sim = cls(scenario, env, sandbox=box, **options)
            sim.wall_sleep = sleep
            sim.creation = Creation.of(
                box.entropy,
                mode=Mode(mode),
                speed=speed,
                oracle=oracle,
                exit_when_no_events=exit_when_no_events,
                import_mode=ImportMode(import_mode),
                max_file_bytes=box.max_file_bytes,
                settings=sim.settings,
            )
            env.start_scenario(scenario)
            sim._publish_clock()
            return sim

    @classmethod
    def replay(
        cls,
        source: ScenarioSource,
        creation: Creation,
        records: Sequence[InputRecord],
        *,
        until_seq: int | None = None,
        until_time: float | None = None,
        wall: Callable[[], float] = time.monotonic,
        sandbox: Sandbox | None = None,
    ) -> Simulation:
        """The session that `creation` and `records` describe, rebuilt from `source` (the same
        scenario: its registered id, JSON, or a fresh, uninitialised Scenario), positioned where
        the original was after its last record, or at the cut (`until_seq`: the first boundary
        where the stream has reached that seq; `until_time`: nothing past that simulated time)
        to fork it. Applied synchronously, with no wall clock (`areasync.simulation.replay`);
        raises `ReplayDivergedError` if the rebuilt session logs anything differently. It comes
        back `restored`, a realtime one paused; drive it as any other (`async with`, `run`)."""
        sim = cls.load(source, wall=wall, sandbox=sandbox, **creation.load_arguments())
        replay_into(sim, records, until_seq=until_seq, until_time=until_time)
        return sim
