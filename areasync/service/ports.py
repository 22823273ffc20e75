"""TCP port numbers: the one check of whether a number is one.

A port is checked where the server listens (`--port`, `ServiceConfig.port`: 0 asks for any free
port), where a client names one (a Host header, an allowed host or origin: 0 is no port), and
in a range of them (`--gaia2-ports`).
"""

from __future__ import annotations

from typing import Final

PORT_MAX: Final = 65535


def is_port(value: int, *, any_free: bool = True) -> bool:
    """Whether `value` is a TCP port number; 0 (any free port) only if `any_free`."""
    return (0 if any_free else 1) <= value <= PORT_MAX


def port_range_problems(ports: tuple[int, int] | None) -> list[str]:
    """What is wrong with a range of ports (first, last): ports 1-65535, first <= last."""
    if ports is None:
        return []
    first, last = ports
    if not (is_port(first, any_free=False) and is_port(last, any_free=False) and first <= last):
        return [
            f"gaia2_ports must be a range FIRST-LAST of ports 1-{PORT_MAX} with FIRST <= LAST, "
            f"got {first}-{last} (--gaia2-ports 9100-9199: a port per session)"
        ]
    return []
