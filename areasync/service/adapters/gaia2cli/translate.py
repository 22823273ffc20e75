"""gaia2-cli's adapter contract as plain functions: requests and session state in, replies out.

gaia2-cli (ARE's newer evaluation stack) drives an agent through an HTTP adapter: the harness
sends the task with `POST /notify`, reads the agent's answers with `GET /messages?after=<seq>`
or the `GET /events` server-sent events, and polls `GET /status` until the run is over. This
module decides everything about such a request against an areasync session, with no socket:
which route it is, whether the caller's role may use it, whether its body is valid, and what
the answer's JSON is. `http.py` is the thin asyncio layer that reads bytes, asks here, carries
out the `Act` it gets (the one call that touches the simulation goes through
`service/connection/inprocess.py`, the path of a WebSocket frame) and writes the reply; `feed.py`
keeps the session's messages.

Routes (after `/gaia2/<token>`, or `/gaia2/<admin-token>/<session-id>`, or at the root of a
session's own port, `--gaia2-ports`, as the user: `bare.py`):

==========================  ===========================  =====================================
route                       roles                        answer
==========================  ===========================  =====================================
GET  /health                every role                   {ok, connected, backend, session,
                                                         state, buffer{size, lastSeq},
                                                         sseClients}
GET  /status                every role                   daemon_status.json's fields, and
                                                         {session, state}
GET  /daemon_status.json    every role                   upstream's daemon_status.json
GET  /events.jsonl          every role                   upstream's events.jsonl
                                                         (`artifacts.py`)
GET  /messages?after=N      every role                   {ok, messages: [seq > N], lastSeq}
GET  /tools                 every role                   {ok, tools}: the session's tools
GET  /notifications?after=N every role                   {ok, notifications: [seq > N],
                                                         lastSeq}: what the agent was told
GET  /events[?after=N]      every role                   SSE: `event: chat` per message
POST /notify                user, admin                  {ok, runId}: the user writes to the
POST /send_user_message                                  agent (ARE's send_message_to_agent)
POST /send_notifications
POST /call_tool             agent, admin                 {ok, result, value, time} | {ok:
                                                         false, error}: `App__action(**args)`
                                                         on the session (`value`: ARE's as
                                                         JSON; `time`: simulated seconds then)
POST /idle                  agent, admin                 {ok}: the agent is done for now
                                                         (`{"seen": N}`: unless news came
                                                         after notification N)
POST /execute_action        nobody                       501: see below
==========================  ===========================  =====================================

The roles are those of the WebSocket frames each route stands for (`roles.py`): `/notify` is a
`send_user_message`, `/call_tool` a `call_tool`, `/idle` an `idle`; reading is open to every
token of the session. The agent's token makes its caller the session's agent (`agent.py`: its
turn in fast mode, `/idle` to end it). `/idle`'s body may say what the agent has read,
`{"seen": N}` with N the `lastSeq` of `GET /notifications` it read: a notification after it
keeps the agent's turn (it is on its way to the agent), as a WebSocket `idle{seen}` does; no
body, `{}` or no `seen` (upstream's runner sends none) ends the turn as before.
`/execute_action` is upstream's daemon firing one of the scenario's ENV events (`gaia2-eventd`'s
`_execute_via_http`); an areasync session fires its ENV events itself, on its own clock, so a
second source of them would run each twice: it is refused 501, upstream's own answer when an
adapter has no ENV dispatch ("execute_action not configured"), saying so.
Errors keep gaia2-cli's shapes: `{"ok": false, "error": "..."}` with 400 (invalid JSON, a
missing field), 404 (no such route), and, for what gaia2-cli has no word for, 401 (the token),
403 (the role), 405 (the method) and 409 (the session has ended). An action that cannot run (an
unknown app or action, arguments the tool refuses, a tool that raises) is, as in gaia2-cli, a
200 whose `ok` is false and whose `error` says why. A `/notify` or `/call_tool` meets the checks
a WebSocket frame meets, and fails as that frame would (`refusal`: 429 past the rate limit, 503
when its journal does not confirm the input), in these shapes. The adapter is no client
attached to the session: it takes none of its places (`max_connections_per_session`).

The run's lifecycle, as upstream's runner reads it. `/health`'s `connected` is true once an
agent has ever attached to the session (upstream's adapter reports its agent backend's
connection, which lasts the whole run in a container), while the oracle plays it, and once it
has ended: a runner that polls every 2 s must never miss a fast run that started and ended
between two polls, and must go on to `/status` whatever the run did. `/status` is `running`
until the stream's `ended` item has gone out, which carries the verdict (a judge's included):
terminal means the verdict is known, as upstream's daemon writes its judgment and its terminal
status in one write.

Messages are what the agent tells the user: each completed `AgentUserInterface`
`send_message_to_user` event of the session's stream, numbered 1, 2, 3... in stream order, so
that `after=N` resumes exactly after message N, whoever asks and however often (the numbering
is a function of the stream, which a restart rebuilds item for item).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from collections.abc import Sequence
from typing import Any, Final

from areasync.protocol.errors import ErrorCode
from areasync.protocol.frames import (
    CallTool,
    EventItem,
    Idle,
    NotificationItem,
    Role,
    SendUserMessage,
)
from areasync.protocol.records import Validation
from areasync.service.gate.roles import allowed

USER_APP: Final = "AgentUserInterface"
TO_USER: Final = "send_message_to_user"
BACKEND: Final = "areasync"


class Route(enum.Enum):
    HEALTH = "/health"
    STATUS = "/status"
    DAEMON_STATUS = "/daemon_status.json"
    EVENTS_JSONL = "/events.jsonl"
    MESSAGES = "/messages"
    NOTIFICATIONS = "/notifications"
    TOOLS = "/tools"
    EVENTS = "/events"
    NOTIFY = "/notify"
    CALL_TOOL = "/call_tool"
    IDLE = "/idle"
    EXECUTE = "/execute_action"


_ROUTES: Final[dict[str, tuple[str, Route]]] = {
    "/health": ("GET", Route.HEALTH),
    "/status": ("GET", Route.STATUS),
    "/daemon_status.json": ("GET", Route.DAEMON_STATUS),
    "/events.jsonl": ("GET", Route.EVENTS_JSONL),
    "/messages": ("GET", Route.MESSAGES),
    "/notifications": ("GET", Route.NOTIFICATIONS),
    "/tools": ("GET", Route.TOOLS),
    "/events": ("GET", Route.EVENTS),
    "/notify": ("POST", Route.NOTIFY),
    "/send_user_message": ("POST", Route.NOTIFY),
    "/send_notifications": ("POST", Route.NOTIFY),
    "/call_tool": ("POST", Route.CALL_TOOL),
    "/idle": ("POST", Route.IDLE),
    "/execute_action": ("POST", Route.EXECUTE),
}

# The WebSocket frame each acting route stands for: its roles are that frame's (roles.py).
_FRAME_OF: Final[dict[Route, type]] = {
    Route.NOTIFY: SendUserMessage,
    Route.CALL_TOOL: CallTool,
    Route.IDLE: Idle,
}


@dataclasses.dataclass(frozen=True)
class Reply:
    """A complete answer: an HTTP status and a JSON body."""

    status: int
    body: dict[str, Any]

    def encode(self) -> bytes:
        return json.dumps(self.body).encode()


@dataclasses.dataclass(frozen=True)
class Notify:
    """Send `message` to the agent as the user."""

    message: str


@dataclasses.dataclass(frozen=True)
class Action:
    """Call the session's tool `tool` with `args`, as its agent."""

    tool: str
    args: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Done:
    """The agent is done for now: its turn ends (`idle`), unless a notification came after
    stream seq `seen` (None: whatever came)."""

    seen: int | None = None


