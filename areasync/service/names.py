"""Ids made safe to use as URL path segments and file names, and short enough for both.

Session ids come from scenario ids and JSON file names, which an uploaded scenario chooses: a
300-character id, `/`, `..`, a NUL or non-ASCII text. A session id travels in URL paths and
becomes part of its trace's file name, whose component may hold at most 255 bytes on common
file systems (longer, and the trace was lost to `ENAMETOOLONG`). So an id is reduced to
`[A-Za-z0-9._-]`, never starts with a dot (no hidden files, no `.` or `..`), and is at most
`MAX_ID_CHARS` long; one that had to be cut keeps a hash of the original, so that ids
differing only beyond the cut stay apart.
"""

from __future__ import annotations

import hashlib
import re

MAX_ID_CHARS = 96
"""Longest session id (and id part of a trace file name), in characters (ASCII: bytes)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_id(text: str, *, fallback: str = "session", limit: int = MAX_ID_CHARS) -> str:
    """`text` as a non-empty name of at most `limit` characters of `[A-Za-z0-9._-]`."""
    cleaned = _UNSAFE.sub("_", text).strip("._-")
    if not cleaned:
        return fallback
    if len(cleaned) <= limit:
        return cleaned
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{cleaned[: limit - len(digest) - 1].rstrip('._-')}-{digest}"
