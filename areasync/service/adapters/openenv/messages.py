"""OpenEnv's messages and ARE's actions, as data: parsing, observations, errors, the schema.

No I/O: a test drives it with dicts. OpenEnv's server (`openenv.core.env_server.http_server`)
reads `{"type": "reset" | "step" | "state" | "close", "data": ...}` on `/ws` and answers
`{"type": "observation" | "state" | "error", "data": ...}`; an observation's data is
`{"observation": {...}, "reward": float | None, "done": bool}`, which `EnvClient._parse_result`
reads, and an error's is `{"message": ..., "code": ...}` with OpenEnv's `WSErrorCode` values.

A step's data is one ARE action, told apart by `action_type`, as the ARE environment planned
for OpenEnv has them: `initialize` (a scenario), `tick{num_ticks}`, `list_apps`,
`call_tool{app_name, tool_name, tool_args, advance_time}` and `get_state{include_event_log,
include_event_queue, include_apps_state}`. Each becomes the areasync request it means
(`action_frames`); its observation carries the clock, the action's outcome and exactly the
notifications since the previous observation.
"""

from __future__ import annotations

import enum
import json
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from areasync.journal.sources import (
    DatasetTask,
    InlineScenario,
    RegisteredScenario,
    ScenarioFile,
    ScenarioSource,
)
from areasync.protocol.frames import (
    CallTool,
    ClientFrame,
    GetState,
    ImportMode,
    ListTools,
    Mode,
    Tick,
)