Act = Notify | Action | Done


def failure(status: int, error: str) -> Reply:
    return Reply(status, {"ok": False, "error": error})


# -- routing and permissions -----------------------------------------------------------------


def route_of(method: str, path: str) -> Route | Reply:
    """The route `method path` names, or the 404/405 that answers it."""
    found = _ROUTES.get(path.rstrip("/") or "/")
    if found is None:
        return Reply(
            404,
            {
                "ok": False,
                "error": f"Not found: no route {path!r}; the routes are "
                + ", ".join(f"{m} {p}" for p, (m, _) in _ROUTES.items()),
            },
        )
    wanted, route = found
    if method != wanted and not (wanted == "GET" and method == "HEAD"):
        return failure(405, f"{path} takes {wanted}, not {method}")
    return route


def permission(role: Role, route: Route) -> Reply | None:
    """None if `role` may use `route`, else the 403 saying which token may."""
    frame = _FRAME_OF.get(route)
    if frame is None or allowed(role, frame):
        return None
    who = "the session's user token" if route is Route.NOTIFY else "the session's agent token"
    return failure(
        403,
        f"a {role.value} token may not use {route.value}: use {who} (or the admin token) "
        "in the adapter URL",
    )


# -- request bodies --------------------------------------------------------------------------


def _json_object(body: bytes) -> dict[str, Any] | Reply:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return failure(400, "Invalid JSON: the body must be a JSON object")
    if not isinstance(data, dict):
        return failure(400, "Invalid JSON: the body must be a JSON object, not " + _kind(data))
    return data


