"""Hooks on ARE's notification system: every message is published the moment it is put, and
events that cannot produce a message are answered without ARE's template search.

Publishing. ARE's agents poll `MessageQueue.get_by_timestamp`; we do not poll. Every
notification in ARE goes through `MessageQueue.put`, so a subclass of the queue sees each one as
it happens. ARE's `BaseNotificationSystem.clear` replaces the queue with a fresh plain one, so
`install` also replaces `clear` on the instance to keep the hook across clears.

The pre-filter. ARE's `BaseNotificationSystem.convert_to_message` runs for every logged event
and, before it looks at `config.notified_tools` at all, calls `get_content_for_message(event)`:
a chain of sixteen templates calling `event.app_class_name()` about 25 times. `add_to_log` calls
it a second time for the world log: microseconds of every logged event spent finding no
template (docs/topics/performance.md, "Design measurements"), on most events (an agent's
reads, the reminder check on every tick, most ENV events).
ARE can only produce a message or a template text for an event whose function is one of
`MAY_NOTIFY`: the function names the templates test (`get_content_for_message` compares the
class first, then the function name, and returns None when no template matches, whatever
`notified_tools` says) and the user's `AgentUserInterface.send_message_to_agent`. So for a
plain `CompletedEvent` of an `Action` whose function name is not one of them, the answer is
None whichever app, event type, arguments, verbosity or `notified_tools` (read live by ARE; the
filter does not read it at all). `convert_to_message` (the filter) returns None after doing what
ARE does first that could have an effect: raise without a time manager (ARE's
`get_current_time`; the time it reads is dropped, and a reading nobody sees must not bind the
virtual clock, `areasync.engine.clock`); `get_content_for_message` (ARE's is pure) returns None.
Everything else - any event that could produce a message, an event or action of another class,
a function whose name cannot be read - goes to ARE's own function unchanged.

The filtered `convert_to_message` is an attribute of the instance, set by `install` only when
the system's class uses ARE's base method (a notification system that defines its own keeps
it); `clear()` and `initialize()` replace neither. The world log's call goes through
`AsyncEnvironment.add_to_log` (see there). `tests/bridge/test_notification_prefilter.py` checks,
for every app and function ARE ships (every notified tool of every verbosity, the apps'
aliases, odd events), that both give what ARE's own functions give, and that `MAY_NOTIFY` is
exactly the set of names ARE's source compares function names with.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from are.simulation import notification_system as are_notification_system
from are.simulation.notification_system import BaseNotificationSystem, Message, MessageQueue
from are.simulation.types import Action, CompletedEvent

MessageHook = Callable[[Message], None]

# The function names for which ARE 1.2.0's notification code can produce a message: those
# `get_content_for_message` has a template for, and the user's message to the agent.
MAY_NOTIFY: frozenset[str] = frozenset(
    {
        "create_and_add_email",
        "send_email_to_user_only",
        "reply_to_email_from_user",
        "create_and_add_message",
        "add_product",
        "add_item_to_product",
        "cancel_order",
        "update_order_status",
        "add_discount_code",
        "add_new_apartment",
        "cancel_ride",
        "user_cancel_ride",
        "update_ride_status",
        "end_ride",
        "add_calendar_event_by_attendee",
        "delete_calendar_event_by_attendee",
        "send_message_to_agent",
    }
)

_are_convert_to_message = BaseNotificationSystem.convert_to_message
_are_handle_event = BaseNotificationSystem.handle_event
_are_time_based = BaseNotificationSystem.handle_time_based_notifications
_are_timeout_after = BaseNotificationSystem.handle_timeout_after_events
_are_get_content_for_message = are_notification_system.get_content_for_message


class PublishingMessageQueue(MessageQueue):
    """ARE's MessageQueue that also hands every message to a hook after queueing it."""

    def __init__(self, hook: MessageHook) -> None:
        super().__init__()
        self._hook = hook

    def put(self, message: Message) -> None:
        super().put(message)
        self._hook(message)


def install(system: BaseNotificationSystem, hook: MessageHook) -> None:
    """Make `system` publish every message through `hook`, now and after every `clear()`, and
    give it the pre-filter if it converts events with ARE's base method."""
    old = system.message_queue
    queue = PublishingMessageQueue(hook)
    # Keep messages already queued (a system may have been used before the environment).
    for message in old.list_view():
        MessageQueue.put(queue, message)
    system.message_queue = queue

    def clear() -> None:
        system.message_queue = PublishingMessageQueue(hook)

    system.clear = clear
    if type(
        system
    ).convert_to_message is _are_convert_to_message and "convert_to_message" not in vars(system):
        system.convert_to_message = types.MethodType(convert_to_message, system)


def cannot_notify(event: Any) -> bool:
    """True if ARE's notification code certainly has no message for `event` (see the module
    docstring); False if it might, or if the question is not this simple."""
    if type(event) is not CompletedEvent or type(event.action) is not Action:
        return False
    # ARE's `function_name()` is the function's `__name__` when it has one (a partial's is
    # looked up further: let ARE decide those); read here without ARE's two calls.
    name = getattr(event.action.function, "__name__", None)
    return type(name) is str and name not in MAY_NOTIFY


def ignores(system: BaseNotificationSystem) -> bool:
    """True if ARE's `system.handle_event(event)` does nothing for an event `cannot_notify`
    says yes to: it is ARE's base method (not a subclass's, not set on the instance), the
    system is initialized (else it raises), has a time manager (else the filter's first step
    raises) and converts with the pre-filter `install` gave it, which answers None."""
    converter = system.__dict__.get("convert_to_message")
    return (
        getattr(converter, "__func__", None) is convert_to_message
        and system._initialized
        and bool(system.time_manager)
        and type(system).handle_event is _are_handle_event
        and "handle_event" not in system.__dict__
    )


def idle_before_events(system: BaseNotificationSystem) -> bool:
    """True if ARE's hook at the start of a tick (`handle_time_based_notifications`) would do
    nothing: it is ARE's base method (not a subclass's, not set on the instance) and there is
    no reminder app, whose due reminders are all it looks at."""
    return (
        not system.reminder_app
        and type(system).handle_time_based_notifications is _are_time_based
        and "handle_time_based_notifications" not in system.__dict__
    )


def idle_after_events(system: BaseNotificationSystem) -> bool:
    """True if ARE's hook at the end of a tick (`handle_timeout_after_events`) would do nothing
    but read the time: it is ARE's base method (not a subclass's, not set on the instance),
    there is no system app (without one it builds a datetime of the time and drops it) and a
    time manager is set (without one it raises)."""
    return (
        not system.system_app
        and bool(system.time_manager)
        and type(system).handle_timeout_after_events is _are_timeout_after
        and "handle_timeout_after_events" not in system.__dict__
    )


def get_content_for_message(event: Any) -> str | None:
    """ARE's `get_content_for_message`, answering None at once for an event that cannot
    produce a message (ARE's function is pure: nothing else to do first)."""
    if cannot_notify(event):
        return None
    return _are_get_content_for_message(event)


def convert_to_message(system: BaseNotificationSystem, event: Any) -> Message | None:
    """ARE's `BaseNotificationSystem.convert_to_message`, answering None at once for an event
    that cannot produce a message (bound to a system instance by `install`)."""
    if cannot_notify(event):
        if not system.time_manager:
            system.get_current_time()  # what ARE does first: it raises without a time manager
        return None
    return _are_convert_to_message(system, event)
