"""A live session's whole object graph as bytes and back: what a snapshot of a session is.

Why this exists. A fork replays a session's records from its creation (`simulation/replay.py`),
which costs as much as the run did: seconds for 10,000 events. Copying the state of the run at
some point costs far less, but ARE offers no copy of an environment: `App.get_state()` and
`load_state()` cover the apps' data only, not the event queue, the event log, the scenario's
events and their dependencies, the notification queue, the engine, the clock, the stream or
the seeded random generators (`bridge/determinism.py`), and several apps do not implement them
at all. So the copy is of the objects themselves, ARE's and ours together, with the one
serializer that copies an arbitrary graph fast: `pickle` (its C implementation), with a
reducer for the few things in that graph that do not pickle:

* the locks ARE's environment and queues hold (`threading.Event`, `queue.Queue`): fresh ones,
  free (nothing holds them between the session's steps);
* anyio events (the driver's wake-up, a stream's waiters): fresh ones, set if they were set;
* functions made at run time (ARE's oracle-event factories, the notification system's `clear`
  that `bridge/notifications.py` installs, the sandbox's confined path checks): rebuilt from
  their code with copies of what their closures hold, so that a copy never calls back into the
  session it was copied from (a plain function pickles by name as usual);
* ARE's apps: pickled with every attribute, their event callbacks included (ARE's own
  `__getstate__` leaves those out);
* file systems: ARE's `SandboxLocalFileSystem` keeps its files in a directory of its own, and a
  copy must never share it (the copy's `__del__` would even remove it): the files are read
  into the copy, and thawing writes them into a new directory of the same kind, re-confined
  (`bridge/sandbox/confinement.py`). fsspec file systems are copied as objects, never through
  fsspec's instance cache (which would hand back the original's).

Why pickle: `copy.deepcopy` is several times slower (bench/replay.py) and has no hook for
closures short of a global dispatch change. Most of a copy's time was the cyclic garbage
collector, not pickle: the objects made or memoized set off collections that each walk the
whole heap (docs/topics/performance.md, "Design measurements"). Both run with it paused
(`_collector_paused`): the objects they make are the state itself, and no garbage is made
meanwhile.
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import io
import marshal
import os
import pickle
import sys
import tempfile
import threading
import types
from collections.abc import Collection, Iterator
from typing import Any

import anyio
import fsspec  # type: ignore[import-untyped]
from are.simulation.tool_utils import AppTool
from are.simulation.utils.serialization import SkippableDeepCopy

from areasync.bridge.sandbox.confinement import confine_file_system

__all__ = ["StateCopyError", "freeze", "thaw", "with_attributes"]

# Pickling walks the graph depth first, in C, and a session's graph is deep (ARE's events link
# to their dependencies and successors: 10,000 events nest ~100,000 calls): it runs in a thread
# of its own with a stack big enough (virtual memory, committed only as used) and a recursion
# limit to match, while the caller waits for it.
_STACK_BYTES = 1 << 30
_RECURSION_LIMIT = 2_000_000
_deep_lock = threading.Lock()
_collector_lock = threading.Lock()
# While copies run: whether the collector was enabled before the first, then one entry each.
_collector_pauses: list[bool] = []


class StateCopyError(Exception):
    """The session's state holds something that cannot be copied; the message says what."""


def freeze(
    graph: Any, replace: Collection[tuple[Any, tuple[Any, ...]]], apps: Collection[Any]
) -> bytes:
    """`graph` as bytes. `replace`: (an object of the graph, the reduction to store in its
    place: `with_attributes`, for what the copy must not share, such as the service's
    listeners). Not an exact list, dict or tuple: pickle asks no reducer about those. `apps`: the
    session's own ARE apps, required: without them any app another session (or any ARE code of
    the process) registered last is reached through the tools ARE parks on app classes, and
    copied whole (`_foreign_tool`). Blocks the calling thread until done; raises
    `StateCopyError`."""
    outcome: list[Any] = []

    def dump() -> None:
        buffer = io.BytesIO()
        try:
            _Pickler(buffer, replace, {id(app) for app in apps}).dump(graph)
            outcome.append(buffer.getvalue())
        except Exception as exc:  # whatever it is, the copy failed, not the session
            outcome.append(
                StateCopyError(f"the session's state cannot be copied: {type(exc).__name__}: {exc}")
            )

    # The lock first: the collector stays on while a copy waits for another to finish.
    with (
        _deep_lock,
        _collector_paused(),
    ):  # the stack size and the recursion limit are process-wide settings
        previous_stack = threading.stack_size(_STACK_BYTES)
        previous_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(_RECURSION_LIMIT)
        try:
            worker = threading.Thread(target=dump, name="areasync snapshot")
            worker.start()
        finally:
            threading.stack_size(previous_stack)
        try:
            worker.join()
        finally:
            sys.setrecursionlimit(previous_limit)
    if not outcome:  # the thread died of something that is not an Exception
        raise StateCopyError("the session's state cannot be copied: the copying thread died")
    if isinstance(outcome[0], StateCopyError):
        raise outcome[0]
    data: bytes = outcome[0]
    return data


