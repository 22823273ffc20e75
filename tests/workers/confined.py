"""Handlers for the confinement tests, served in real confined worker processes.

Each tries one thing a confined worker may or may not do, and answers what happened: the
value, or the exception (which the pool raises as `CallFailed` with its type name).
"""

from __future__ import annotations

import ctypes
import os
import resource
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from tests.workers.handlers import Handlers

_PR_GET_NO_NEW_PRIVS = 39
_PTRACE_SEIZE = 0x4206
_PTRACE_DETACH = 17


async def read(path: str) -> bytes:
    with open(path, "rb") as f:  # noqa: ASYNC230  # a few bytes
        return f.read()


async def listdir(path: str) -> list[str]:
    return os.listdir(path)


async def write(path: str, text: str) -> str:
    with open(path, "w", encoding="utf-8") as f:  # noqa: ASYNC230  # a few bytes
        f.write(text)
    return path


async def connect(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        return str(sock.getpeername())


async def udp() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        return str(sock)


async def open_files(how_many: int) -> int:
    """Open `how_many` descriptors at once, then close them; how many opened."""
    fds: list[int] = []
    try:
        for _ in range(how_many):
            fds.append(os.open(os.devnull, os.O_RDONLY))
    finally:
        for fd in fds:
            os.close(fd)
    return len(fds)


async def raise_fd_limit(to: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (to, to))


async def no_new_privs() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0))


async def signal_process(pid: int) -> None:
    os.kill(pid, 0)  # no signal sent: only whether it may be


async def trace(pid: int) -> None:
    """`PTRACE_SEIZE` process `pid` (it does not stop the tracee), then let it go."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(_PTRACE_SEIZE, pid, None, None) != 0:
        number = ctypes.get_errno()
        raise PermissionError(number, os.strerror(number))
    libc.ptrace(_PTRACE_DETACH, pid, None, None)


async def allocate(size: int) -> int:
    return len(bytearray(size))


async def temp_dir() -> str:
    return tempfile.gettempdir()


@contextmanager
def serving() -> Iterator[Handlers]:
    yield {
        "read": read,
        "listdir": listdir,
        "write": write,
        "connect": connect,
        "udp": udp,
        "open_files": open_files,
        "raise_fd_limit": raise_fd_limit,
        "no_new_privs": no_new_privs,
        "signal_process": signal_process,
        "trace": trace,
        "allocate": allocate,
        "temp_dir": temp_dir,
    }
