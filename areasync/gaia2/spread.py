"""`areasync bench run`'s runs spread over places that run them in other processes.

A *place* runs one scenario run, given as ARE's JSON (`remote.py`), in a process of its own
and answers with an `Answer`. There are two kinds: a worker process of this machine
(`gaia2/local.py`, `--workers N`) and a worker process of a Ray cluster's node, run by the
node's host actor (`cluster/batch.py`, `--ray`: the same pool of workers as here, on each
node, its outcomes crossing Ray as plain data, `outcome_of`). `Spread` is the driver's side,
the same for both: `dispatch` is ARE's `process_scenario` as
`runner.virtual_clock(dispatch=...)` takes it, and everything else stays in the driver,
unchanged: ARE's runner, the sweep's records, resume and retry, `output.jsonl`,
`benchmark_stats.json` and the report, so the outputs are a one-process run's.

* **Which place a run goes to:** the least loaded (`Load.key`: runs of this evaluation under
  way there plus the sessions it serves, then its memory, then its name), so a place that
  finishes its runs sooner is given more: a work queue over the places, at most
  `--max_concurrent_scenarios` runs under way over all of them.
* **A place lost mid-run** (`PlaceLost`: its process died or was killed): the run is run again
  from the start on another place, at most `RERUNS` times, and what was re-run is said on
  stderr (`Spread.reruns`). A place that does not come back (a worker of a lost Ray host) is
  given no more runs, nor is any other that went with it; a worker slot comes back (its pool
  restarts the process). A run that cannot be placed
  any more fails as a model endpoint's failure would: recorded as an infrastructure failure,
  so `--resume` runs it again.
* **A run past its budget** (`Overrun`, raised by places that bound a run's time:
  `--run-budget`) is a failed run, as ARE's own timeouts are: `output.jsonl` gives it the
  exception `RunBudgetExceeded` with the budget and how the run was ended; it is recorded, so
  `--resume` does not run it again (a run that hung once would most likely hang again; remove
  its record under `OUTPUT_DIR/.areasync/runs/` to run it again). It is said on stderr too
  (`Spread.ended`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from areasync.gaia2 import cooperative, sweep
from areasync.gaia2.remote import Answer, result_of, run_name, write_files

__all__ = [
    "RERUNS",
    "Arguments",
    "Ended",
    "Load",
    "Lost",
    "NoPlaceError",
    "Overrun",
    "Place",
    "PlaceLost",
    "Spread",
    "answer_of",
    "outcome_of",
]

RERUNS = 2  # times a run is run again after the place running it was lost
BUDGET_EXCEPTION = "RunBudgetExceeded"  # the exception type a run past its budget is given


class PlaceLost(Exception):
    """The place running the run died, or was killed, before it answered."""


class NoPlaceError(RuntimeError):
    """No place is left to run a run on."""


class Overrun(Exception):
    """The run was still going after its budget, and was ended; the text says how."""

    def __init__(self, budget_s: float, how: str) -> None:
        self.budget_s = budget_s
        super().__init__(how)


@dataclass(frozen=True)
class Lost:
    """`PlaceLost` as plain data, for a place in another process (a Ray host's worker)."""

    why: str


@dataclass(frozen=True)
class Ended:
    """`Overrun` as plain data, for a place in another process (a Ray host's worker)."""

    budget_s: float
    how: str


async def outcome_of(run: Awaitable[Answer]) -> Answer | Lost | Ended:
    """`run`'s answer, or how its place lost or ended it, as plain data."""
    try:
        return await run
    except PlaceLost as lost:
        return Lost(str(lost))
    except Overrun as overrun:
        return Ended(overrun.budget_s, str(overrun))


def answer_of(outcome: Answer | Lost | Ended) -> Answer:
    """`outcome_of`'s answer back: the answer, or `PlaceLost` / `Overrun` raised."""
    if isinstance(outcome, Lost):
        raise PlaceLost(outcome.why)
    if isinstance(outcome, Ended):
        raise Overrun(outcome.budget_s, outcome.how)
    return outcome


@dataclass
class Load:
    """What placement knows of one place."""

    sessions: int = 0  # live sessions it serves besides our runs (a Ray host's, reported once)
    rss: int = 0  # its process's resident memory, in bytes (reported once)
    running: int = 0  # runs of this evaluation under way there

    def key(self, name: str) -> tuple[int, int, str]:
        return (self.sessions + self.running, self.rss, name)


@dataclass(frozen=True)
class Arguments:
    """What ARE's `process_scenario` is given besides the scenario, as a place runs it."""

    config: Any  # ARE's MultiScenarioRunnerConfig
    agent_config_builder: Any
    agent_builder: Any

    def values(self) -> tuple[Any, Any, Any]:
        """The three, in `process_scenario`'s (and `remote.run`'s) order."""
        return (self.config, self.agent_config_builder, self.agent_builder)


class Place(Protocol):
    """Somewhere a run can run: a worker process, a Ray host."""

    name: str
    load: Load

    @property
    def comes_back(self) -> bool:
        """Lost, it runs again soon (a restarted worker), or never (a host)."""
        ...

    async def run(self, item: str, arguments: Arguments) -> Answer:
        """Run `item`; raises `PlaceLost` if the place died first, `Overrun` past a budget."""
        ...


class Spread:
    """The driver's side of runs in other processes (module docstring)."""

    def __init__(
        self,
        places: Iterable[Place],
        *,
        bounds_runs: bool = False,
        notes: list[str] | None = None,
    ) -> None:
        self.places: dict[str, Place] = {place.name: place for place in places}
        # Whether the places bound each run's time themselves (`--run-budget`): then ARE's
        # --scenario_timeout is not also applied around the dispatch in the driver.
        self.bounds_runs = bounds_runs
        # What else the places' keeper has to say (a worker pool's restarts), as it happens.
        self.notes = notes if notes is not None else []
        self.lost: list[str] = []  # places that did not come back
        self.reruns: list[str] = []  # "<scenario> run <n>: <place> was lost, ..." in order
        self.ended: list[str] = []  # "<scenario> run <n>: <how it was ended>" in order

    def dispatch(self, item: Any, **kwargs: Any) -> Any:
        """Run one run on the least loaded place; its `ScenarioValidationResult`."""
        if not isinstance(item, str):
            raise TypeError(
                "a run in another process is shipped as ARE's JSON of its scenario (its "
                "process executor's form): run without --executor_type thread"
            )
        arguments = Arguments(
            kwargs["config"], kwargs.get("agent_config_builder"), kwargs.get("agent_builder")
        )
        try:
            answer = cooperative.wait(self.run(item, arguments))
        except NoPlaceError as error:
            sweep.note_endpoint_error(error)  # an infrastructure failure: --resume reruns it
            raise
        attempt = sweep.current_attempt()
        if attempt is not None:
            attempt.endpoint_errors += answer.endpoint_errors[: sweep.MAX_ERRORS_KEPT]
            attempt.endpoint_error_count += answer.endpoint_error_count
        write_files(answer, arguments.config.output_dir)
        return result_of(answer)

    async def run(self, item: str, arguments: Arguments) -> Answer:
        """`item` on the least loaded place, again on another if that place is lost."""
        tried: set[str] = set()
        for attempt in range(RERUNS + 1):
            place = self._place(avoid=tried)
            place.load.running += 1
            try:
                return await place.run(item, arguments)
            except PlaceLost as error:
                self._lose(place, item, attempt, error)
                tried.add(place.name)
            except Overrun as overrun:
                return self._overrun(item, overrun)
            finally:
                place.load.running -= 1
        raise NoPlaceError(f"lost {RERUNS + 1} places running this run; not run again")

    def _place(self, avoid: set[str]) -> Place:
        if not self.places:
            raise NoPlaceError(
                "no place is left to run on (every host was lost, or no worker could start): "
                "fix that, then rerun the same command with --resume to run the rest"
            )
        fresh = {name: place for name, place in self.places.items() if name not in avoid}
        candidates = fresh or self.places  # run again on another place when there is one
        name = min(candidates, key=lambda name: candidates[name].load.key(name))
        return candidates[name]

    def _lose(self, place: Place, item: str, attempt: int, error: PlaceLost) -> None:
        if not place.comes_back:  # with every other place it took along (a Ray host's)
            for name in [name for name, kept in self.places.items() if not kept.comes_back]:
                del self.places[name]
                self.lost.append(name)
        again = "run again" if attempt < RERUNS else "not run again (re-runs spent)"
        self.reruns.append(f"{run_name(item)}: {error}, {again}")

    def _overrun(self, item: str, overrun: Overrun) -> Answer:
        text = f"{run_name(item)} {overrun} (--run-budget gives runs longer)"
        self.ended.append(text)
        return Answer(success=False, exception=(BUDGET_EXCEPTION, text), duration=overrun.budget_s)

    def summary(self, kind: str) -> list[str]:
        """What to say on stderr after the evaluation: re-runs and runs ended (`kind`: what a
        place is, `host` or `worker`)."""
        lines = []
        if self.reruns:
            lines.append(
                f"{len(self.reruns)} run(s) re-run after their {kind} was lost: "
                + "; ".join(self.reruns)
            )
        if self.ended:
            lines.append(
                f"{len(self.ended)} run(s) ended past their run budget (--run-budget): "
                + "; ".join(self.ended)
            )
        return lines + self.notes