def with_attributes(obj: Any, **attributes: Any) -> tuple[Any, ...]:
    """The reduction of `obj` (an object with a `__dict__`) with these attributes in place of
    its own, for `freeze`'s `replace`."""
    return _new_object, (type(obj),), {**vars(obj), **attributes}, None, None, _set_attributes


def thaw(data: bytes) -> Any:
    """A new, independent copy of what `freeze` wrote (each call makes another one; unpickling
    is iterative, any thread will do). The copy is a session's state, long-lived: it is moved
    to the collector's oldest generation at once (below)."""
    with _collector_paused():
        copy = pickle.loads(data)
        _to_oldest_generation()
        return copy


def _to_oldest_generation() -> None:
    """Every object the collector tracks moved to its oldest generation, without a walk.

    What the copy made would otherwise be walked by the next young collection, then by the one
    after (each a walk of every object the thaw made, on whichever thread allocates next: often
    the event loop), only to end in the oldest generation anyway.
    `gc.freeze` then `gc.unfreeze` is CPython's one way to move objects there unwalked. It
    moves every younger object too (garbage among them waits for the next full collection) and
    the ones the server's start-up froze (`service/gc_policy.py`), which full collections then
    walk again; neither changes when full collections come."""
    gc.freeze()
    gc.unfreeze()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the body runs (module docstring), however many
    copies run at once; it comes back as it was once the last of them is done."""
    with _collector_lock:
        if not _collector_pauses:
            _collector_pauses.append(gc.isenabled())
            gc.disable()
        _collector_pauses.append(True)
    try:
        yield
    finally:
        with _collector_lock:
            _collector_pauses.pop()
            if len(_collector_pauses) == 1 and _collector_pauses.pop():
                gc.enable()


class _Pickler(pickle.Pickler):
    def __init__(
        self, file: io.BytesIO, replace: Collection[tuple[Any, tuple[Any, ...]]], apps: set[int]
    ) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._replace = {id(obj): reduction for obj, reduction in replace}
        self._replaced_types = {type(obj) for obj, _ in replace}
        self._apps = apps

    def reducer_override(self, obj: Any) -> Any:
        # Called for every object but the builtin containers and scalars (hundreds of
        # thousands a copy): what to do is decided once per type (`_reducers`).
        kind = type(obj)
        if kind in self._replaced_types:
            replaced = self._replace.get(id(obj))
            if replaced is not None:
                return replaced
        try:
            reducer = _reducers[kind]
        except KeyError:
            if len(_reducers) > _MAX_TYPES:  # classes made at run time, never reused
                _reducers.clear()
            reducer = _reducers.setdefault(kind, _reducer_for(kind))
        return NotImplemented if reducer is None else reducer(self, obj)


def _reducer_for(kind: type[Any]) -> Any:
    """How `_Pickler` copies an object of type `kind`; None: as pickle does."""
    if kind is types.FunctionType:
        return lambda _pickler, obj: _reduce_function(obj)
    if kind is types.CodeType:
        return lambda _pickler, obj: (marshal.loads, (marshal.dumps(obj),))
    if kind is _thread.LockType:
        return lambda _pickler, _obj: (_thread.allocate_lock, ())
    if kind is _RLOCK:
        return lambda _pickler, _obj: (threading.RLock, ())
    if issubclass(kind, anyio.Event):
        return lambda _pickler, obj: (_anyio_event, (obj.is_set(),))
    if issubclass(kind, fsspec.AbstractFileSystem):
        return lambda _pickler, obj: _file_system_reduction(obj)
    if kind is AppTool:
        return _reduce_tool
    if issubclass(kind, SkippableDeepCopy):
        # ARE's apps leave out of their pickles the callbacks that log their events into
        # the environment (its `__getstate__`); a copy of the session needs them.
        return lambda _pickler, obj: (
            _new_object,
            (type(obj),),
            dict(vars(obj)),
            None,
            None,
            _set_attributes,
        )
    return None


# Types are few and most live as long as the process: the decision for each is kept.
_reducers: dict[type[Any], Any] = {}
_MAX_TYPES = 10_000


def _reduce_tool(pickler: _Pickler, tool: AppTool) -> Any:
    if not _foreign_tool(tool, pickler._apps):
        return NotImplemented
    return _new_object, (AppTool,), {**vars(tool), "class_instance": None, "function": None}


_RLOCK = type(threading.RLock())


def _foreign_tool(tool: AppTool, apps: set[int]) -> bool:
    """Whether `tool` belongs to an app of another session. ARE parks each app's `AppTool` on
    the app class's shared method, and every `Action` made later keeps the one there as its
    `tool_metadata` (names and descriptions, for display): through it, a session's graph
    reaches whichever session registered that class's app last, whose copy would be that
    whole session. Such a tool is copied without its app and function."""
    owner = tool.class_instance
    return owner is not None and id(owner) not in apps


# Functions with no closure, shared by a copy with the state it was copied from, as
# `copy.deepcopy` shares them (their code and globals are the process's): by id, for the
# process's life (snapshots never leave the process). Pickling them by name fails for the
# originals that ARE's decorators keep beside the wrappers their classes expose.
_shared: dict[int, Any] = {}


def _shared_function(key: int) -> Any:
    return _shared[key]


def _reduce_function(function: types.FunctionType) -> Any:
    if function.__module__ == __name__:
        return NotImplemented  # this module's rebuilders: by name
    if _module_level(function):
        _shared.setdefault(id(function), function)
        return _shared_function, (id(function),)
    # The function is made first with empty cells and memoized, then its cells are filled:
    # a closure may hold the function itself (a recursive local function).
    cells = function.__closure__ or ()
    # Its globals by id too: those of the module that defined its code, which is not always
    # the one its `__module__` names (`functools.wraps` copies the wrapped function's).
    _shared.setdefault(id(function.__globals__), function.__globals__)
    shell = (
        function.__code__,
        id(function.__globals__),
        function.__name__,
        function.__defaults__,
        function.__kwdefaults__,
        None if function.__closure__ is None else len(cells),
        function.__qualname__,
    )
    contents = (tuple(cell.cell_contents for cell in cells), dict(function.__dict__))
    return _function, shell, contents, None, None, _fill_function


def _module_level(function: types.FunctionType) -> bool:
    """A function a copy may share with its source: its module's own, found there by name,
    holding no state (no closure, defaults or attributes). A bounded set, unlike local
    functions, which are rebuilt so that a copy never reaches its source through them."""
    if function.__closure__ or function.__dict__ or function.__defaults__:
        return False
    if function.__kwdefaults__:
        return False
    module = sys.modules.get(function.__module__)
    return module is not None and getattr(module, function.__qualname__, None) is function


def _function(
    code: types.CodeType,
    namespace_key: int,
    name: str,
    defaults: tuple[Any, ...] | None,
    kwdefaults: dict[str, Any] | None,
    n_cells: int | None,
    qualname: str,
) -> types.FunctionType:
    namespace = _shared[namespace_key]
    cells = None if n_cells is None else tuple(types.CellType() for _ in range(n_cells))
    function = types.FunctionType(code, namespace, name, defaults, cells)
    function.__kwdefaults__ = kwdefaults
    function.__qualname__ = qualname
    return function


def _fill_function(
    function: types.FunctionType, contents: tuple[tuple[Any, ...], dict[str, Any]]
) -> None:
    values, attributes = contents
    for cell, value in zip(function.__closure__ or (), values, strict=True):
        cell.cell_contents = value
    function.__dict__.update(attributes)


def _anyio_event(is_set: bool) -> anyio.Event:
    event = anyio.Event()
    if is_set:
        event.set()
    return event


def _file_system_reduction(fs: fsspec.AbstractFileSystem) -> Any:
    """A copy of `fs`'s attributes (never fsspec's cached instance); for ARE's sandbox file
    system, its files too, written into a new directory when thawed."""
    from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem

    state = dict(vars(fs))
    if isinstance(fs, SandboxLocalFileSystem):
        state.pop("_validate_path", None)  # the confinement's closure over the old directory
        return _new_object, (type(fs),), (state, _read_tree(fs.tmpdir)), None, None, _reroot
    return _new_object, (type(fs),), state, None, None, _set_attributes


def _new_object(cls: type[Any]) -> Any:
    return object.__new__(cls)


def _set_attributes(obj: Any, attributes: dict[str, Any]) -> None:
    # Not through `__setstate__`: fsspec wrappers forward unknown attributes to a file system
    # they do not have yet, and looking that method up would recurse.
    obj.__dict__.update(attributes)


def _read_tree(root: str) -> list[tuple[str, bytes | None]]:
    """Every directory (None) and file (its bytes) under `root`, relative to it."""
    tree: list[tuple[str, bytes | None]] = []
    for directory, _subdirs, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        tree.append((relative, None))
        for name in files:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as file:
                    tree.append((os.path.join(relative, name), file.read()))
    return tree


def _reroot(fs: Any, state: tuple[dict[str, Any], list[tuple[str, bytes | None]]]) -> None:
    """Thaw a sandbox file system into a new directory beside the one it was copied from."""
    attributes, tree = state
    fs.__dict__.update(attributes)
    old = attributes["tmpdir"]
    new = tempfile.mkdtemp(dir=os.path.dirname(old), prefix="are_simulation_fs_sandbox_")
    for relative, content in tree:
        path = os.path.normpath(os.path.join(new, relative))
        if content is None:
            os.makedirs(path, exist_ok=True)
        else:
            with open(path, "wb") as file:
                file.write(content)
    fs.tmpdir = new
    local = attributes.get("local_fs")
    if local is not None and getattr(local, "base_root", None) == old:
        local.base_root = new
    confine_file_system(fs)
