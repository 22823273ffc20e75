"""A small seccomp filter that refuses new network sockets, written as classic BPF by hand.

Landlock (`landlock.py`) confines TCP `bind` and `connect` by port, but not UDP, raw, packet
or netlink sockets. This filter closes the rest at the one door every socket goes through:
`socket()` (and `socketpair()`) with a domain other than `AF_UNIX` fails with EACCES, unless
the `Sockets` it was built from allow it:

* `tcp`: `AF_INET`/`AF_INET6` stream sockets of protocol TCP (Landlock then decides which
  ports they may connect to);
* `udp`: `AF_INET`/`AF_INET6` datagram sockets of protocol UDP (name resolution; any
  destination, since nothing here can see where a datagram goes).

It also refuses `io_uring_setup` (io_uring can open sockets without the `socket` call) with
EPERM, and, on x86-64, every system call of the x32 and i386 ABIs (another door to `socket`).
The filter is installed for every thread of the process (`SECCOMP_FILTER_FLAG_TSYNC`) and
inherited by whatever it starts; it needs `no_new_privs` set first. Sockets the process
already holds, or receives over a Unix socket, are untouched.

Linux on x86-64 and arm64 only (`supported()`): elsewhere the caller says it is not applied.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import socket
import struct
import sys
from dataclasses import dataclass

__all__ = ["SeccompError", "Sockets", "install", "supported"]

_SECCOMP = {"x86_64": 317, "aarch64": 277}
# (audit arch, socket, socketpair, io_uring_setup) of each machine.
_ARCH = {
    "x86_64": (0xC000003E, 41, 53, 425),
    "aarch64": (0xC00000B7, 198, 199, 425),
}
_X32_BIT = 0x40000000
_SET_MODE_FILTER = 1
_FLAG_TSYNC = 1
_PR_GET_SECCOMP = 21

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

# Classic BPF opcodes.
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_AND_K = 0x54
_RET_K = 0x06

# seccomp_data offsets: nr, arch, args[i] (their low 32 bits, little-endian).
_NR = 0
_ARCH_OFFSET = 4


def _arg(index: int) -> int:
    return 16 + 8 * index


_SOCK_TYPE_MASK = 0xF  # SOCK_NONBLOCK and SOCK_CLOEXEC are flags above it

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


class SeccompError(OSError):
    """The filter could not be installed."""


@dataclass(frozen=True)
class Sockets:
    """Which network sockets the filter lets the process create (AF_UNIX always)."""

    tcp: bool = False
    udp: bool = False


def supported() -> str | None:
    """None when this kernel and machine can take the filter; otherwise why not."""
    if sys.platform != "linux":
        return f"seccomp is Linux's, and this is {sys.platform}"
    machine = platform.machine()
    if machine not in _ARCH:
        return f"the seccomp filter is written for x86-64 and arm64, not {machine}"
    if _libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
        return "this kernel has no seccomp (CONFIG_SECCOMP)"
    return None


class _Program:
    """Classic BPF instructions, with jumps to labels resolved at the end."""

    def __init__(self) -> None:
        self._code: list[tuple[int, int | str, int | str, int]] = []
        self._labels: dict[str, int] = {}

    def add(self, code: int, k: int = 0, jt: int | str = 0, jf: int | str = 0) -> None:
        self._code.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self._labels[name] = len(self._code)

    def packed(self) -> bytes:
        out = bytearray()
        for at, (code, jt, jf, k) in enumerate(self._code):
            out += struct.pack("<HBBI", code, self._offset(at, jt), self._offset(at, jf), k)
        return bytes(out)

    def _offset(self, at: int, target: int | str) -> int:
        return target if isinstance(target, int) else self._labels[target] - at - 1


def program(sockets: Sockets, machine: str | None = None) -> bytes:
    """The filter for `sockets` on `machine` (this one by default), as packed instructions."""
    arch, socket_nr, socketpair_nr, io_uring_nr = _ARCH[machine or platform.machine()]
    refuse = _RET_ERRNO | errno.EACCES
    p = _Program()
    p.add(_LD_W_ABS, _ARCH_OFFSET)
    p.add(_JEQ_K, arch, 0, "refuse")
    p.add(_LD_W_ABS, _NR)
    p.add(_JGE_K, _X32_BIT, "refuse", 0)
    p.add(_JEQ_K, io_uring_nr, "eperm", 0)
    p.add(_JEQ_K, socketpair_nr, "socketpair", 0)
    p.add(_JEQ_K, socket_nr, "socket", "allow")
    p.label("socketpair")
    p.add(_LD_W_ABS, _arg(0))
    p.add(_JEQ_K, socket.AF_UNIX, "allow", "refuse")
    p.label("socket")
    p.add(_LD_W_ABS, _arg(0))
    p.add(_JEQ_K, socket.AF_UNIX, "allow", 0)
    p.add(_JEQ_K, socket.AF_INET, "inet", 0)
    p.add(_JEQ_K, socket.AF_INET6, "inet", "refuse")
    p.label("inet")
    p.add(_LD_W_ABS, _arg(1))
    p.add(_AND_K, _SOCK_TYPE_MASK)
    p.add(_JEQ_K, socket.SOCK_STREAM, "stream", 0)
    p.add(_JEQ_K, socket.SOCK_DGRAM, "datagram", "refuse")
    p.label("stream")
    if sockets.tcp:
        p.add(_LD_W_ABS, _arg(2))
        p.add(_JEQ_K, 0, "allow", 0)
        p.add(_JEQ_K, socket.IPPROTO_TCP, "allow", "refuse")
    else:
        p.add(_RET_K, refuse)
    p.label("datagram")
    if sockets.udp:
        p.add(_LD_W_ABS, _arg(2))
        p.add(_JEQ_K, 0, "allow", 0)
        p.add(_JEQ_K, socket.IPPROTO_UDP, "allow", "refuse")
    p.label("refuse")
    p.add(_RET_K, refuse)
    p.label("eperm")
    p.add(_RET_K, _RET_ERRNO | errno.EPERM)
    p.label("allow")
    p.add(_RET_K, _RET_ALLOW)
    return p.packed()


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(sockets: Sockets) -> None:
    """Install the filter on every thread of this process (no_new_privs must be set)."""
    why = supported()
    if why is not None:
        raise SeccompError(errno.ENOSYS, why)
    code = program(sockets)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _Fprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    nr = _SECCOMP[platform.machine()]
    if _libc.syscall(nr, _SET_MODE_FILTER, _FLAG_TSYNC, ctypes.byref(fprog)) != 0:
        number = ctypes.get_errno()
        raise SeccompError(number, f"seccomp: {errno.errorcode.get(number, number)}")
