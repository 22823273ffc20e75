"""Gaia2's LLM judge for a benchmark-imported scenario, set up by ARE's own preprocessing.

Why: `are-benchmark run` scores a Gaia2 scenario with ARE's `GraphPerEventJudge`: it imports
the JSON (`import_from_json_to_benchmark`), then `preprocess_scenario_from_config` runs the
scenario once in oracle mode for the judge's reference, builds the judge from the
`--judge_*` options (`create_judge_engine`, `GraphPerEventJudgeConfig`), sets the scenario's
duration (1,800 s; 420 s for the Time capability), hangs each later turn on a condition that
runs the judge once the agent has ended the previous turn (a rejected turn stops the run),
and makes `scenario.validate` the judge's verdict on the last turn. A session scored "as
`are-benchmark` would" needs exactly that, so `preprocess_judged` makes that very call, with
the `ScenarioRunnerConfig` `are-benchmark run` gives it, and changes three things around it:

* the oracle pre-run: ARE runs it in an `Environment` on a thread of its own, and a thread
  starts with an empty `contextvars.Context`, outside the session's sandbox
  (`areasync.bridge.sandbox.audit`), while it runs the scenario's own events, which come from
  untrusted JSON. For the length of the call, the `Environment` ARE's preprocessing builds is
  `_PreRunEnvironment`: ARE's, whose event-loop thread runs in a copy of its creator's
  context (the import's, sandboxed). This swaps one module attribute of ARE's, process-wide
  while the call runs (as `areasync.gaia2.runner.virtual_clock` does for the benchmark
  runner): do not run both in one process at the same time;
* the judge's construction: ARE compiles its prompt templates thousands of times per judge
  (seconds of CPU); `templates.py` compiles each once per process, for the same text;
* the judge's LLM: its engine's `chat_completion` (every request the judge makes goes through
  it) becomes `JudgeLink.chat_completion`, which hands ARE's own call to `offload`: a session
  run through `areasync.bridge.offload.bridged` awaits it in a worker thread while the event
  loop serves on.

When the judge's LLM fails (the endpoint is down, refuses, times out), ARE's judge raises:
`JudgeLink` turns the failure into `JudgeError`, saying which judge failed and why (ARE's own
`LLMEngineException` says "Auth error in litellm." whatever happened), and remembers it, so
that the session's final validation reports it without asking the failed endpoint again.

The judge's answers are the one input of a judged session that nothing else decides: a replay
(a restart, a fork) must get the very answers the live run got, never ask the model again. So
every call is named by a digest of what it asks (`call_digest`: the model, the messages, the
stop sequences, ARE's options) and goes through the session's `JudgeAnswers` when it has one:
`recorded` answers a call from the session's records (a replay), else the model is asked and
`answered` logs the answer (or the failure) as the session's record, before ARE sees it.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import threading
from typing import Any, Protocol
from unittest.mock import patch

import msgspec
from are.simulation.environment import Environment

from areasync.bridge.determinism import outside_session
from areasync.bridge.judge.options import JudgeOptions
from areasync.bridge.judge.templates import cached_templates
from areasync.bridge.offload import OffloadRefusedError, offload
from areasync.protocol.records import Validation


class JudgeError(Exception):
    """The judge's LLM failed, or could not be asked; the message says which judge and why."""


