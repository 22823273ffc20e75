"""The notification pre-filter (`areasync.bridge.notifications`) answers exactly as ARE does.

For every function of every app class ARE ships, under each app's class name and every alias
ARE's templates know, as every event type, with and without arguments, through notification
systems of every verbosity and one that notifies everything: the installed filter returns what
ARE's own `BaseNotificationSystem.convert_to_message` returns (the same Message, None, or the
same exception), and the filtered `get_content_for_message` (the world log's, in `add_to_log`)
what ARE's returns. The filter's list of names is checked against ARE's source.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import are.simulation.apps as are_apps
import pytest
from are.simulation import notification_system as are_notifications
from are.simulation.apps.app import App
from are.simulation.notification_system import (
    BaseNotificationSystem,
    Message,
    NotificationSystemConfig,
    VerboseNotificationSystem,
    VerbosityLevel,
)
from are.simulation.types import (
    Action,
    CompletedEvent,
    ConditionCheckAction,
    EventMetadata,
    EventType,
)
from are.simulation.validation.constants import APP_ALIAS

from areasync import Simulation
from areasync.bridge import notifications
from areasync.bridge.notifications import MAY_NOTIFY, cannot_notify

ARE_CONVERT = BaseNotificationSystem.convert_to_message
NOW = 1_700_000_123.5


class FixedTime:
    def time(self) -> float:
        return NOW


def are_app_classes() -> list[type[App]]:
    for module in pkgutil.walk_packages(are_apps.__path__, are_apps.__name__ + "."):
        importlib.import_module(module.name)

    def subclasses(cls: type) -> Iterator[type]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    return sorted(
        {c for c in subclasses(App) if c.__module__.startswith(are_apps.__name__ + ".")},
        key=lambda c: (c.__module__, c.__qualname__),
    )


APP_CLASSES = are_app_classes()
# Every class name ARE's templates compare with, and every app class name it ships.
TEMPLATE_CLASS_NAMES = {"AgentUserInterface", "Shopping", "RentAFlat", "Calendar"} | {
    name for key, aliases in APP_ALIAS.items() for name in (key, *aliases)
}
CLASS_NAMES = sorted(TEMPLATE_CLASS_NAMES | {c.__name__ for c in APP_CLASSES})


def functions_of(cls: type) -> list[Callable[..., Any]]:
    return [f for _, f in inspect.getmembers(cls, inspect.isfunction)]


def systems() -> list[tuple[str, BaseNotificationSystem]]:
    everything = {
        name: sorted({f.__name__ for c in APP_CLASSES for f in functions_of(c)} | MAY_NOTIFY)
        for name in CLASS_NAMES
    }
    made = [
        *(
            (f"verbosity {level.name}", VerboseNotificationSystem(verbosity_level=level))
            for level in VerbosityLevel
        ),
        ("ARE's default", are_notifications.NotificationSystem()),
        ("everything", BaseNotificationSystem(NotificationSystemConfig(notified_tools=everything))),
    ]
    for _, system in made:
        system.initialize(FixedTime())  # type: ignore[arg-type]
        notifications.install(system, lambda message: None)
    return made


SYSTEMS = systems()


def stand_in(class_name: str | None) -> Any:
    """An app whose class is called `class_name` (ARE's templates read only the class name)."""
    if class_name is None:
        return None
    app = type(class_name, (), {})()
    app.name = class_name
    return app


def dummy_args(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        names = []
    return {
        name: None if name == "base64_utf8_encoded_attachment_contents" else f"<{name}>"
        for name in names
        if name != "self"
    }


def named(name: str) -> Callable[..., Any]:
    def function(self: Any, content: str = "", **kwargs: Any) -> None:
        return None

    function.__name__ = name
    return function


def completed(app: Any, function: Any, args: dict[str, Any], event_type: EventType) -> Any:
    action = Action(function=function, args=dict(args), app=app)
    if app is None:
        action.app = None
    return CompletedEvent(
        event_type=event_type,
        action=action,
        metadata=EventMetadata(),
        event_time=NOW,
        event_id="e",
    )


def outcome(convert: Callable[[Any], Message | None], event: Any) -> Any:
    try:
        return ("message", convert(event))
    except Exception as exc:
        return ("raises", type(exc), str(exc))


def check(event: Any) -> int:
    """Compare filter and ARE on every system; the number of systems the filter answered."""
    expected_content = outcome(are_notifications.get_content_for_message, event)
    assert outcome(notifications.get_content_for_message, event) == expected_content, event
    fast = 0
    for label, system in SYSTEMS:
        expected = outcome(lambda e, s=system: ARE_CONVERT(s, e), event)
        assert outcome(system.convert_to_message, event) == expected, (label, event)
        fast += cannot_notify(event)
    return fast


def test_install_gives_the_filter_to_systems_using_ares_method() -> None:
    for _, system in SYSTEMS:
        assert system.convert_to_message.__func__ is notifications.convert_to_message  # type: ignore[attr-defined]


def test_every_are_app_function_as_every_event_type_gives_what_are_gives() -> None:
    answered = 0
    total = 0
    for cls in APP_CLASSES:
        for function in functions_of(cls):
            for event_type in EventType:
                for args in (dummy_args(function), {}):
                    answered += check(completed(stand_in(cls.__name__), function, args, event_type))
                    total += len(SYSTEMS)
    # Most of ARE's functions cannot notify: the filter answers those itself.
    assert answered > total // 2


def test_every_template_name_under_every_class_name_gives_what_are_gives() -> None:
    names = sorted(MAY_NOTIFY | {"get_current_time", "send_message_to_user", "send_email"})
    for class_name in [*CLASS_NAMES, None]:
        for name in names:
            function = named(name)
            for event_type in EventType:
                for args in (dummy_args(function) | {"sender": "a", "conversation_id": "c"}, {}):
                    check(completed(stand_in(class_name), function, args, event_type))


def test_resolved_arguments_are_what_are_reads() -> None:
    for class_name in ("EmailClientApp", "Mail", "MessagingAppV2", "AgentUserInterface"):
        for name in ("create_and_add_email", "create_and_add_message", "send_message_to_agent"):
            event = completed(stand_in(class_name), named(name), {}, EventType.ENV)
            event.action.resolved_args = {
                "sender": "s",
                "conversation_id": "c",
                "content": "hi",
            }
            check(event)


class CallableWithoutName:
    def __call__(self, *args: Any, **kwargs: Any) -> None:
        return None


def odd_events() -> Iterator[Any]:
    app = stand_in("EmailClientApp")
    yield completed(app, named("get_current_time"), {}, EventType.AGENT)
    partial = functools.partial(named("create_and_add_email"), None)
    yield completed(app, partial, {"sender": "x"}, EventType.ENV)
    yield completed(
        stand_in("SystemApp"), functools.partial(named("wait"), None), {}, EventType.AGENT
    )
    no_name = completed(stand_in("SystemApp"), named("x"), {}, EventType.AGENT)
    no_name.action.function = CallableWithoutName()
    yield no_name
    no_function = completed(stand_in("SystemApp"), named("x"), {}, EventType.AGENT)
    no_function.action.function = None
    yield no_function
    yield CompletedEvent(
        event_type=EventType.CONDITION,
        action=ConditionCheckAction(function=lambda env: True),
        metadata=EventMetadata(),
        event_time=NOW,
    )

    class SubEvent(CompletedEvent):
        pass

    sub = completed(app, named("get_current_time"), {}, EventType.AGENT)
    yield SubEvent(event_type=sub.event_type, action=sub.action, metadata=sub.metadata)

    class SubAction(Action):
        pass

    yield CompletedEvent(
        event_type=EventType.AGENT,
        action=SubAction(function=named("get_current_time"), args={}, app=app),
        metadata=EventMetadata(),
    )
    yield "not an event"
    yield None


def test_odd_events_give_what_are_gives() -> None:
    for event in odd_events():
        check(event)


def test_without_a_time_manager_both_raise_the_same() -> None:
    system = VerboseNotificationSystem()
    notifications.install(system, lambda message: None)
    event = completed(stand_in("SystemApp"), named("get_current_time"), {}, EventType.AGENT)
    assert cannot_notify(event)
    expected = outcome(lambda e: ARE_CONVERT(system, e), event)
    assert expected[0] == "raises"
    assert outcome(system.convert_to_message, event) == expected


def test_an_event_with_no_message_reads_no_time() -> None:
    reads: list[float] = []

    class CountedTime:
        def time(self) -> float:
            reads.append(NOW)
            return NOW

    system = VerboseNotificationSystem()
    system.initialize(CountedTime())  # type: ignore[arg-type]
    notifications.install(system, lambda message: None)
    event = completed(stand_in("SystemApp"), named("get_current_time"), {}, EventType.AGENT)
    assert system.convert_to_message(event) is None
    assert reads == []


def test_notified_tools_are_read_live() -> None:
    system = VerboseNotificationSystem(verbosity_level=VerbosityLevel.LOW)
    system.initialize(FixedTime())  # type: ignore[arg-type]
    notifications.install(system, lambda message: None)
    event = completed(
        stand_in("EmailClientApp"), named("create_and_add_email"), {"sender": "x"}, EventType.ENV
    )
    assert system.convert_to_message(event) is None
    system.config.notified_tools["EmailClientApp"] = ["create_and_add_email"]
    message = system.convert_to_message(event)
    assert message is not None and message == ARE_CONVERT(system, event)
    system.config = NotificationSystemConfig(notified_tools={})
    assert system.convert_to_message(event) is None


def test_a_system_with_its_own_conversion_keeps_it() -> None:
    class Custom(BaseNotificationSystem):
        def convert_to_message(self, event: Any) -> Message | None:
            return None

    system = Custom()
    notifications.install(system, lambda message: None)
    assert "convert_to_message" not in vars(system)


def test_a_tick_skips_ares_hooks_only_where_they_would_do_nothing() -> None:
    system = VerboseNotificationSystem()
    system.initialize(FixedTime())  # type: ignore[arg-type]
    assert notifications.idle_before_events(system) and notifications.idle_after_events(system)
    system.setup_reminder_app(stand_in("ReminderApp"))  # type: ignore[arg-type]
    system.setup_system_app(stand_in("SystemApp"))  # type: ignore[arg-type]
    assert not notifications.idle_before_events(system)
    assert not notifications.idle_after_events(system)


def test_a_system_with_its_own_tick_hooks_has_them_called_on_every_tick() -> None:
    ticks: list[str] = []

    class Custom(VerboseNotificationSystem):
        def handle_time_based_notifications(self) -> None:
            ticks.append("before")

        def handle_timeout_after_events(self) -> None:
            ticks.append("after")

    sim = Simulation.load("scenario_tutorial", mode="manual")
    sim.env.notification_system = Custom()
    sim.env.tick()
    assert ticks == ["before", "after"]


def test_clear_and_initialize_keep_the_filter() -> None:
    system = VerboseNotificationSystem()
    notifications.install(system, lambda message: None)
    system.clear()
    system.initialize(FixedTime())  # type: ignore[arg-type]
    assert system.convert_to_message.__func__ is notifications.convert_to_message  # type: ignore[attr-defined]


def test_a_simulations_system_is_filtered_and_still_notifies() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    system = sim.env.notification_system
    assert system.convert_to_message.__func__ is notifications.convert_to_message  # type: ignore[attr-defined]
    email = completed(
        stand_in("EmailClientApp"), named("create_and_add_email"), {"sender": "ann"}, EventType.ENV
    )
    message = system.convert_to_message(email)
    assert message is not None and message.message == "EmailClientApp: New email received from ann"


def compared_names(source_function: Callable[..., Any]) -> tuple[set[str], set[str]]:
    """The strings ARE's code compares `event.function_name()` with, and anything else it
    compares it with (as source text)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(source_function)))
    names: set[str] = set()
    others: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        left = node.left
        if not (
            isinstance(left, ast.Call)
            and isinstance(left.func, ast.Attribute)
            and left.func.attr == "function_name"
        ):
            continue
        for comparator in node.comparators:
            if isinstance(comparator, ast.List | ast.Tuple | ast.Set):
                constants = comparator.elts
            else:
                constants = [comparator]
            for constant in constants:
                if isinstance(constant, ast.Constant):
                    names.add(constant.value)
                else:
                    others.add(ast.unparse(constant))
    return names, others


def test_may_notify_is_every_name_ares_notification_code_compares_with() -> None:
    templates, template_others = compared_names(are_notifications.get_content_for_message)
    special, special_others = compared_names(BaseNotificationSystem.convert_to_message)
    assert templates | special == MAY_NOTIFY
    assert not template_others
    # The one other comparison is the `notified_tools` check, which also needs a template's
    # message (`... and message is not None`): the behavioural tests above cover it.
    assert special_others == {"self.config.notified_tools[app_class_name]"}


@pytest.mark.parametrize("level", list(VerbosityLevel))
def test_every_notified_tool_can_notify(level: VerbosityLevel) -> None:
    for functions in are_notifications.get_notification_tools(level).values():
        assert set(functions) <= MAY_NOTIFY


def test_add_to_log_swaps_the_world_logs_function_only_during_the_call() -> None:
    from unittest import mock

    from are.simulation import environment as are_environment
    from are.simulation.environment import Environment

    original = are_environment.get_content_for_message
    sim = Simulation.load("scenario_tutorial", mode="manual")
    seen: list[Any] = []
    append = sim.env.append_world_logs

    def spy(log: Any) -> None:  # called by ARE's add_to_log right after the content lookup
        seen.append(are_environment.get_content_for_message)
        append(log)

    anyio_run(sim.call_tool, "SystemApp__get_current_time", {})
    logged = sim.env.event_log.list_view()[-1]
    with mock.patch.object(sim.env, "append_world_logs", side_effect=spy):
        sim.env.add_to_log([logged])  # a list: ARE's own `add_to_log`, not the written-out path
    assert seen == [notifications.get_content_for_message]
    assert are_environment.get_content_for_message is original
    # The world log is ARE's: app and function, no template for this event.
    assert sim.env.world_logs[-1].content == "SystemApp: get_current_time"

    # A function someone else put there is left alone, in our environments and ARE's.
    with mock.patch.object(are_environment, "get_content_for_message", return_value="mocked"):
        anyio_run(sim.call_tool, "SystemApp__get_current_time", {})
        assert sim.env.world_logs[-1].content == "mocked"
    assert are_environment.get_content_for_message is original
    assert Environment.add_to_log is not type(sim.env).add_to_log


def anyio_run(function: Callable[..., Any], *args: Any) -> Any:
    import anyio

    return anyio.run(function, *args)
