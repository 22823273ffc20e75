"""How a client connects: the options of :func:`~areasync.client.connect`, in one record.

:func:`~areasync.client.connect` documents each option and builds the record; the connection
layer reads it and nothing changes it afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from areasync.protocol import Encoding, Role

__all__ = ["ConnectOptions"]


@dataclass(frozen=True, kw_only=True)
class ConnectOptions:
    """How a client connects and reconnects; :func:`~areasync.client.connect` documents each."""

    url: str
    role: Role
    token: str = field(repr=False)
    encoding: Encoding
    reconnect: bool
    since: int | None
    max_reconnect_attempts: int | None
    backoff_initial: float
    backoff_max: float
    open_timeout: float | None
    batch: bool
    ws_options: Mapping[str, Any]
