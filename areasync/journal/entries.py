"""The records a session journal holds, as msgspec Structs: a tagged union, one per kind.

These are plain data with no knowledge of ARE or of the service: what a restarted server needs
to rebuild a session (`Created`), every input in order (`Recorded`: the simulation's own typed
record, embedded; `Input`, the untyped form journals written before it hold), and how it ended
(`Ended`). The storage layer stores them and gets
them back; what they mean is the service's business.

Schema evolution: a new field gets a default and goes at the end, so older journals still
decode; anything else needs a new format version (`format.FORMAT_VERSION`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any, TypeAlias

import msgspec

from areasync.journal.sources import InlineScenario, RegisteredScenario, ResolvedScenario

__all__ = [
    "Created",
    "Ended",
    "Header",
    "InlineScenario",
    "Input",
    "Record",
    "Recorded",
    "RegisteredScenario",
    "hash_token",
    "new_salt",
]


class Header(msgspec.Struct, frozen=True, kw_only=True):
    """The first frame of every journal, after the fixed magic and format version."""

    areasync_version: str
    # Wall-clock time the file was created (seconds since the Unix epoch).
    created: float


def new_salt() -> bytes:
    return secrets.token_bytes(16)


def hash_token(salt: bytes, token: str) -> str:
    """The salted hash a journal keeps instead of a token (a journal never holds a token)."""
    return hmac.new(salt, token.encode(), hashlib.sha256).hexdigest()


class Created(msgspec.Struct, frozen=True, kw_only=True, tag="created"):
    """A session was created: everything needed to build it again, identically."""

    session_id: str
    scenario: ResolvedScenario
    mode: str
    speed: float
    oracle: bool
    import_mode: str
    seed: int
    token_salt: bytes
    token_hashes: dict[str, str]  # role -> hash_token(token_salt, token)
    epoch: str
    created: float  # wall-clock seconds since the Unix epoch
    options: dict[str, Any] = {}
    # How the simulation was made, as it typed it (`areasync.simulation.input_records.Creation`: its
    # own msgpack); None in journals written before it (their `options["creation"]`).
    creation: bytes | None = None

    def token_matches(self, role: str, token: str) -> bool:
        expected = self.token_hashes.get(role)
        candidate = hash_token(self.token_salt, token)
        return expected is not None and hmac.compare_digest(expected, candidate)


class Input(msgspec.Struct, frozen=True, tag="input"):
    """One input in the format's first form (journals written before `Recorded`): simulated
    time in seconds (a float64, stored exactly), the stream seq when it arrived, its source and
    its untyped payload. Still read; no longer written."""

    time: float
    seq: int
    source: str
    payload: dict[str, Any]


class Ended(msgspec.Struct, frozen=True, kw_only=True, tag="ended"):
    """The session ended: nothing follows this record."""

    reason: str
    state: str
    seq: int  # the stream's final seq
    wall: float  # wall-clock seconds since the Unix epoch, for retention


class Recorded(msgspec.Struct, frozen=True, tag="recorded"):
    """One input, as the simulation typed it: its own msgpack (a tagged Struct, one per kind of
    input: `areasync.simulation.input_records.InputRecord`) embedded as it is, so that the storage
    layer needs to know no kind of input and the session's record goes to disk and back
    without a copy into anything else."""

    record: msgspec.Raw


Record: TypeAlias = Created | Input | Recorded | Ended
