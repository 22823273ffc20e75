"""Linux's Landlock through ctypes: the three system calls, their structs and access rights.

A process restricts itself: it creates a ruleset naming the rights it *handles* (everything
this kernel's ABI knows), adds a rule for each path or TCP port it still allows, and enforces
the ruleset on itself; from then on every handled right not granted by a rule is refused by
the kernel (EACCES), for this thread and every thread and process it starts. A process can
only ever add restrictions, never lift them.

Why ctypes and not a binding from PyPI: the bindings there (`landlock`, `landlockpy`,
`py-landlock`) are pre-releases or a few months old, and none documents the TCP rights of ABI
4 with the scopes of ABI 6; the kernel interface is three calls and three structs, written
down here once, against `include/uapi/linux/landlock.h`.

The rights by ABI version (`abi()`), each handled only where the kernel has it:

* 1: the file rights (execute, read, write, list, make and remove entries).
* 2: `REFER` (link or rename a file into another directory).
* 3: `TRUNCATE`.
* 4: TCP `bind` and `connect`, by port.
* 5: `IOCTL_DEV` (ioctl on character and block devices).
* 6: scopes: no connecting to abstract Unix sockets, and no signals, outside the domain.
* 7: audit logging flags only (no new right).

Linux only, on the system call numbers shared by x86-64 and arm64 (444-446).
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass

__all__ = [
    "FS_READ",
    "FS_WRITE",
    "LandlockError",
    "Ruleset",
    "abi",
    "fs_rights",
    "net_rights",
    "scopes",
]

_CREATE_RULESET = 444
_ADD_RULE = 445
_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2

# File rights (ABI 1 unless said).
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
# Network rights (ABI 4).
BIND_TCP = 1 << 0
CONNECT_TCP = 1 << 1
# Scopes (ABI 6).
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

FS_READ = EXECUTE | READ_FILE | READ_DIR  # what a read-only path grants
FS_WRITE = ~0  # what a read-write path grants: every file right the ABI has
# The rights a rule on a file (not a directory) may grant.
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LandlockError(OSError):
    """A Landlock call failed (the kernel lacks it, or refused a rule)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def _check(result: int, what: str) -> int:
    if result < 0:
        number = ctypes.get_errno()
        raise LandlockError(number, f"landlock {what}: {os.strerror(number)}")
    return result


def abi() -> int:
    """This kernel's Landlock ABI version; 0 when it has none (not Linux, not built in, or
    not enabled at boot: `lsm=` lacks `landlock`)."""
    if sys.platform != "linux":
        return 0
    version = _libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def fs_rights(version: int) -> int:
    """Every file right of ABI `version`."""
    if version < 1:
        return 0
    rights = (MAKE_SYM << 1) - 1
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    if version >= 5:
        rights |= IOCTL_DEV
    return rights


def net_rights(version: int) -> int:
    """Every network right of ABI `version`."""
    return BIND_TCP | CONNECT_TCP if version >= 4 else 0


def scopes(version: int) -> int:
    """Every scope of ABI `version`."""
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0


@dataclass
class Ruleset:
    """A ruleset handling every right of ABI `version` (an open file descriptor until
    `restrict_self` or `close`)."""

    version: int
    fd: int = -1

    def __post_init__(self) -> None:
        attr = _RulesetAttr(fs_rights(self.version), net_rights(self.version), scopes(self.version))
        # An older kernel refuses fields it does not know, so pass only this ABI's.
        size = 8 if self.version < 4 else 16 if self.version < 6 else 24
        self.fd = _check(
            _libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
            "create_ruleset",
        )

    def allow_path(self, path: str, rights: int) -> None:
        """Grant `rights` (masked to this ABI's, and to a file's when `path` is not a
        directory) on `path` and beneath it."""
        flags = os.O_PATH | os.O_CLOEXEC
        parent = os.open(path, flags)
        try:
            allowed = rights & fs_rights(self.version)
            if not os.path.isdir(path):
                allowed &= _FILE_RIGHTS
            attr = _PathBeneathAttr(allowed, parent)
            _check(
                _libc.syscall(_ADD_RULE, self.fd, _RULE_PATH_BENEATH, ctypes.byref(attr), 0),
                f"add_rule {path}",
            )
        finally:
            os.close(parent)

    def allow_port(self, port: int, rights: int) -> None:
        """Grant network `rights` on TCP `port` (ABI 4 and later)."""
        attr = _NetPortAttr(rights & net_rights(self.version), port)
        _check(
            _libc.syscall(_ADD_RULE, self.fd, _RULE_NET_PORT, ctypes.byref(attr), 0),
            f"add_rule port {port}",
        )

    def restrict_self(self) -> None:
        """Enforce the ruleset on this thread (and what it starts from now on); close it."""
        try:
            _check(_libc.syscall(_RESTRICT_SELF, self.fd, 0), "restrict_self")
        finally:
            self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