def _kind(value: object) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def parse_notify(body: bytes) -> Notify | Reply:
    """`{"message": "..."}` (stripped, not empty), as gaia2-cli's adapters read it."""
    data = _json_object(body)
    if isinstance(data, Reply):
        return data
    message = data.get("message", "")
    if not isinstance(message, str) or not message.strip():
        return failure(400, 'Missing or empty "message" field: send {"message": "<text>"}')
    return Notify(message.strip())


def parse_action(body: bytes) -> Action | Reply:
    """`{"app", "action", "args"?}`: the tool `App__action`."""
    data = _json_object(body)
    if isinstance(data, Reply):
        return data
    app, action = data.get("app", ""), data.get("action", "")
    if not app or not action or not isinstance(app, str) or not isinstance(action, str):
        return failure(
            400, 'Missing \'app\' or \'action\' field: send {"app", "action", "args": {...}}'
        )
    args = data.get("args")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return failure(400, "'args' must be a JSON object of the action's arguments")
    return Action(f"{app}__{action}", args)


def parse_after(query: dict[str, str]) -> int | Reply:
    """`after=<seq>` (default 0): the last message the caller has."""
    raw = query.get("after", "0") or "0"
    try:
        after = int(raw)
    except ValueError:
        return failure(400, f"'after' must be a message seq (an integer), not {raw[:40]!r}")
    return max(after, 0)


def parse_idle(body: bytes, notified: Sequence[int]) -> Done | Reply:
    """No body, `{}`, or `{"seen": N}`: N the `lastSeq` of `GET /notifications` the agent has
    read, 0 for none. `notified`: the stream seq of each notification shown so far, in order
    (`/notifications`' numbering); an agent cannot have read past them."""
    if not body.strip():
        return Done()
    data = _json_object(body)
    if isinstance(data, Reply):
        return data
    seen = data.get("seen")
    if seen is None:
        return Done()
    if type(seen) is not int or seen < 0:
        return failure(
            400,
            "'seen' must be the lastSeq of GET /notifications the agent has read (an integer, "
            f"0 for none), not {json.dumps(seen)[:40]}",
        )
    if seen > len(notified):
        return failure(
            400,
            f"'seen' is {seen}, but {len(notified)} notifications have been shown: send the "
            "lastSeq of GET /notifications the agent has read",
        )
    return Done(notified[seen - 1] if seen else 0)


def frame_of(act: Act) -> SendUserMessage | CallTool | Idle:
    """The WebSocket frame `act` stands for: it goes the way that frame goes."""
    if isinstance(act, Notify):
        return SendUserMessage(id=0, content=act.message)
    if isinstance(act, Done):
        return Idle(id=0, seen=act.seen)
    return CallTool(id=0, tool=act.tool, args=act.args)


def act_of(route: Route, body: bytes, notified: Sequence[int] = ()) -> Act | Reply:
    """What an acting route's body asks for, or the 400 saying what is wrong with it
    (`notified`: as `parse_idle` has it)."""
    if route is Route.NOTIFY:
        return parse_notify(body)
    if route is Route.IDLE:
        return parse_idle(body, notified)
    return parse_action(body)


# The HTTP status of an error a WebSocket client would get as `error.code`; any other code is
# the request's own failure: a failed action (200, `ok` false, as gaia2-cli has it) or a 400.
_STATUS_OF: Final[dict[str, int]] = {
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.SESSION_NOT_FOUND: 404,
    ErrorCode.SESSION_ENDED: 409,
    ErrorCode.TOO_LARGE: 413,
    ErrorCode.SESSION_LIMIT_EXCEEDED: 413,  # past one of the session's bounds: no more input
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.INTERNAL: 500,
    ErrorCode.CAPACITY: 503,
}

ENDED: Final = "the session has ended: it takes no more input (GET /status has its outcome)"
INTERNAL: Final = "internal error in areasync's gaia2-cli adapter (the server's log says what)"


def refusal(code: str, message: str, *, action: bool) -> Reply:
    """The error a WebSocket client would get (`code`, `message`) for an act, in gaia2-cli's
    shape; `action`: the act is a `/call_tool` (else a `/notify`)."""
    status = _STATUS_OF.get(code, 200 if action else 400)
    if code == ErrorCode.INTERNAL:  # the exception's words stay in the server's log
        return failure(status, INTERNAL)
    return failure(status, ENDED if code == ErrorCode.SESSION_ENDED else message)


def check_tool(tool: str, tools: frozenset[str]) -> Reply | None:
    """None if the session has `tool`, else gaia2-cli's failed action saying what it has."""
    if tool in tools:
        return None
    app = tool.split("__", 1)[0]
    apps = sorted({name.split("__", 1)[0] for name in tools})
    if app not in apps:
        why = f"unknown app {app!r}: this session's apps are {', '.join(apps)}"
    else:
        actions = sorted(n.split("__", 1)[1] for n in tools if n.startswith(app + "__"))
        why = f"unknown action {tool.split('__', 1)[1]!r} of {app}: it has {', '.join(actions)}"
    return failure(200, why)


