"""What a server says as it starts, importable without the server: its error, its URLs' host,
why a port could not be bound, the id a `--scenario` source gets.

The front process (`front/`) says the same things as `Service` does and imports no ARE, so
these live apart from `server.py` (which imports the bridge).
"""

from __future__ import annotations

import errno as _errno
import socket
from pathlib import Path
from typing import Any

from areasync.service.ports import is_port
from areasync.service.sessions.names import safe_id

__all__ = ["ServiceError", "display_host", "is_file", "listen_error", "natural_id"]


class ServiceError(Exception):
    """The service could not start (a scenario failed to load, the port is taken...)."""


def display_host(host: str) -> str:
    """The host part of URLs shown to users (a wildcard bind is reached via loopback)."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def is_file(source: Any) -> bool:
    """Whether `source` names a JSON file (as `--scenario` takes one)."""
    return isinstance(source, Path) or (isinstance(source, str) and source.endswith(".json"))


def natural_id(source: Any) -> str | None:
    """The session id a `--scenario` source gets when none is taken (`session_id_for`), if
    it can be told without loading it."""
    if is_file(source):
        return safe_id(Path(source).stem)
    if isinstance(source, str) and not source.lstrip().startswith("{"):
        return safe_id(source)
    return None


def listen_error(host: str, port: int, exc: BaseException) -> str:
    """What went wrong binding ``host:port``, and which option to change: one line."""
    where = f"cannot listen on {host}:{port}"
    errno = getattr(exc, "errno", None)
    if isinstance(exc, OverflowError) or not is_port(port):
        return f"{where}: a port is 0-65535 (0: any free port); pick another --port"
    if errno == _errno.EADDRINUSE:
        return f"{where}: the port is in use; pick another --port or stop the process using it"
    if errno == _errno.EACCES:
        return f"{where}: permission denied (ports below 1024 need privileges); pick another --port"
    hosts = "pick another --host (127.0.0.1: this machine only; 0.0.0.0: every interface)"
    if isinstance(exc, socket.gaierror):
        return f"{where}: the name {host!r} does not resolve ({exc.strerror or exc}); {hosts}"
    if errno == _errno.EADDRNOTAVAIL:
        return f"{where}: {host!r} is not an address of this machine; {hosts}"
    return f"{where} ({exc}); check --host and --port"
