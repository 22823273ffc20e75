"""The kernel's confinement a worker process applies to itself, right after it starts.

An agent's tool calls run inside ARE's apps in a worker; the audit-hook sandbox
(`bridge/sandbox/audit.py`) runs in that same process, where hostile code could reach it. This is
the layer it cannot reach: once `confine(spec)` has returned, the kernel refuses what the
spec does not allow, for this process and all it starts, and nothing in the process can lift
it. `Confinement` says what a worker may still do:

* **Files (Landlock).** Read (and execute) beneath `read_only`, everything beneath
  `read_write`, nothing else: no other process's `/proc/<pid>/` (nor its own, unless
  `own_proc`: read-only, for its resident memory), no state dir's `admin-token`, no home
  directory. `runtime_paths()` is what Python and this package need to run (the
  standard library, the site-packages, this package, the loader's libraries, the few files of
  `/etc` that name resolution and TLS read, `/dev/null` and `/dev/urandom`); a spec adds its
  own. Every right of this kernel's ABI is handled, so a right a newer ABI adds (`REFER`,
  `TRUNCATE`, `IOCTL_DEV`) is refused too outside `read_write`.
* **Network.** Landlock (ABI 4) allows TCP `connect` only to `connect_ports` and `bind` to
  none; the seccomp filter (`seccomp.py`) refuses every new socket but `AF_UNIX`, and TCP
  ones when `connect_ports` is not empty, UDP ones when `datagrams` is set (name resolution).
  ABI 6 scopes: no abstract Unix socket and no signal outside the worker's own domain.
* **Privileges.** `no_new_privs`: nothing the worker executes gains privileges (set-uid
  files, file capabilities).
* **Limits.** `RLIMIT_AS` at `memory_bytes`, `RLIMIT_NOFILE` at `files` (soft and hard: the
  worker cannot raise them again). A cgroup would bound resident memory rather than address
  space, but needs a delegated cgroup v2 subtree: not something an unprivileged process can
  count on.

What the kernel lacks is left out and said (`Report.missing`), unless the spec is `required`,
when `confine` raises `ConfinementUnavailable` instead. `probe()` says what this kernel
supports without changing anything, so a start-up can say "running unconfined because ..."
and `--require-confinement` can refuse before starting a worker.

Confinement is for a process with one thread: Landlock binds the calling thread and what it
starts, so a thread already running would stay free. `confine` refuses (ConfinementError) a
process with more than one thread.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import resource
import site
import sys
import sysconfig
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from areasync.workers import landlock, seccomp

__all__ = [
    "Confinement",
    "ConfinementError",
    "ConfinementUnavailable",
    "Report",
    "Support",
    "confine",
    "confine_session_worker",
    "endpoint_reach",
    "probe",
    "runtime_paths",
    "session_worker_confinement",
    "worker_tmp",
]

_LINUX = sys.platform == "linux"
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39
_libc = ctypes.CDLL(None, use_errno=True)

# Read by the loader, name resolution and TLS; each only where it exists.
_SYSTEM_READ = (
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local/lib",
    "/usr/share/zoneinfo",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/dev/urandom",
    "/dev/random",
)
_SYSTEM_WRITE = ("/dev/null",)
_MIN_ABI = 4  # files and TCP: what `required` means
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOSTED_PORT = 443  # a provider's own API, when no endpoint is given


class ConfinementError(RuntimeError):
    """The spec could not be applied as given (a path that does not exist, a process with
    threads)."""


class ConfinementUnavailable(ConfinementError):
    """The spec is `required` and this kernel lacks part of it (`Support.missing`)."""


class Confinement(msgspec.Struct, frozen=True):
    """What a confined worker may still do (module docstring). Paths are absolute."""

    read_only: tuple[str, ...] = ()
    read_write: tuple[str, ...] = ()
    connect_ports: tuple[int, ...] = ()  # TCP ports it may connect to (its model endpoints)
    datagrams: bool = False  # UDP sockets (name resolution, to any destination)
    memory_bytes: int | None = None  # RLIMIT_AS; None: left as inherited
    files: int | None = None  # RLIMIT_NOFILE; None: left as inherited
    # The worker makes `<tmp_under>/worker-<pid>` (mode 700), its temp dir (`tempfile.tempdir`
    # and TMPDIR) and read-write: what its driver removes once the worker is gone.
    tmp_under: str | None = None
    required: bool = False  # refuse (ConfinementUnavailable) rather than apply part of it
    # Read its own `/proc/<pid>/` (a session worker's memory ceiling reads `statm` there);
    # never another process's.
    own_proc: bool = False


class Support(msgspec.Struct, frozen=True):
    """What this kernel supports (`probe()`)."""

    landlock_abi: int  # 0: none
    seccomp: str | None  # None: the filter can be installed; otherwise why not

    @property
    def missing(self) -> tuple[str, ...]:
        """What a confinement would leave out here, each with its reason."""
        out = []
        if self.landlock_abi == 0:
            out.append(
                "this kernel has no Landlock (needs Linux 5.13 or later, with landlock in "
                "its lsm= boot list): files and TCP are not confined"
            )
        elif self.landlock_abi < _MIN_ABI:
            out.append(
                f"this kernel's Landlock is ABI {self.landlock_abi}: TCP connect and bind "
                "are not confined (needs ABI 4, Linux 6.7)"
            )
        if self.seccomp is not None:
            out.append(f"{self.seccomp}: new UDP, raw and netlink sockets are not refused")
        return tuple(out)

    def describe(self) -> str:
        """One line: what confinement gives here."""
        if self.missing:
            return (
                "workers run partly unconfined: "
                + "; ".join(self.missing)
                + " (the in-process audit-hook sandbox still guards each session's files)"
            )
        return (
            f"workers confined by the kernel (Landlock ABI {self.landlock_abi}, seccomp, "
            "no_new_privs, rlimits)"
        )


class Report(msgspec.Struct, frozen=True):
    """What `confine` applied to this process."""

    pid: int
    landlock_abi: int  # the ABI whose rights were handled (0: no Landlock)
    files_confined: bool
    tcp_confined: bool  # Landlock's TCP rights handled
    scoped: bool  # ABI 6 scopes: abstract Unix sockets and signals
    sockets_filtered: bool  # the seccomp filter is installed
    no_new_privs: bool
    memory_bytes: int | None
    files: int | None
    tmp: str | None  # its own temp dir (`Confinement.tmp_under`)
    missing: tuple[str, ...] = ()  # what was left out, and why

    @property
    def confined(self) -> bool:
        """Everything the spec asked for was applied."""
        return not self.missing


def probe() -> Support:
    """What this kernel supports, changing nothing."""
    return Support(landlock.abi(), seccomp.supported())


def _existing(paths: list[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for path in paths:
        if path and os.path.exists(path):
            seen.setdefault(os.path.realpath(path))
    return tuple(seen)


def runtime_paths() -> tuple[str, ...]:
    """What this interpreter and this package read to run: the standard library, the
    site-packages, the package's directory, and `_SYSTEM_READ`'s files (those that exist)."""
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    paths = [sysconfig.get_paths()[name] for name in names]
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    paths += [sysconfig.get_paths(vars=base)[name] for name in names]
    paths += [*site.getsitepackages(), site.getusersitepackages()]
    paths.append(str(Path(__file__).resolve().parents[1]))  # the areasync package
    return _existing([*paths, *_SYSTEM_READ])


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _no_new_privs() -> bool:
    return _LINUX and bool(_libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)


def _limit(kind: int, value: int | None) -> None:
    if value is not None:
        resource.setrlimit(kind, (value, value))


def _ruleset(spec: Confinement, tmp: str | None, version: int) -> landlock.Ruleset:
    """The Landlock ruleset of `spec` (module docstring), every rule added, not enforced."""
    ruleset = landlock.Ruleset(version)
    try:
        own = [f"/proc/{os.getpid()}"] if spec.own_proc and _LINUX else []
        for path in (*runtime_paths(), *spec.read_only, *own):
            ruleset.allow_path(path, landlock.FS_READ)
        writable = (*_existing(list(_SYSTEM_WRITE)), *spec.read_write)
        for path in (*writable, *([tmp] if tmp else [])):
            ruleset.allow_path(path, landlock.FS_WRITE)
        if version >= _MIN_ABI:
            for port in spec.connect_ports:
                ruleset.allow_port(port, landlock.CONNECT_TCP)
    except BaseException:
        ruleset.close()
        raise
    return ruleset


def confine(spec: Confinement, support: Support | None = None) -> Report:
    """Apply `spec` to this process (module docstring); what was applied. Irreversible.
    `support` is what the kernel has (by default `probe()`'s answer)."""
    support = support or probe()
    if spec.required and support.missing:
        raise ConfinementUnavailable(
            "the kernel cannot confine this worker as required: "
            + "; ".join(support.missing)
            + " (run without --require-confinement to run it less confined)"
        )
    if _threads() > 1:
        raise ConfinementError(
            f"a process with {_threads()} threads cannot be confined: confine it before "
            "it starts any thread"
        )
    for path in (*spec.read_only, *spec.read_write):
        if not os.path.isabs(path) or not os.path.exists(path):
            raise ConfinementError(
                f"the confinement's path {path!r} is not an existing absolute path: "
                "create it before confining"
            )
    tmp = None if spec.tmp_under is None else worker_tmp(spec.tmp_under, os.getpid())
    if tmp is not None:
        _make_tmp(tmp)
    version = support.landlock_abi
    # Every rule is made before anything is applied: a rule the kernel refuses changes nothing.
    ruleset = _ruleset(spec, tmp, version) if version else None
    try:
        if tmp is not None:
            _use_tmp(tmp)
        _limit(resource.RLIMIT_AS, spec.memory_bytes)
        _limit(resource.RLIMIT_NOFILE, spec.files)
        if _LINUX and _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            number = ctypes.get_errno()
            raise ConfinementError(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(number)}")
        filtered = support.seccomp is None
        if filtered:
            seccomp.install(seccomp.Sockets(tcp=bool(spec.connect_ports), udp=spec.datagrams))
        if ruleset is not None:
            ruleset.restrict_self()
    finally:
        if ruleset is not None:
            ruleset.close()
    return Report(
        pid=os.getpid(),
        landlock_abi=version,
        files_confined=version >= 1,
        tcp_confined=version >= _MIN_ABI,
        scoped=version >= 6,
        sockets_filtered=filtered,
        no_new_privs=_no_new_privs(),
        memory_bytes=spec.memory_bytes,
        files=spec.files,
        tmp=tmp,
        missing=support.missing,
    )


def session_worker_confinement(
    journals_dir: str,
    sandbox_roots: tuple[str, ...],
    tmp_under: str,
    *,
    connect_ports: tuple[int, ...] = (),
    required: bool = False,
) -> Confinement:
    """The confinement of a worker serving sessions, for its pool (`WorkerPool(confinement=)`).

    The rule: it writes only its sessions' journals (`journals_dir`: the state dir's
    `sessions/`, never the state dir itself, which holds `admin-token`), the directories its
    sessions' sandboxes are made under (`sandbox_roots`: they must exist when the worker
    starts, so give the parent each session's sandbox is made in, e.g. ARE's
    `ARE_SIMULATION_SANDBOX_PATH` moved under the worker's temp dir as
    `gaia2.confinement.serving` does, not one directory per session), and its own temp dir
    (`worker_tmp(tmp_under, pid)`); it reads only what Python and areasync need
    (`runtime_paths()`); it opens no network socket: the connections it serves reach it over
    its Unix channel, already accepted; `connect_ports` are the TCP ports it may still connect
    to (a judge's model endpoint), none by default."""
    return Confinement(
        read_write=(journals_dir, *sandbox_roots),
        connect_ports=connect_ports,
        tmp_under=tmp_under,
        required=required,
    )


def confine_session_worker(
    journals_dir: str,
    sandbox_roots: tuple[str, ...],
    tmp_under: str,
    *,
    connect_ports: tuple[int, ...] = (),
    required: bool = False,
) -> Report:
    """`session_worker_confinement`'s rule applied by the calling process to itself, for a
    worker not started by a `WorkerPool`: call it first thing, before any thread starts."""
    spec = session_worker_confinement(
        journals_dir, sandbox_roots, tmp_under, connect_ports=connect_ports, required=required
    )
    return confine(spec)


def endpoint_reach(url: str | None) -> tuple[int, bool]:
    """(TCP port, whether name resolution is needed) of a model endpoint's URL: its port, or
    its scheme's; None (no endpoint: a hosted provider's own API) is 443, by name."""
    if not url:
        return _HOSTED_PORT, True
    parts = urlsplit(url)
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme, _HOSTED_PORT)
    return port, not _literal(parts.hostname or "")


def _literal(host: str) -> bool:
    """Whether `host` needs no name resolution over the network."""
    if host == "localhost":
        return True  # /etc/hosts
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _make_tmp(tmp: str) -> None:
    """Make the worker's temp dir in its `tmp_under`, which must exist: a worker whose pool
    has already removed it (a start the pool's closing cancelled) must not make it again."""
    try:
        os.mkdir(tmp, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise ConfinementError(
            f"the temp dir's parent {os.path.dirname(tmp)!r} does not exist (its pool removed "
            "it, or it was never made): create it before confining"
        ) from None


def worker_tmp(tmp_under: str, pid: int) -> str:
    """The temp dir of worker `pid` under `tmp_under` (`Confinement.tmp_under`)."""
    return os.path.join(tmp_under, f"worker-{pid}")


def _use_tmp(tmp: str) -> None:
    tempfile.tempdir = tmp
    os.environ["TMPDIR"] = tmp