# -- what the stream becomes -----------------------------------------------------------------


def message_of(seq: int, item: object) -> dict[str, Any] | None:
    """The gaia2-cli message (without its `seq`) that stream item `item` is, if any: the
    agent's `send_message_to_user`, as an assistant message whose run is final."""
    if type(item) is not EventItem:
        return None
    event = item.event
    if event.function != TO_USER or event.app != USER_APP or event.exception is not None:
        return None
    content = event.args.get("content", "")
    text = content if isinstance(content, str) else json.dumps(content)
    return {
        "timestamp": _iso(event.time),
        "state": "final",
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        "streamSeq": seq,
        "simTime": event.time,
    }


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat()


def text_of(message: dict[str, Any]) -> str:
    return str(message["message"]["content"][0]["text"])


def messages_reply(messages: list[dict[str, Any]], after: int, key: str = "messages") -> Reply:
    """`GET /messages?after=N`: every message numbered above N, and the last number (also
    `/notifications`, whose `key` is `notifications`)."""
    return Reply(200, {"ok": True, key: messages[after:], "lastSeq": len(messages)})


def notification_of(number: int, item: object) -> dict[str, Any] | None:
    """The entry of `/notifications` that stream item `item` is, if it is a notification."""
    if type(item) is not NotificationItem:
        return None
    note = item.notification
    return {
        "seq": number,
        "type": note.message_type,
        "message": note.message,
        "timestamp": _iso(note.timestamp),
        "simTime": note.timestamp,
    }


def sse_frame(message: dict[str, Any]) -> bytes:
    """One message as gaia2-cli's adapters send it over SSE."""
    return f"event: chat\ndata: {json.dumps(message)}\n\n".encode()


SSE_HELLO: Final = b": connected to the areasync gaia2-cli adapter\n\n"


def sse_end(reason: str, last_seq: int) -> bytes:
    """The last frame of a stream the server ends (session over, or the client too slow)."""
    body = json.dumps({"reason": reason, "lastSeq": last_seq})
    return f"event: end\ndata: {body}\n\n".encode()


@dataclasses.dataclass(frozen=True)
class SessionView:
    """What /status and /health read of a session."""

    session_id: str
    state: str  # the clock's: setup | running | paused | stopped | failed
    ended: bool  # its stream's `ended` item has gone out (with `validation`)
    validation: Validation | None
    end_reason: str | None
    nb_turns: int
    turn: int  # the agent's messages to the user so far (gaia2-cli's turn boundaries)
    num_events: int  # events.jsonl's entries that are not the environment's (upstream's count)
    last_response: str | None
    connected: bool  # an agent has attached, or the oracle plays it, or it has ended
    messages: int
    sse_clients: int


def daemon_status(view: SessionView) -> dict[str, Any]:
    """upstream's `daemon_status.json`: `running` until the session's end has gone out on its
    stream, then `complete`, `stopped` (it failed validation, or was stopped before its end
    without passing) or `error` (it failed); its `judgment` once there is a verdict."""
    status = "running"
    validation = view.validation
    success = None if validation is None else validation.success
    if view.ended:
        if view.state == "failed":
            status = "error"
        elif success is False or (view.end_reason is not None and success is not True):
            status = "stopped"
        else:
            status = "complete"
    data: dict[str, Any] = {
        "status": status,
        "turn": view.turn,
        "nb_turns": view.nb_turns,
        "num_events": view.num_events,
    }
    if view.last_response:
        data["last_response"] = view.last_response
    if view.ended and validation is not None and success is not None:
        reason = validation.rationale or validation.exception or view.end_reason
        data["judgment"] = {"success": bool(success), "failure_reason": reason}
    return data


def status_of(view: SessionView) -> dict[str, Any]:
    """`GET /status`: the daemon's status, and which session in what state."""
    return {**daemon_status(view), "session": view.session_id, "state": view.state}


def health_of(view: SessionView) -> dict[str, Any]:
    """gaia2-cli's adapter health (see the module docstring for `connected`)."""
    return {
        "ok": view.connected,
        "connected": view.connected,
        "backend": BACKEND,
        "session": view.session_id,
        "state": view.state,
        "buffer": {"size": view.messages, "lastSeq": view.messages},
        "sseClients": view.sse_clients,
    }


NO_ENV_DISPATCH: Final = Reply(
    501,
    {
        "ok": False,
        "error": "execute_action not configured: areasync fires the scenario's ENV events "
        "itself, on the session's clock, so gaia2-eventd must not run against it (each event "
        "would fire twice); an agent calls its tools with POST /call_tool "
        '{"app", "action", "args"} and the agent\'s token',
    },
)
