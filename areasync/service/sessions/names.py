"""Ids made safe to use as URL path segments and file names, and short enough for both.

Session ids come from scenario ids and JSON file names, which an uploaded scenario chooses: a
300-character id, `/`, `..`, a NUL or non-ASCII text. A session id travels in URL paths and
becomes part of its trace's file name, whose component may hold at most 255 bytes on common
file systems (longer, and the trace was lost to `ENAMETOOLONG`). So an id is reduced to
`[A-Za-z0-9._-]`, never starts with a dot (no hidden files, no `.` or `..`), and is at most
`MAX_ID_CHARS` long; one that had to be cut keeps a hash of the original, so that ids
differing only beyond the cut stay apart.

A fork's id is its root's with a number (`<root>-fork-<n>`, the smallest `n` not taken), the
root being the source's id without its own fork suffix: forks of forks stay as short as the
first (they grew by `-fork` a generation, and past the journal's 128 characters left a session
registered that could never run).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Callable

MAX_ID_CHARS = 96
"""Longest session id (and id part of a trace file name), in characters (ASCII: bytes)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_FORK_SUFFIX = re.compile(r"(?:-fork(?:-[0-9]+)?)+$")


def safe_id(text: str, *, fallback: str = "session", limit: int = MAX_ID_CHARS) -> str:
    """`text` as a non-empty name of at most `limit` characters of `[A-Za-z0-9._-]`."""
    cleaned = _UNSAFE.sub("_", text).strip("._-")
    if not cleaned:
        return fallback
    if len(cleaned) <= limit:
        return cleaned
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{cleaned[: limit - len(digest) - 1].rstrip('._-')}-{digest}"


def fork_id(source_id: str, taken: Callable[[str], bool]) -> str:
    """The id of a new fork of session `source_id`: `<root>-fork-<n>` (module docstring), at
    most `MAX_ID_CHARS` plus 6 and the digits of `n` long."""
    root = safe_id(_FORK_SUFFIX.sub("", source_id) or source_id)
    return next(
        candidate
        for candidate in (f"{root}-fork-{n}" for n in itertools.count(1))
        if not taken(candidate)
    )
