"""`Simulation`: an ARE scenario run by an asyncio task on the virtual clock.

This is the async driver over the sans-I/O `Engine`. It owns the session's stream (every
completed event, notification and clock change, numbered by `seq`), the agents' busy leases
(fast mode), and the controls. All mutation of the ARE environment happens on the event loop
(there is no thread), under the session's one ordered command lane, `Simulation.lane`: a
FIFO lock that every mutating method (tool calls, user messages, controls) and each batch of
the driver's steps holds while it runs. Commands therefore apply atomically and in the order
they arrive, never inside a tick or inside one another, even when one of them yields:

- a long `jump`, `next_event` or `tick(n)` fires its items in pieces of `control_budget` wall
  seconds and yields to the event loop between them (other sessions, sockets and keepalives
  go on; subscribers get the burst as it is made), but it keeps the lane throughout, so
  another command of this session, or the driver, runs after it, at the time it left. Once
  started, such a control runs to its end even if its caller is cancelled (a half-done jump
  is no state to leave a session in), and it holds the realtime clock, so that the wall time
  its yields take does not flow into simulated time: it fires exactly what one uninterrupted
  jump would;
- a `stop` never waits behind a long control: it announces itself before it takes its place
  in the lane (`announce_stop`; the service also announces a stop frame it has read but not
  yet run), and a long control that sees a stop announced at one of its yields ends there,
  raising `ControlInterruptedError`. What it did stays done: the items it fired stay fired
  (and streamed), the clock rests where it got to (the time of the last item it fired; a
  jump's target is not reached, so nothing is owed there), and the interruption is logged in
  `inputs`. A control that gets the lane while a stop is announced does nothing. Everything
  else keeps its place in the lane: only a stop preempts;
- `tick(n)` takes at most `max_ticks` ticks and a jump moves the clock at most `max_jump`
  simulated seconds (`next_event` too): a bigger one is refused, changing nothing, with a
  message saying to split it;
- the uncontended case costs no task switch: the lane is taken without a checkpoint when it
  is free (`CommandLane`), and a control that finishes within its budget never yields;
- `SystemApp__wait_for_notification` holds the lane for its synchronous part only, never
  while it waits.

    sim = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    await sim.run()

    async with Simulation.load(path, mode="manual") as sim:
        async for item in sim.stream(since=0): ...
        await sim.call_tool("EmailClientApp__send_email", {...})
        await sim.jump(by=60)

The package's modules: `simulation`, the `Simulation` itself, which holds its parts and
delegates to them (its docstring lists them: `record_book`, `publisher`, `ending`, `lease_keeper`,
`driver`, `controls`, `agent`, `judging`); `input_records`, what a replay consumes; `replay`
and `snapshots`, a session made again from them; `lane`, `stops`, `wakeup`, `options`,
`loading`, `answers`, `errors`: the pieces the parts use.
"""

from areasync.policies import MAX_JUMP_S, MAX_TICKS, LagPolicy, LeasePolicy
from areasync.protocol.records import WAIT_TOOL
from areasync.simulation.ending import EndState
from areasync.simulation.errors import (
    BadStateError,
    ControlInterruptedError,
    InvalidRequestError,
    ReplayDivergedError,
    SimulationError,
)
from areasync.simulation.input_records import Creation, InputRecord
from areasync.simulation.judging import Judge
from areasync.simulation.lane import CommandLane
from areasync.simulation.loading import build_scenario
from areasync.simulation.options import (
    CLOCK_PUBLISH_INTERVAL_S,
    CONTROL_BUDGET_S,
    STEP_BUDGET_S,
    SimulationOptions,
    SimulationSettings,
)
from areasync.simulation.simulation import Simulation

__all__ = [
    "CLOCK_PUBLISH_INTERVAL_S",
    "CONTROL_BUDGET_S",
    "MAX_JUMP_S",
    "MAX_TICKS",
    "STEP_BUDGET_S",
    "WAIT_TOOL",
    "BadStateError",
    "CommandLane",
    "ControlInterruptedError",
    "Creation",
    "EndState",
    "InputRecord",
    "InvalidRequestError",
    "Judge",
    "LagPolicy",
    "LeasePolicy",
    "ReplayDivergedError",
    "Simulation",
    "SimulationError",
    "SimulationOptions",
    "SimulationSettings",
    "build_scenario",
]
