"""A hook on ARE's notification queue: every message is published the moment it is put.

ARE's agents poll `MessageQueue.get_by_timestamp`; we do not poll. Every notification in ARE goes
through `MessageQueue.put`, so a subclass of the queue sees each one as it happens. ARE's
`BaseNotificationSystem.clear` replaces the queue with a fresh plain one, so `install` also
replaces `clear` on the instance to keep the hook across clears.
"""

from __future__ import annotations

from collections.abc import Callable

from are.simulation.notification_system import BaseNotificationSystem, Message, MessageQueue

MessageHook = Callable[[Message], None]


class PublishingMessageQueue(MessageQueue):
    """ARE's MessageQueue that also hands every message to a hook after queueing it."""

    def __init__(self, hook: MessageHook) -> None:
        super().__init__()
        self._hook = hook

    def put(self, message: Message) -> None:
        super().put(message)
        self._hook(message)


def install(system: BaseNotificationSystem, hook: MessageHook) -> None:
    """Make `system` publish every message through `hook`, now and after every `clear()`."""
    old = system.message_queue
    queue = PublishingMessageQueue(hook)
    # Keep messages already queued (a system may have been used before the environment).
    for message in old.list_view():
        MessageQueue.put(queue, message)
    system.message_queue = queue

    def clear() -> None:
        system.message_queue = PublishingMessageQueue(hook)

    system.clear = clear