class _PreRunEnvironment(Environment):
    """ARE's Environment, its event-loop thread run in a copy of its creator's context."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._creator_context = contextvars.copy_context()

    def _event_loop(self) -> None:
        self._creator_context.run(super()._event_loop)


# One preprocessing at a time swaps ARE's `Environment` (see the module docstring).
_swap_lock = threading.Lock()


def runner_config(options: JudgeOptions) -> Any:
    """The `ScenarioRunnerConfig` `are-benchmark run` hands ARE's preprocessing for one
    scenario run by an agent (not `--oracle`, not `judge`, no `--noise`), with this judge."""
    from are.simulation.agents.are_simulation_agent_config import LLMEngineConfig
    from are.simulation.scenarios.config import ScenarioRunnerConfig

    return ScenarioRunnerConfig(
        oracle=False,
        judge_only=False,
        judge_engine_config=LLMEngineConfig(
            model_name=options.model, provider=options.provider, endpoint=options.endpoint
        ),
    )


def preprocess_judged(scenario: Any, options: JudgeOptions) -> JudgeLink | None:
    """ARE's `preprocess_scenario_from_config` of a benchmark-imported scenario, as
    `are-benchmark run` calls it with this judge (see the module docstring); then the judge's
    LLM calls go through `JudgeLink`. None when ARE set no judge (a scenario without oracle
    events: nothing to judge against, validation is ARE's "no validation")."""
    import are.simulation.scenarios.scenario_imported_from_json.utils as preprocessing

    # Library code, not the session's: litellm's import sets environment variables, which the
    # session's sandbox refuses. Imported once, outside it.
    contextvars.Context().run(_import_judge_modules)
    config = runner_config(options)
    with (
        _swap_lock,
        patch.object(preprocessing, "Environment", _PreRunEnvironment),
        cached_templates(),
    ):
        preprocessing.preprocess_scenario_from_config(scenario, config)
    judge = getattr(scenario, "judge", None)
    if judge is None:
        return None
    return JudgeLink(options, judge)


def prepare(options: JudgeOptions) -> None:
    """Build this judge's LLM engine as ARE's preprocessing will (`create_judge_engine`), and
    discard it: ARE's judge modules and litellm are imported, and a judge ARE cannot build
    raises here. Blocking (seconds, once per process): call it from a worker thread."""
    from are.simulation.validation.configs import create_judge_engine

    _import_judge_modules()
    create_judge_engine(runner_config(options).judge_engine_config)


def _import_judge_modules() -> None:
    import are.simulation.agents.llm.litellm.litellm_engine
    import are.simulation.validation  # noqa: F401 - ARE's judges, imported for their side


def judge_link(scenario: Any) -> JudgeLink | None:
    """The `JudgeLink` of a scenario `preprocess_judged` gave a judge, else None."""
    judge = getattr(scenario, "judge", None)
    engine = getattr(getattr(judge, "config", None), "engine", None)
    call = getattr(engine, "chat_completion", None)
    owner = getattr(call, "__self__", None)
    return owner if isinstance(owner, JudgeLink) else None


class JudgeAnswers(Protocol):
    """Where a session keeps its judge's answers (`areasync.simulation.answers`): payloads
    `{"call": digest, "answer": [text, metadata]}` or `{"call": digest, "failure": why}`."""

    def recorded(self, call: str) -> dict[str, Any] | None:
        """The payload recorded for this call, next in the session's records (a replay), or
        None: ask the model."""

    def answered(self, payload: dict[str, Any]) -> None:
        """The model answered (or failed): log it."""


def call_digest(model: str, messages: Any, stops: Any, options: dict[str, Any]) -> str:
    """What a judge call asks, as a SHA-256 hex digest (same call, same digest, any process)."""
    asked = msgspec.json.encode([model, messages, stops, options], enc_hook=repr, order="sorted")
    return hashlib.sha256(asked).hexdigest()


class JudgeLink:
    """A session's judge: its options, and its LLM calls, routed through `offload`."""

    def __init__(self, options: JudgeOptions, judge: Any) -> None:
        self.options = options
        self.judge = judge
        # The first failure of the judge's LLM in this session (sticky: see the module doc).
        self.failure: str | None = None
        # The session's record of answers (set by the session that owns this judge).
        self.answers: JudgeAnswers | None = None
        engine = judge.config.engine  # the one engine every part of ARE's judge calls
        self._are_call = engine.chat_completion  # ARE's own, bound to its engine
        engine.chat_completion = self.chat_completion

    def chat_completion(
        self, messages: list[dict[str, Any]], stop_sequences: Any = None, **kwargs: Any
    ) -> Any:
        """ARE's engine call, answered from the session's records (a replay) or awaited off
        the event loop by the session's bridge, its answer logged."""
        if self.failure is not None:
            raise JudgeError(self.failure)
        stops = [] if stop_sequences is None else stop_sequences
        digest = call_digest(self.options.model, messages, stops, kwargs)
        answers = self.answers
        recorded = None if answers is None else answers.recorded(digest)
        if recorded is not None:
            return self._as_recorded(recorded)
        # Outside the session's ids: a replay answers it from the records, making no request.
        call = functools.partial(
            outside_session, functools.partial(self._are_call, messages, stops, **kwargs)
        )
        try:
            text, metadata = offload(call)
        except OffloadRefusedError as exc:
            # Not an answer: the model was never asked (nothing logged; a restart asks it).
            self.failure = (
                f"the judge ({self.options.describe()}) was not asked: the session was ended "
                f"outside its command lane (a server shutting down) ({exc})"
            )
            raise JudgeError(self.failure) from exc
        except Exception as exc:
            self.failure = f"the judge ({self.options.describe()}) failed: {_causes(exc)}"
            if answers is not None:
                answers.answered({"call": digest, "failure": self.failure})
            raise JudgeError(self.failure) from exc
        plain = _plain(metadata)
        if answers is not None:
            answers.answered({"call": digest, "answer": [text, plain]})
        return text, plain

    def _as_recorded(self, payload: dict[str, Any]) -> tuple[str, Any]:
        """A recorded answer as the engine gave it, or its recorded failure raised again."""
        failure = payload.get("failure")
        if failure is not None:
            self.failure = str(failure)
            raise JudgeError(self.failure)
        text, metadata = payload["answer"]
        return str(text), metadata

    def failed_validation(self) -> Validation:
        """The validation of a session whose judge failed: ARE's result when its judge raises
        (`BaseJudge.validate_current_turn`: not a success, the exception, rationale
        "Exception"), as `Simulation` reports it."""
        return Validation(
            success=False,
            exception=f"{JudgeError.__name__}: {self.failure}",
            rationale="Exception",
        )


def _plain(metadata: Any) -> Any:
    """The engine's metadata in JSON types, as a record keeps it (ARE's LiteLLM gives None)."""
    if metadata is None:
        return None
    return msgspec.json.decode(msgspec.json.encode(metadata, enc_hook=repr))


def _causes(exc: BaseException) -> str:
    """Why `exc` happened: its root cause first, then what ARE raised (ARE's engine wraps every
    litellm failure in "Auth error in litellm.", whatever it was)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    root, outer = _one_line(chain[-1]), _one_line(exc)
    return root if root == outer else f"{root} (raised as {outer})"


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
