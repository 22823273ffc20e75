"""Tokens: one per role of each session, plus the admin token that opens everything.

A session's tokens are minted when it is created and handed out once (start-up banner, the
`create_session` result); the admin token (`--token`, `AREASYNC_TOKEN`, or random) is accepted
for every role of every session and is the only one that grants the `admin` role.

A session restored from its journal after a restart (`service/durability/restore.py`) has no tokens
in memory: its journal keeps them only as salted hashes (`Created.token_hashes`), so a candidate is
hashed with the session's salt and compared to the hash (`Created.token_matches`), and the
tokens its clients hold keep working.

Every comparison goes through `hmac.compare_digest` on UTF-8 bytes, and a check compares the
candidate against every token it could match rather than stopping at the first hit, so the time
a check takes says nothing about how much of a token was right or which token it was.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import parse_qs

import msgspec

from areasync.journal import Created, RegisteredScenario
from areasync.protocol.frames import Role

# What opens a session's roles, as one process hands it to another (a session worker to its
# front): its tokens, or, restored from its journal, a `Created` holding only their salted
# hashes (no scenario text, no options).
Credentials = dict[str, str] | Created

SESSION_ROLES: tuple[Role, ...] = (Role.AGENT, Role.USER, Role.OBSERVER, Role.CONTROLLER)
"""Roles with a per-session token; `admin` has only the server-wide admin token."""

TOKEN_BYTES = 18  # 24 URL-safe characters, 144 bits


def new_token(nbytes: int = TOKEN_BYTES) -> str:
    """A fresh random token, URL-safe (it travels in `?token=` query strings).

    Never starting with "-": a token is passed on command lines (`--token T`), where argparse
    takes "-x..." for an option and refuses it (one token in 64 would start so).
    """
    while True:
        token = secrets.token_urlsafe(nbytes)
        if not token.startswith("-"):
            return token


def _same(candidate: bytes, token: str) -> bool:
    return hmac.compare_digest(candidate, token.encode())


def _encode(candidate: str | None) -> bytes:
    # A token that is not valid UTF-8 text (lone surrogates from a hostile JSON string) cannot
    # equal any token we minted; map it to a value that matches nothing, at the same cost.
    if candidate is None:
        return b""
    try:
        return candidate.encode()
    except UnicodeError:
        return b"\x00"


class Tokens:
    """The admin token and, per session, one token per role."""

    def __init__(self, admin_token: str | None = None) -> None:
        self.admin = admin_token or new_token()
        self._sessions: dict[str, dict[Role, str]] = {}
        # Restored sessions: their tokens as the journal keeps them (salted hashes).
        self._hashed: dict[str, Created] = {}

    def mint(self, session_id: str) -> dict[Role, str]:
        """Create the tokens of a new session (one per role in SESSION_ROLES)."""
        tokens = {role: new_token() for role in SESSION_ROLES}
        self._sessions[session_id] = tokens
        return dict(tokens)

    def restore(self, session_id: str, created: Created) -> None:
        """Accept again the tokens of a session restored from its journal (by their hashes)."""
        self._hashed[session_id] = created

    def credentials(self, session_id: str) -> Credentials | None:
        """What opens `session_id`'s roles (`learn` accepts it in another process)."""
        tokens = self._sessions.get(session_id)
        if tokens is not None:
            return {role.value: token for role, token in tokens.items()}
        created = self._hashed.get(session_id)
        if created is None:
            return None
        return msgspec.structs.replace(
            created, scenario=RegisteredScenario(""), options={}, creation=None
        )

    def learn(self, session_id: str, credentials: Credentials) -> None:
        """Accept the tokens of a session another process holds (`credentials`)."""
        if isinstance(credentials, Created):
            self._hashed[session_id] = credentials
        else:
            self._sessions[session_id] = {Role(r): t for r, t in credentials.items()}

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._hashed.pop(session_id, None)

    def of(self, session_id: str) -> dict[Role, str]:
        return dict(self._sessions.get(session_id, {}))

    def allows(self, candidate: str | None, session_id: str, role: Role) -> bool:
        """May `candidate` act as `role` in session `session_id`?"""
        raw = _encode(candidate)
        admin = _same(raw, self.admin)
        session_token = self._sessions.get(session_id, {}).get(role)
        # Compare against a dummy when there is no such token, so both paths cost the same.
        own = _same(raw, session_token if session_token is not None else self.admin + "\x00")
        own = own and session_token is not None
        created = self._hashed.get(session_id)
        if created is not None:
            own = _hashed_match(created, role, raw) or own
        if role is Role.ADMIN:
            return admin
        return admin or own

    def identify(self, candidate: str | None) -> tuple[Role, str | None] | None:
        """Who holds `candidate`: (Role.ADMIN, None), (role, session_id), or None if nobody.

        Used by the HTTP endpoints, which are not bound to a session: every token is compared.
        """
        raw = _encode(candidate)
        found: tuple[Role, str | None] | None = None
        if _same(raw, self.admin):
            found = (Role.ADMIN, None)
        for session_id, tokens in self._sessions.items():
            for role, token in tokens.items():
                if _same(raw, token) and found is None:
                    found = (role, session_id)
        for session_id, created in self._hashed.items():
            for role in SESSION_ROLES:
                if _hashed_match(created, role, raw) and found is None:
                    found = (role, session_id)
        return found


def _hashed_match(created: Created, role: Role, raw: bytes) -> bool:
    """Whether `raw` is `role`'s token of a restored session (its journal's salted hash)."""
    return created.token_matches(role.value, raw.decode(errors="replace"))


def token_from_http(query: str, authorization: str | None) -> str | None:
    """The token of an HTTP request: `Authorization: Bearer T`, else the `token` query field."""
    if authorization:
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() == "bearer" and credentials.strip():
            return credentials.strip()
    values = parse_qs(query).get("token")
    return values[0] if values else None
