"""What an `areasync bench` command does once, at its start and its exit, kept off its runs' path.

A sweep's fixed costs are paid before its first run starts and after its last one ends; what
is here makes them cost no more than they must (docs/topics/performance.md measures them,
bench/fixed_costs.py). Both apply only when the command is its process's own (`cli.main`'s
`owns_process`: run from the command line); code calling it in-process, as tests do, gets
neither, since both act on the whole process:

* **The workers' fork server boots as the command starts** (`boot_workers`). A run in a worker
  (`--workers N`, the default) cannot start before the fork server has imported `PRELOAD`
  (ARE and LiteLLM; ARE alone for `--oracle` runs, which call no model: `ORACLE_PRELOAD`),
  and the driver cannot hand it one before it has imported ARE's CLI, whose options are the
  command's. Booted once the options were parsed, the fork server imported after the driver;
  booted here, from the command line as given (`wants_workers`), both import at once, each
  on a core. A command line that turns out to be refused leaves a fork server that ends with
  the command.
* **The process exits without a last collection** (`exit_uncollected`, `areasync/exits.py`):
  at exit, CPython's finalisation collects the whole heap, ARE's and LiteLLM's millions of
  objects, which took seconds.

This module imports nothing heavy: it runs before ARE is imported.
"""

from __future__ import annotations

from collections.abc import Sequence

from areasync.exits import exit_uncollected

__all__ = [
    "ORACLE_PRELOAD",
    "PRELOAD",
    "boot_workers",
    "exit_uncollected",
    "preload",
    "wants_workers",
]

# What the fork server imports once, so that no worker imports it: areasync's side of a run,
# and what ARE imports to load, pre-run, judge and run a scenario with its default agent and
# LiteLLM (most of a worker's import time), down to what a worker's first run imported on its
# own when these were fewer (the event loop's anyio backend, ARE's agent factory, the OpenAI
# client's chat resources), then `preloaded`, last, which freezes them out of the garbage
# collector. Not ARE's benchmark package (its CLI, Hugging Face's `datasets`): only the driver
# loads datasets. tests/gaia2/test_local.py checks that each exists, test_boot.py what they
# leave out.
PRELOAD = (
    "areasync.gaia2.remote",
    "areasync.gaia2.confinement",
    "anyio._backends._asyncio",
    "are.simulation.multi_scenario_runner",
    "are.simulation.scenario_runner",
    "are.simulation.scenarios.scenario_imported_from_json.utils",
    "are.simulation.agents.default_agent.are_simulation_main",
    "are.simulation.agents.default_agent.agent_factory",
    "are.simulation.agents.llm.litellm.litellm_engine",
    "are.simulation.agents.are_simulation_agent_config",
    "are.simulation.validation.judge",
    "are.simulation.data_handler.exporter",
    "litellm",
    "openai.resources.chat",
    "openai.lib.streaming.chat",
    "areasync.gaia2.preloaded",
)
# What only runs that call a model import: an `--oracle` command's fork server leaves it out.
MODEL_ONLY = (
    "are.simulation.agents.llm.litellm.litellm_engine",
    "litellm",
    "openai.resources.chat",
    "openai.lib.streaming.chat",
)
ORACLE_PRELOAD = tuple(name for name in PRELOAD if name not in MODEL_ONLY)

HELP = ("--help", "-h")


def _value(argv: Sequence[str], option: str) -> str | None:
    """The value of the last `option VALUE` or `option=VALUE` in `argv` ("" for a last
    `option` with no value; None: not given)."""
    found = None
    for index, token in enumerate(argv):
        if token == option:
            found = argv[index + 1] if index + 1 < len(argv) else ""
        elif token.startswith(f"{option}="):
            found = token.split("=", 1)[1]
    return found


def wants_workers(argv: Sequence[str]) -> bool:
    """Whether this command line will run its runs in worker processes, as `cli._where`
    decides it (a guess at worst: a refused command line runs nothing)."""
    if any(token in HELP for token in argv) or _value(argv, "--ray") is not None:
        return False
    workers = _value(argv, "--workers")
    if workers is not None:
        return workers.strip().isdigit() and int(workers) > 0
    return _value(argv, "--executor_type") != "thread"


def preload(*, models: bool) -> tuple[str, ...]:
    """What the fork server imports for runs that call models (`models`), or not (`--oracle`)."""
    return PRELOAD if models else ORACLE_PRELOAD


def boot_workers(argv: Sequence[str]) -> bool:
    """Start the fork server with its `preload` now if `argv` will want workers (and this
    process has none running yet); whether it was asked to start. Returns at once: the fork
    server imports in its own process."""
    if not wants_workers(argv):
        return False
    from areasync.workers.forkserver import ensure_fork_server

    ensure_fork_server(preload(models="--oracle" not in argv))
    return True
