"""What each request does to its session: the calls `ConnectionCore` asks for, carried out.

`perform` is the one place a client's request meets the simulation (and, for the admin's
`create_session` / `stop_session`, the registry). It returns the request's result value, or
raises: the core turns either into the reply (`ConnectionCore.succeeded` / `failed`). The gate
(role, session state, rate) has already passed when it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from areasync.bridge.scenarios.loading import registered_ids
from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.frames import (
    CallTool,
    ClientFrame,
    CreateSession,
    ForkSession,
    GetState,
    Idle,
    Jump,
    ListTools,
    Pause,
    Resume,
    Role,
    SendUserMessage,
    SetSpeed,
    Stop,
    StopSession,
    Tick,
)
from areasync.protocol.records import WAIT_TOOL
from areasync.protocol.sessions import CreatedSession, StoppedSession

if TYPE_CHECKING:
    from areasync.service.sessions.registry import SessionRegistry
    from areasync.service.sessions.session import Session


async def perform(
    frame: ClientFrame,
    *,
    session: Session,
    role: Role,
    holder: str,
    registry: SessionRegistry,
) -> Any:
    """Carry out `frame` for a client of `role` (its fast-mode lease held as `holder`)."""
    sim = session.sim
    match frame:
        case ListTools():
            return sim.list_tools()
        case GetState(apps=apps, at_seq=None):
            return sim.get_state(apps)
        case GetState(apps=apps, at_seq=int() as at_seq):
            return await registry.state_at(session, at_seq, apps)
        case CallTool(tool=tool, args=args):
            return await sim.call_tool(tool, args, **_lease_of(frame, role, holder))
        case Idle(seen=seen):
            if role is Role.AGENT and not _has_unread_news(session, seen):
                sim.end_lease(holder)
            return None
        case SendUserMessage(content=content):
            return await sim.send_user_message(content)
        case Pause():
            return await sim.pause()
        case Resume():
            return await _resume(session)
        case Jump():
            return await _jump(session, frame)
        case Tick(n=n):
            return await sim.tick(n)
        case SetSpeed(speed=speed):
            async with sim.lane:  # in turn: after a long jump that is under way, say
                return sim.set_speed(speed)
        case Stop():
            return await sim.stop(f"stopped by a {role.value}")
        case CreateSession():
            return await create_session(frame, registry)
        case StopSession(session_id=session_id):
            return await stop_session(session_id, registry)
        case ForkSession(session_id=session_id, at_seq=at_seq, at_time=at_time):
            forked = await registry.fork(session_id, at_seq=at_seq, at_time=at_time)
            return created_result(forked, registry)
    raise AssertionError(f"no request handler for {type(frame).__name__}")


def _has_unread_news(session: Session, seen: int | None) -> bool:
    """A notification went out after the last item the agent has read: its turn goes on."""
    return seen is not None and seen < session.hub.last_notification


def _lease_of(frame: CallTool, role: Role, holder: str) -> dict[str, Any]:
    """The wait tool returns when a notification arrives: an agent's lease goes with it."""
    if frame.tool != WAIT_TOOL:
        return {}
    return {"holder": holder if role is Role.AGENT else None}


async def _resume(session: Session) -> Any:
    if session.waiting_for_agent and session.sim.state == "running":
        # Not paused, only held for an agent: `resume` is how a controller starts it.
        session.start_without_hold()
        return session.sim.clock_state()
    state = await session.sim.resume()
    session.start_without_hold()
    return state


async def _jump(session: Session, frame: Jump) -> Any:
    sim = session.sim
    if frame.next_event:
        return await sim.next_event()
    # The frame itself refuses `inclusive: false` with `next_event`.
    if frame.to is not None:
        return await sim.jump(to=frame.to, inclusive=frame.inclusive)
    return await sim.jump(by=frame.by, inclusive=frame.inclusive)


async def create_session(frame: CreateSession, registry: SessionRegistry) -> CreatedSession:
    """An admin's `create_session`: the new session, its URL and its tokens."""
    source: str
    if frame.scenario is not None:
        if frame.scenario not in registered_ids():
            raise ProtocolError(
                ErrorCode.INVALID_FIELD,
                f"unknown scenario id {frame.scenario!r}: registered ids are "
                f"{', '.join(registered_ids())}; to run your own scenario, send its ARE "
                "JSON in `scenario_json`",
            )
        source = frame.scenario
    else:
        assert frame.scenario_json is not None
        if not frame.scenario_json.lstrip().startswith("{"):
            raise ProtocolError(
                ErrorCode.INVALID_FIELD,
                "`scenario_json` must be an ARE/Gaia2 scenario as a JSON object (the text "
                "ARE's JsonScenarioExporter writes)",
            )
        source = frame.scenario_json
    session = await registry.create_async(
        source,
        mode=frame.mode,
        speed=frame.speed,
        oracle=frame.oracle,
        import_mode=frame.import_mode,
    )
    return created_result(session, registry)


async def create_from_fields(request: dict[str, Any], registry: SessionRegistry) -> dict[str, Any]:
    """`create_session` from its fields (a front's or a cluster router's call to one of its
    servers), the ids other servers gave read first from a shared state dir: its result, or
    a refusal as plain data, `{"error": {"code", "message"}}`."""
    try:
        frame = msgspec.convert({"id": 0, **request}, CreateSession)
        if registry.journals is not None:
            await registry.journals.refresh_taken()
        return msgspec.to_builtins(await create_session(frame, registry))
    except ProtocolError as exc:
        return refused_as_plain_data(exc)
    except (msgspec.ValidationError, ValueError) as exc:
        message = f"create_session: {exc}; see the protocol's create_session fields"
        return refused_as_plain_data(ProtocolError(ErrorCode.INVALID_FIELD, message))


def refused_as_plain_data(exc: ProtocolError) -> dict[str, Any]:
    return {"error": {"code": str(exc.code), "message": exc.message}}


def created_result(session: Session, registry: SessionRegistry) -> CreatedSession:
    """What `create_session` and `fork_session` return: the new session, its URL and tokens."""
    return CreatedSession(
        session_id=session.id,
        scenario_id=session.scenario_id,
        import_mode=session.import_mode,
        judge=session.judge,
        url=registry.ws_url(session.id),
        epoch=session.epoch,
        mode=session.sim.clock.mode.value,
        tokens={role.value: token for role, token in session.tokens.items()},
        **session.links.fields(),
    )


async def stop_session(session_id: str, registry: SessionRegistry) -> StoppedSession:
    """An admin's `stop_session`: the session's end state, verdict and trace."""
    session = await registry.stop(session_id)
    return StoppedSession(
        session_id=session.id,
        state=session.sim.state,
        validation=session.sim.validation,
        trace=session.trace_file(),
    )