class ErrorCode(enum.StrEnum):
    """OpenEnv's `WSErrorCode` values (what its clients print and may test for)."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    SESSION_ERROR = "SESSION_ERROR"


class OpenEnvError(Exception):
    """A request answered with OpenEnv's error shape; nothing was changed by it."""

    def __init__(self, code: ErrorCode, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra

    def data(self) -> dict[str, Any]:
        return {"message": self.message, "code": self.code.value, **self.extra}


# -- ARE's actions ----------------------------------------------------------------------------


class _Action(msgspec.Struct, tag_field="action_type", forbid_unknown_fields=True, kw_only=True):
    metadata: Annotated[
        dict[str, Any], Meta(description="Free-form metadata, echoed in the observation.")
    ] = msgspec.field(default_factory=dict)


class InitializeAction(_Action, tag="initialize", kw_only=True):
    """Start an episode on a scenario, named by exactly one of: a registered id (`scenario`),
    ARE/Gaia2 JSON (`scenario_json`, as text or as an object), `scenario_path` (the OpenEnv ARE
    plan's: a registered id, or a .json file under the server's `--scenario-dir`, relative to
    it), or a task of the Task API (`split` and `index`). Only a URL made with the admin token
    may."""

    scenario: str | None = None
    scenario_json: str | dict[str, Any] | None = None
    scenario_path: str | None = None
    split: str | None = None
    index: Annotated[int, Meta(ge=0)] | None = None
    mode: Annotated[
        Mode,
        Meta(
            description=(
                "fast (default): time stands still while the agent acts and jumps to the next "
                "due item once it lets time advance; manual: only `tick` moves it; realtime."
            )
        ),
    ] = Mode.FAST
    speed: Annotated[float, Meta(gt=0)] = 1.0
    oracle: bool = False
    import_mode: ImportMode | None = None


class TickAction(_Action, tag="tick", kw_only=True):
    """Run `num_ticks` ticks of ARE's time-based loop (`time_increment_in_seconds` each)."""

    num_ticks: Annotated[int, Meta(ge=1)] = 1


class ListAppsAction(_Action, tag="list_apps", kw_only=True):
    """The session's apps and their tools (names, arguments, descriptions)."""


class CallToolAction(_Action, tag="call_tool", kw_only=True):
    """Call an ARE tool: `app_name` and `tool_name` (or `tool_name` alone as `App__tool`)."""

    app_name: str = ""
    tool_name: str
    tool_args: dict[str, Any] = msgspec.field(default_factory=dict)
    advance_time: Annotated[
        bool,
        Meta(
            description=(
                "After the call, let simulated time move: fast mode ends the agent's turn (time "
                "runs to the next due item; a notification gives the turn back; one the agent "
                "has not been shown yet keeps it: `metadata.time_advanced` false), manual mode "
                "ticks once (when the credential may drive the clock). false: time stays put."
            )
        ),
    ] = True


class GetStateAction(_Action, tag="get_state", kw_only=True):
    """The environment's state: apps' state, completed events, events still queued."""

    include_event_log: bool = True
    include_event_queue: bool = False
    include_apps_state: bool = True


AreAction = InitializeAction | TickAction | ListAppsAction | CallToolAction | GetStateAction

_ACTION_TYPES = ", ".join(sorted(cls.__struct_config__.tag for cls in AreAction.__args__))


def parse_action(data: Any) -> AreAction:
    """A step's data as an ARE action, or OpenEnvError(VALIDATION_ERROR) saying what is wrong."""
    if not isinstance(data, dict):
        raise OpenEnvError(
            ErrorCode.VALIDATION_ERROR,
            f"a step's data is an action object with `action_type` ({_ACTION_TYPES}), got "
            f"{type(data).__name__}",
        )
    if "action_type" not in data:
        raise OpenEnvError(
            ErrorCode.VALIDATION_ERROR,
            f"the action has no `action_type`: send one of {_ACTION_TYPES} (GET <base>/schema "
            "describes each)",
        )
    try:
        return msgspec.convert(data, AreAction)
    except msgspec.ValidationError as exc:
        raise OpenEnvError(
            ErrorCode.VALIDATION_ERROR,
            f"invalid action: {exc}; action types are {_ACTION_TYPES} (GET <base>/schema "
            "describes their fields); nothing was done",
        ) from None


def parse_reset(data: Any) -> tuple[InitializeAction | None, str | None]:
    """`reset`'s data: the scenario to start (None: none named) and the episode id asked for.
    OpenEnv's own `seed` is accepted and not used (a session's seed is the server's)."""
    if data is None:
        return None, None
    if not isinstance(data, dict):
        raise OpenEnvError(ErrorCode.VALIDATION_ERROR, "reset's data must be an object")
    fields = {k: v for k, v in data.items() if k not in ("seed", "episode_id")}
    episode_id = data.get("episode_id")
    if episode_id is not None and not isinstance(episode_id, str):
        raise OpenEnvError(ErrorCode.VALIDATION_ERROR, "reset's episode_id must be a string")
    if not fields:
        return None, episode_id
    return parse_action({**fields, "action_type": "initialize"}), episode_id  # type: ignore[return-value]


def action_frames(action: AreAction) -> ClientFrame:
    """The areasync request an action (other than initialize) is carried out as."""
    match action:
        case TickAction(num_ticks=n):
            return Tick(id=0, n=n)
        case ListAppsAction():
            return ListTools(id=0)
        case CallToolAction():
            return CallTool(id=0, tool=tool_name(action), args=action.tool_args)
        case GetStateAction():
            return GetState(id=0)
    raise AssertionError(type(action).__name__)


def tool_name(action: CallToolAction) -> str:
    """ARE's public tool name: `App__tool`."""
    if not action.app_name:
        return action.tool_name
    return f"{action.app_name}__{action.tool_name}"


def scenario_source(action: InitializeAction) -> ScenarioSource:
    """What an initialize names; exactly one way, or VALIDATION_ERROR."""
    text = action.scenario_json
    if isinstance(text, dict):
        text = json.dumps(text)
    named: list[ScenarioSource] = []
    if action.scenario is not None:
        named.append(RegisteredScenario(action.scenario))
    if text is not None:
        named.append(InlineScenario.of(text))
    if action.scenario_path is not None:
        named.append(ScenarioFile(action.scenario_path))
    if action.split is not None and action.index is not None:
        named.append(DatasetTask(action.split, action.index))
    elif (action.split is None) != (action.index is None):
        raise OpenEnvError(
            ErrorCode.VALIDATION_ERROR,
            "a task is named by both `split` and `index` (GET <base>/areasync/splits lists "
            "the splits); nothing was done",
        )
    if len(named) != 1:
        raise OpenEnvError(
            ErrorCode.VALIDATION_ERROR,
            "initialize needs exactly one of `scenario` (a registered scenario id), "
            "`scenario_json` (ARE/Gaia2 scenario JSON, as text or an object), `scenario_path` "
            "(a registered id, or a .json file under the server's --scenario-dir) and "
            "`split` with `index` (a Task API task)",
        )
    return named[0]


# -- messages ---------------------------------------------------------------------------------

MESSAGE_TYPES = ("reset", "step", "state", "close")


def parse_message(raw: str | bytes) -> tuple[str, Any]:
    """A `/ws` message: (type, data), or OpenEnvError (INVALID_JSON, UNKNOWN_TYPE)."""
    try:
        message = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise OpenEnvError(ErrorCode.INVALID_JSON, f"Invalid JSON: {exc}") from None
    if not isinstance(message, dict):
        raise OpenEnvError(ErrorCode.INVALID_JSON, "a message is a JSON object with `type`")
    kind = message.get("type", "")
    if kind not in MESSAGE_TYPES:
        raise OpenEnvError(
            ErrorCode.UNKNOWN_TYPE,
            f"Unknown message type: {str(kind)[:40]}; send one of {', '.join(MESSAGE_TYPES)}",
        )
    return kind, message.get("data")


def step_result(observation: dict[str, Any], reward: float | None, done: bool) -> dict[str, Any]:
    """OpenEnv's step result: `metadata` beside the observation too, where today's client
    (`StepResult.metadata`) reads it; the observation keeps its own copy for older clients."""
    return {
        "observation": observation,
        "reward": reward,
        "done": done,
        "metadata": observation.get("metadata"),
    }


def observation_message(observation: dict[str, Any], reward: float | None, done: bool) -> str:
    data = step_result(observation, reward, done)
    return msgspec.json.encode({"type": "observation", "data": data}).decode()


def state_message(state: dict[str, Any]) -> str:
    return msgspec.json.encode({"type": "state", "data": state}).decode()


def error_message(error: OpenEnvError) -> str:
    return msgspec.json.encode({"type": "error", "data": error.data()}).decode()


# -- the schema -------------------------------------------------------------------------------


class AreObservation(msgspec.Struct, kw_only=True):
    """What each reset and step observes (OpenEnv's `observation`)."""

    current_time: float
    tick_count: int
    action_success: bool
    action_result: dict[str, Any] | None
    action_error: str | None
    notifications: Annotated[
        list[dict[str, Any]],
        Meta(description="Exactly the notifications since the previous observation."),
    ]
    environment_state: str  # SETUP | RUNNING | PAUSED | STOPPED | FAILED
    event_queue_length: int
    event_log_length: int
    available_apps: list[str] | None
    metadata: dict[str, Any]


class AreState(msgspec.Struct, kw_only=True):
    """OpenEnv's `state`: the episode and its session."""

    episode_id: str | None
    step_count: int
    session_id: str | None
    scenario_loaded: bool
    scenario_id: str | None
    current_time: float
    tick_count: int
    environment_state: str


def schema() -> dict[str, Any]:
    """`GET <base>/schema`: OpenEnv's SchemaResponse (action, observation, state)."""

    def one(kind: Any) -> dict[str, Any]:
        (out,), components = msgspec.json.schema_components([kind])
        return {**out, "$defs": components} if components else out

    return {"action": one(AreAction), "observation": one(AreObservation), "state": one(AreState)}
