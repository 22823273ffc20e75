"""A session's sandbox: the only host files that code run for the session may touch.

Why this exists. ARE's apps reach files two ways. The V2 apps (`EmailClientV2`, `Mail`'s
successor `MessagingAppV2`) use the scenario's file-system app when there is one
(`connect_to_protocols` hands them `internal_fs`, whose `_validate_path` maps every path into
its temporary directory); without one, and always in `EmailClientApp`, `Mail` and
`MessagingApp`, they call the host's `open`, `os.path.exists` and `os.path.join` on whatever
path an agent or a scenario gives: `send_email(attachment_paths=["/proc/self/environ"])` read
the server's environment (its admin token), `download_attachments(path_to_save="/any/dir")`
wrote anywhere writable, an attachment *named* `../../x` in a scenario's `app_state` chose the
file name, a FIFO froze the event loop in `open()`, `/dev/zero` ate the memory.

Confining those few tools would leave every app ARE adds later open. So the confinement is
process-wide and at the level where every file access shows up: a Python audit hook
(`sys.addaudithook`, installed once, never removed) that looks at `open`, directory listings,
creations, removals, renames, links, permission changes, `shutil`'s copies and trees, and
refuses process creation - but only while a `ContextVar` holds the sandbox of the session whose
code is running (`Sandbox.entered()`: around every command and step of the session, see
`Simulation`; `Sandbox.loading()`: around building its scenario). Elsewhere (the service itself,
trace files, ARE's own environments in the conformance suite) the hook returns at once. The
finalizers a garbage collection runs are no session's code either, whichever session's code
allocated: in the collecting thread, and only there, no sandbox is current while it collects.
What one thread does (a collection, a finalizer, building a scenario) never changes what the
hook refuses to another.

Inside a session, what is allowed:

* read and write under the session's *roots*: the temporary directory of each of the
  scenario's file-system apps (`SandboxLocalFileSystem`, `Files`), and, while the scenario is
  built, the ones ARE creates for it (`tempfile.mkdtemp` under ARE's sandbox directory, seen by
  the hook, named as ARE names them: nothing beside them). A session without a file-system app
  has no root: every host path is refused, with a message that says so. Relative paths resolve
  against the server's working directory, as in ARE, which is never a root. Symlinks are
  resolved before the check (a link out of a root is refused);
* read only: each file-system app's fallback directory (ARE fills a sandbox file lazily from it;
  it comes from ARE's `DEMO_FS_PATH` setting or a registered scenario's code, never from JSON)
  and the Python installation (the standard library, site-packages, the `are` and `areasync`
  packages, the time-zone database): lazy imports, `linecache`, `zoneinfo`, pdfminer's font
  tables... read their own files in the middle of a tool call. These are public files.
  `mimetypes` (which reads /etc/mime.types) and `tempfile.gettempdir` are warmed up when the
  hook is installed;
* `tempfile.mkstemp`/`NamedTemporaryFile` in the temporary directory (ARE's PDF reader writes
  the document there for pdfminer): a new file created exclusively (O_CREAT|O_EXCL) can neither
  read nor clobber anything, and the session may then read and remove that file only;
* `/dev/null` (libraries open it to discard output);
* only regular files are opened for reading, and at most `max_file_bytes` of them
  (`ServiceConfig.max_file_bytes`, `areasync serve --max-file-bytes`, 10 MiB by default): a
  FIFO, a device, a socket or a `/proc` file is refused before `open` could block or read for
  ever (`os.stat`, which the hook uses, never blocks on them). The scenario's own JSON file,
  readable while the scenario is built, is the operator's file, not the agent's: it is held
  to the operator's `max_scenario_bytes` before it is read (`operator_files`), not to
  `max_file_bytes`;
* at most `max_files_created` new files and directories over the run (`ServiceConfig
  .max_files_created`, `areasync serve --max-files-created`; None: no cap): what an agent builds
  is what its listings, the session's state and its trace then walk through. Counted when a
  file is created (`open` of a name that does not exist, for writing), a directory made, a link
  added; not while the scenario is built.

A refusal raises `SandboxViolation` (a `PermissionError`) from the operation itself, so the
app raises, ARE logs the failed call as it logs any failing tool, and the caller gets a
`tool_failed` error that names the path and says what is allowed.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import mimetypes
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from threading import get_ident
from typing import Any

from areasync.bridge.sandbox.confinement import confine_file_system
from areasync.bridge.sandbox.paths import (
    in_temp_dir,
    inside,
    installation_dirs,
    is_are_sandbox_dir,
    regular_or_dir,
    resolve,
    shown,
    temp_dir,
)
from areasync.policies import DEFAULT_MAX_FILE_BYTES

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CREATE_NEW = os.O_CREAT | os.O_EXCL


class SandboxViolation(PermissionError):
    """Code running for a session reached for something outside the session's sandbox."""


