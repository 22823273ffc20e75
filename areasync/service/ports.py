"""TCP port numbers: the one check of whether a number is one.

A port is checked where the server listens (`--port`, `ServiceConfig.port`: 0 asks for any free
port) and where a client names one (a Host header, an allowed host or origin: 0 is no port).
"""

from __future__ import annotations

from typing import Final

PORT_MAX: Final = 65535


def is_port(value: int, *, any_free: bool = True) -> bool:
    """Whether `value` is a TCP port number; 0 (any free port) only if `any_free`."""
    return (0 if any_free else 1) <= value <= PORT_MAX
