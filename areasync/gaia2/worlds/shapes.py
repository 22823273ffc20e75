"""The scenarios a generated world carries: Gaia2's shapes over the world's own content.

Rule: each shape is one of the shapes Gaia2's scenarios take - a single task, several turns
(the next user message hanging off the oracle's last `send_message_to_user`), a Time-tagged
task waiting for an environment event, and a task under background ENV events - and its
oracle's calls name things the world holds (a contact's address, a Chats id and
conversation, a listed apartment, addresses the Cabs app knows), so the oracle's run touches
the filled apps. Every user message carries the scenario's marker (`<id>`), as in
`areasync.gaia2.dataset`, so the stub agent can play it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from areasync.gaia2.dataset import Action, action_event, call, tell
from areasync.gaia2.worlds.universe import START_TIME, Universe
from areasync.protocol.records import WAIT_TOOL

# Seconds between a turn's closing message and the next user message: short, since ARE's own
# runs idle it for real.
TURN_DELAY = 2.0
# When the awaited email comes in the Time shape: within the 420 s ARE gives a Time scenario.
TIME_EVENT = 120.0
# How long the faithful agent's `wait_for_notification` may wait: past every event it awaits.
WAIT_TIMEOUT = 300


@dataclass(frozen=True)
class Step:
    """One event of a shape: who acts (USER, ENV, AGENT), after which step, how long after."""

    key: str
    kind: str
    action: Action
    after: str | None
    delay: float


@dataclass(frozen=True)
class Shape:
    """A scenario's events, its capability tag and the dataset config it belongs in.

    `waits`: environment events the agent must wait for before its calls (ARE's judge
    expects every environment event of a turn to have come before the turn ends, as in the
    oracle's run); `agent_script` is the stub agent's faithful play of the oracle."""

    steps: tuple[Step, ...]
    tags: tuple[str, ...]
    config: str
    waits: int = 0


def agent_script(shape: Shape) -> list[dict[str, Any]]:
    """What a faithful agent does on `shape`: one `wait_for_notification` per environment
    event it must see come, then the oracle's calls in order."""
    calls: list[dict[str, Any]] = [dict(s.action) for s in shape.steps if s.kind == "AGENT"]
    return [call(WAIT_TOOL, timeout=WAIT_TIMEOUT) for _ in range(shape.waits)] + calls


def _stamp(seconds_after_start: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(START_TIME + seconds_after_start, tz=UTC).strftime(
        "%Y-%m-%d %H:%M:%S"
    )


def _ask(marker: str, text: str) -> Action:
    return call("AgentUserInterface__send_message_to_agent", content=f"{marker} {text}")


def single(world: Universe, rng: random.Random, marker: str) -> Shape:
    """One turn: email a contact, then tell the user."""
    person = rng.choice(world.people)
    subject = "Dinner next week"
    content = f"Hi {person.name.split()[0]}, are you free for dinner next week?"
    task = f"Email {person.name} with subject '{subject}' saying '{content}', then tell me."
    steps = (
        Step("user0", "USER", _ask(marker, task), None, 0.0),
        Step(
            "call0",
            "AGENT",
            call("Emails__send_email", recipients=[person.email], subject=subject, content=content),
            "user0",
            1.0,
        ),
        Step("done0", "AGENT", tell(f"Done: I emailed {person.name}."), "call0", 1.0),
    )
    return Shape(steps, ("Execution",), "execution")


def multi_turn(world: Universe, rng: random.Random, marker: str) -> Shape:
    """Two turns: a calendar entry with a contact, then a chat message to them."""
    person = rng.choice([p for p in world.people if p.chat_conversation])
    title = f"Coffee with {person.name}"
    start, end = _stamp(2 * 86400.0), _stamp(2 * 86400.0 + 3600.0)
    first = f"Add '{title}' to my calendar from {start} to {end} with {person.name}, then tell me."
    note = f"See you on {start[:10]} for coffee!"
    second = f"Now message {person.name} on Chats saying '{note}', then tell me."
    steps = (
        Step("user0", "USER", _ask(marker, first), None, 0.0),
        Step(
            "call0",
            "AGENT",
            call(
                "Calendar__add_calendar_event",
                title=title,
                start_datetime=start,
                end_datetime=end,
                attendees=[person.name],
            ),
            "user0",
            1.0,
        ),
        Step("done0", "AGENT", tell("Done: it is in your calendar."), "call0", 1.0),
        Step("user1", "USER", _ask(marker, second), "done0", TURN_DELAY),
        Step(
            "call1",
            "AGENT",
            call("Chats__send_message", user_id=person.chat_id, content=note),
            "user1",
            1.0,
        ),
        Step("done1", "AGENT", tell(f"Done: I messaged {person.name}."), "call1", 1.0),
    )
    return Shape(steps, ("Execution",), "execution")


def timed(world: Universe, rng: random.Random, marker: str) -> Shape:
    """Time: a contact's email comes `TIME_EVENT` s after the task; the oracle answers it."""
    person = rng.choice(world.people)
    task = (
        f"{person.name} will email me about the report in a couple of minutes. When it comes, "
        "reply to them with subject 'Re: Report' saying 'Thanks, got it', then tell me."
    )
    steps = (
        Step("user0", "USER", _ask(marker, task), None, 0.0),
        Step(
            "env0",
            "ENV",
            call(
                "Emails__send_email_to_user_only",
                sender=person.email,
                subject="Report",
                content="Here is the report we discussed.",
            ),
            "user0",
            TIME_EVENT,
        ),
        Step(
            "call0",
            "AGENT",
            call(
                "Emails__send_email",
                recipients=[person.email],
                subject="Re: Report",
                content="Thanks, got it",
            ),
            "env0",
            1.0,
        ),
        Step("done0", "AGENT", tell(f"Done: I answered {person.name}."), "call0", 1.0),
    )
    return Shape(steps, ("Time",), "time", waits=1)


def under_noise(world: Universe, rng: random.Random, marker: str) -> Shape:
    """ENV events (chat messages, an email) arrive while the oracle saves a flat, books a cab."""
    apartment = rng.choice(world.apartment_ids)
    start, end = rng.sample(world.addresses, 2)
    task = (
        f"Save the apartment {apartment} on RentAFlat and book a Default cab from {start} to "
        f"{end}, then tell me."
    )
    steps: list[Step] = [Step("user0", "USER", _ask(marker, task), None, 0.0)]
    talking = [p for p in world.people if p.chat_conversation]
    for k, person in enumerate(rng.sample(talking, min(3, len(talking)))):
        steps.append(
            Step(
                f"env{k}",
                "ENV",
                call(
                    "Chats__create_and_add_message",
                    conversation_id=person.chat_conversation,
                    sender_id=person.chat_id,
                    content=f"Hey, did you see my last message? ({k + 1})",
                ),
                "user0",
                5.0 + 10.0 * k,
            )
        )
    sender = rng.choice(world.people)
    mail = call(
        "Emails__send_email_to_user_only",
        sender=sender.email,
        subject="Newsletter",
        content="This week's news, in brief.",
    )
    steps.insert(1, Step("env_mail", "ENV", mail, "user0", 3.0))
    steps += [
        Step(
            "call0",
            "AGENT",
            call("RentAFlat__save_apartment", apartment_id=apartment),
            # A turn's closing message must come after its environment's events (ARE's rule).
            steps[-1].key,
            1.0,
        ),
        Step(
            "call1",
            "AGENT",
            call(
                "Cabs__order_ride", start_location=start, end_location=end, service_type="Default"
            ),
            "call0",
            1.0,
        ),
        Step("done0", "AGENT", tell("Done: saved and booked."), "call1", 1.0),
    ]
    return Shape(
        tuple(steps), ("Execution",), "execution", waits=sum(s.kind == "ENV" for s in steps)
    )


SHAPES: dict[str, Callable[[Universe, random.Random, str], Shape]] = {
    "single": single,
    "multi_turn": multi_turn,
    "time": timed,
    "env_events": under_noise,
}


def events(shape: Shape) -> list[dict[str, Any]]:
    """The shape's events as ARE's JSON export writes them."""
    return [
        action_event(s.key, s.kind, [s.after] if s.after else [], s.delay, s.action)
        for s in shape.steps
    ]


def duration(shape: Shape) -> float:
    """Long enough for the oracle's own run (ARE's agent runs override it)."""
    return sum(s.delay for s in shape.steps) + 60.0