_current: contextvars.ContextVar[Sandbox | None] = contextvars.ContextVar(
    "areasync_sandbox", default=None
)


def current() -> Sandbox | None:
    """The sandbox of the session whose code is running, if any (none in a thread while it
    runs a garbage collection's finalizers: see `_on_gc`)."""
    if _collecting_in and _collecting_in == get_ident():
        return None
    return _current.get()


class Sandbox:
    """The host files one session may touch (see the module docstring)."""

    def __init__(self, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        if not isinstance(max_file_bytes, int) or max_file_bytes < 0:
            raise ValueError(f"max_file_bytes must be a whole number >= 0, got {max_file_bytes!r}")
        self.max_file_bytes = max_file_bytes
        self.max_files_created: int | None = None  # new files and directories over the run
        self.files_created = 0
        self.roots: list[str] = []  # read and write, real paths
        self.read_roots: list[str] = []  # read only, real paths
        self.temp_files: set[str] = set()  # made by tempfile for this session
        self.is_loading = False
        self.readable: set[str] = set()  # single files readable while loading (its JSON)
        self._created: list[str] = []  # directories ARE made for it at load: see remove_directories
        self._rmtree_seen = False
        # The session's ids and time, drawn while it is entered: a `SessionEntropy`
        # (`areasync.bridge.determinism`, which imports this module, hence `Any` here).
        self.entropy: Any = None

    # -- entering ----------------------------------------------------------------------------

    def entered(self) -> contextlib.AbstractContextManager[None]:
        """Run the body as this session's code: file access outside the sandbox is refused."""
        install()
        return _Entered(self)

    @contextlib.contextmanager
    def loading(self, readable: Iterable[str | os.PathLike[str]] = ()) -> Iterator[None]:
        """Build the session's scenario: as `entered`, and the file-system directories ARE
        creates meanwhile become roots; `readable` files (the scenario's JSON) may be read."""
        self.is_loading = True
        self.readable = {os.path.realpath(path) for path in readable}
        try:
            with self.entered():
                yield
        finally:
            self.is_loading = False
            self.readable = set()

    # -- roots -------------------------------------------------------------------------------

    def adopt(self, apps: Iterable[Any]) -> None:
        """Make the session's roots those of its file-system apps, and confine the apps' own
        path check (ARE's is a string prefix test; see `areasync.bridge.sandbox.confinement`)."""
        from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem

        roots: list[str] = []
        read_roots: list[str] = []
        for app in apps:
            if not isinstance(app, SandboxLocalFileSystem):
                continue
            confine_file_system(app)
            roots.append(os.path.realpath(app.tmpdir))
            fallback = getattr(app.local_fs, "fallback_root", None)
            if isinstance(fallback, str) and "://" not in fallback:
                read_roots.append(os.path.realpath(fallback))
        self.roots = roots
        self.read_roots = read_roots

    def revive(self, apps: Iterable[Any]) -> None:
        """Make a thawed copy of this sandbox one of its own: its roots those of `apps`, the
        copy's file-system apps, whose directories were written anew for it (and are the
        ones `remove_directories` removes); no temporary file of the original's is its."""
        self.temp_files = set()
        self.adopt(apps)
        self._created = list(self.roots)

    def remove_directories(self) -> None:
        """Remove the directories ARE created for the session's file systems."""
        for path in self._created:
            shutil.rmtree(path, ignore_errors=True)
        self._created = []
        self.roots = []
        self.temp_files = set()

    # -- the checks (called by the audit hook, with this sandbox current) --------------------

    def check_read(self, path: Any, *, dir_fd: Any = None, file: bool = False) -> None:
        real = resolve(path, dir_fd)
        if real is None:
            return
        if not (
            real == os.devnull
            or inside(real, self.roots)
            or inside(real, self.read_roots)
            or inside(real, installation_dirs())
            or real in self.temp_files
            or real in self.readable
        ):
            raise SandboxViolation(self._outside(path, "read"))
        if file:
            self._check_regular(path, real, sized=real not in self.readable)

    def check_write(self, path: Any, *, dir_fd: Any = None, follow: bool = True) -> None:
        real = resolve(path, dir_fd, follow=follow)
        if real is None:
            return
        if real == os.devnull or inside(real, self.roots) or real in self.temp_files:
            return
        if self.is_loading and is_are_sandbox_dir(real):
            return
        raise SandboxViolation(self._outside(path, "write"))

    def check_open(self, path: Any, mode: Any, flags: Any) -> None:
        if isinstance(path, int) or path is None:
            return  # an already open descriptor: its opening went through the hook
        flags = flags if isinstance(flags, int) else 0
        writes = bool(flags & _WRITE_FLAGS) or (
            isinstance(mode, str) and any(c in mode for c in "wax+")
        )
        name = os.fsdecode(path)
        if (
            mode is None
            and not writes
            and self._rmtree_seen
            and name not in (".", "..")
            and os.sep not in name
        ):
            # shutil.rmtree descends by directory descriptor (`os.open(name, dir_fd=...)`) and
            # the audit event carries no dir_fd to resolve `name` against; its top was checked.
            return
        if writes:
            real = resolve(path, None)
            if real is not None and (flags & _CREATE_NEW) == _CREATE_NEW and in_temp_dir(real):
                return  # tempfile.mkstemp: a brand-new file, registered below
            if real == temp_dir() and mode is not None:
                # NamedTemporaryFile: `open(tempdir, mode, opener=...)` whose opener makes the
                # file with mkstemp (audited above); the directory itself is never written.
                return
            self.check_write(path)
            if real not in (None, os.devnull) and not regular_or_dir(real):
                raise SandboxViolation(self._not_regular(path))
            if flags & os.O_CREAT or (isinstance(mode, str) and any(c in mode for c in "wax")):
                self.on_create(path, None)
            return
        self.check_read(path, file=True)

    def on_create(self, path: Any, dir_fd: Any) -> None:
        """Count a file or directory about to be made at `path` against `max_files_created`
        (if nothing is there yet: an open of an existing file, a `makedirs` with `exist_ok`
        over existing directories, add nothing)."""
        if self.max_files_created is None or self.is_loading:
            return
        real = resolve(path, dir_fd, follow=False)
        if real is None or os.path.lexists(real):
            return
        if self.files_created >= self.max_files_created:
            raise SandboxViolation(
                f"cannot create {shown(path)}: this session has created {self.files_created} "
                "files and directories, the most a session may create (max_files_created; "
                "removing some gives no room back): work with those there are. The operator "
                "can raise it with `areasync serve --max-files-created`"
            )
        self.files_created += 1

    def on_mkstemp(self, path: Any) -> None:
        real = resolve(path, None)
        if real is not None and in_temp_dir(real):
            self.temp_files.add(real)

    def on_mkdtemp(self, path: Any) -> None:
        real = resolve(path, None)
        if real is not None and self.is_loading and is_are_sandbox_dir(real):
            self.roots.append(real)
            self._created.append(real)

    def on_rmtree(self, path: Any, dir_fd: Any) -> None:
        self.check_write(path, dir_fd=dir_fd, follow=False)
        self._rmtree_seen = True

    def on_remove(self, path: Any, dir_fd: Any) -> None:
        self.check_write(path, dir_fd=dir_fd, follow=False)
        real = resolve(path, dir_fd, follow=False)
        self.temp_files.discard(real or "")

    def _check_regular(self, path: Any, real: str, *, sized: bool = True) -> None:
        try:
            info = os.stat(real)
        except OSError:
            return  # does not exist: `open` reports that itself
        if stat.S_ISDIR(info.st_mode):
            return  # `open` refuses a directory itself; os.open of one lists nothing
        if not stat.S_ISREG(info.st_mode) and real != os.devnull:
            raise SandboxViolation(self._not_regular(path))
        if sized and info.st_size > self.max_file_bytes:
            raise SandboxViolation(
                f"{os.fsdecode(path)!r} is {info.st_size} bytes, above this session's limit of "
                f"{self.max_file_bytes} bytes per file (max_file_bytes): use a smaller file"
            )

    def _outside(self, path: Any, action: str) -> str:
        where = (
            "its file-system app's files (paths such as '/Documents/report.pdf' in the Files "
            "or SandboxLocalFileSystem app)"
            if self.roots
            else "nothing on the host: this scenario has no file-system app (Files or "
            "SandboxLocalFileSystem), so there are no files to attach, read or save to"
        )
        return (
            f"cannot {action} {shown(path)}: it is outside this session's sandbox. A session "
            f"may {action} {where}; host paths, '..' and symlinks out of it are refused"
        )

    def _not_regular(self, path: Any) -> str:
        return (
            f"cannot open {shown(path)}: only regular files (at most {self.max_file_bytes} "
            "bytes) may be opened in a session's sandbox, not FIFOs, devices or sockets"
        )


class _Entered:
    """`with sandbox.entered():` - a plain class, not a generator: it is on every command."""

    __slots__ = ("sandbox", "token")

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.token: contextvars.Token[Sandbox | None] | None = None

    def __enter__(self) -> None:
        self.sandbox._rmtree_seen = False
        self.token = _current.set(self.sandbox)

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            _current.reset(self.token)
            self.token = None


# -- the audit hook -------------------------------------------------------------------------


def _refuse_process(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
    raise SandboxViolation(
        "a session's tools may not start processes, send signals or change the server's environment"
    )


_Handler = Callable[["Sandbox", tuple[Any, ...]], None]


def _path_then_dir_fd(check: str, follow: bool = True) -> _Handler:
    def handler(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
        dir_fd = args[-1] if len(args) > 1 and isinstance(args[-1], int) else None
        if check == "read":
            sandbox.check_read(args[0], dir_fd=dir_fd)
        else:
            sandbox.check_write(args[0], dir_fd=dir_fd, follow=follow)

    return handler


def _read_path(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
    sandbox.check_read(args[0])


def _write_path(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
    sandbox.check_write(args[0])


def _copy(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
    sandbox.check_read(args[0], file=False)
    sandbox.check_write(args[1])


def _mkdir(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
    dir_fd = args[-1] if len(args) > 1 and isinstance(args[-1], int) else None
    sandbox.check_write(args[0], dir_fd=dir_fd)
    sandbox.on_create(args[0], dir_fd)


def _rename(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
    sandbox.check_write(args[0], dir_fd=args[2], follow=False)
    sandbox.check_write(args[1], dir_fd=args[3], follow=False)


def _link(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
    sandbox.check_write(args[0], dir_fd=args[2])  # a hard link shares the target's data
    sandbox.check_write(args[1], dir_fd=args[3], follow=False)
    sandbox.on_create(args[1], args[3])


def _symlink(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
    target, link, dir_fd = args
    sandbox.check_write(link, dir_fd=dir_fd, follow=False)
    real_link = resolve(link, dir_fd, follow=False) or ""
    sandbox.check_write(os.path.join(os.path.dirname(real_link), os.fsdecode(target)))
    sandbox.on_create(link, dir_fd)


def _sqlite(sandbox: Sandbox, args: tuple[Any, ...]) -> None:
    database = args[0]
    if database not in (":memory:", b":memory:", ""):
        sandbox.check_write(database)


_HANDLERS: dict[str, _Handler] = {
    "open": lambda sandbox, args: sandbox.check_open(*args),
    "os.listdir": _read_path,
    "os.scandir": _read_path,
    "os.listxattr": _read_path,
    "os.getxattr": _read_path,
    "os.mkdir": _mkdir,
    "os.rmdir": lambda sandbox, args: sandbox.on_remove(args[0], args[1]),
    "os.remove": lambda sandbox, args: sandbox.on_remove(args[0], args[1]),
    "os.rename": _rename,
    "os.link": _link,
    "os.symlink": _symlink,
    "os.chmod": _path_then_dir_fd("write"),
    "os.chown": _path_then_dir_fd("write"),
    "os.chflags": _write_path,
    "os.lchflags": _write_path,
    "os.lchmod": _write_path,
    "os.lchown": _write_path,
    "os.utime": _path_then_dir_fd("write"),
    "os.truncate": _write_path,
    "os.setxattr": _write_path,
    "os.removexattr": _write_path,
    "shutil.copyfile": _copy,
    "shutil.copymode": _copy,
    "shutil.copystat": _copy,
    "shutil.copytree": _copy,
    "shutil.chown": _write_path,
    "shutil.rmtree": lambda sandbox, args: sandbox.on_rmtree(args[0], args[1]),
    "shutil.make_archive": lambda sandbox, args: sandbox.check_write(args[0]),
    "shutil.unpack_archive": _copy,
    "sqlite3.connect": _sqlite,
    "tempfile.mkstemp": lambda sandbox, args: sandbox.on_mkstemp(args[0]),
    "tempfile.mkdtemp": lambda sandbox, args: sandbox.on_mkdtemp(args[0]),
    "os.system": _refuse_process,
    "os.exec": _refuse_process,
    "os.posix_spawn": _refuse_process,
    "os.spawn": _refuse_process,
    "os.fork": _refuse_process,
    "os.forkpty": _refuse_process,
    "os.kill": _refuse_process,
    "os.killpg": _refuse_process,
    "os.putenv": _refuse_process,
    "os.unsetenv": _refuse_process,
    "subprocess.Popen": _refuse_process,
    "pty.spawn": _refuse_process,
}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    # Runs on every audited event of the process (imports, compiles, sys._getframe...): the
    # dict lookup sends everything that is not a file operation back at once, and a file
    # operation outside any session costs one ContextVar read more.
    handler = _HANDLERS.get(event)
    if handler is None:
        return
    sandbox = current()
    if sandbox is None:
        return
    # The checks stat and resolve paths, which raise no audit events: no re-entry.
    handler(sandbox, args)


_installed = False


# The thread a garbage collection runs in, 0 while none runs. The finalizers and weakref
# callbacks a collection calls belong to whatever object it frees (another session's file
# system removing its own directory, say), not to the session whose code allocated: in that
# thread, for the collection, no session's code runs (`current()` is None), and only there: a
# session's code in any other thread keeps its sandbox. CPython runs one collection at a time
# (should two ever overlap, a finalizer would be checked against its thread's session: refused,
# never let through). The callback only writes this int: a collection may start inside
# CPython's own update of a context variable, which Python code run from the callback must not
# touch (a `ContextVar.set` there, or even a first `get`, left the variable's cache stale).
_collecting_in = 0


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    global _collecting_in
    _collecting_in = get_ident() if phase == "start" else 0


def install() -> None:
    """Install the audit hook (once per process; an audit hook cannot be removed)."""
    global _installed
    if _installed:
        return
    # What the standard library reads or probes lazily, done once here, outside any session:
    # mimetypes reads /etc/mime.types (unless a confined worker's fork server read it before
    # the worker, which may not); gettempdir probes candidate directories by writing.
    if not mimetypes.inited:
        mimetypes.init()
    temp_dir()
    installation_dirs()
    gc.callbacks.append(_on_gc)
    sys.addaudithook(_hook)
    _installed = True
