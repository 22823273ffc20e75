"""The server's side of a hello: whether a token opens a role of a session, and a place.

The connection core (`protocol.py`) decides a hello from its `Door` (`hello.py`) and never holds
the token table or the admission pool itself. `ServerDoor` is the door every client of a
session goes through: the WebSocket connection's (`websocket.py`) and the in-process
client's (`inprocess.py`); it remembers whether it counted the connection as authenticated,
so that its owner releases that place when the connection ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from areasync.protocol.frames import Role

if TYPE_CHECKING:
    from areasync.service.gate.admission import Admission
    from areasync.service.gate.auth import Tokens


class ServerDoor:
    """The tokens and admission of the server, for one connection to session `session_id`.

    `verified`: its hello's token was checked already (by the front that handed the socket
    over, `handoff.py`, or by an adapter that checked its own credential): any token opens.
    `admission` (None: not counted) knows the connection by `key`."""

    __slots__ = ("_admission", "_key", "_tokens", "admitted_here", "session_id", "verified")

    def __init__(
        self,
        tokens: Tokens,
        session_id: str,
        *,
        verified: bool = False,
        admission: Admission | None = None,
        key: Any = None,
    ) -> None:
        self._tokens = tokens
        self.session_id = session_id
        self.verified = verified
        self._admission = admission
        self._key = key
        self.admitted_here = False  # counted as authenticated: release it at the end

    def allows(self, token: str, role: Role) -> bool:
        return self.verified or self._tokens.allows(token, self.session_id, role)

    def admit(self) -> bool:
        if self._admission is None:
            return True
        if not self._admission.admit(self._key):
            return False
        self.admitted_here = True
        return True

    def admitted(self) -> int:
        return 0 if self._admission is None else self._admission.authenticated

    def release(self) -> None:
        """The connection ended: give back its place among authenticated connections."""
        if self.admitted_here and self._admission is not None:
            self.admitted_here = False
            self._admission.release()
