"""What an agent is told of its sandbox's files: its own paths, never the host's.

A scenario's file-system apps (`SandboxLocalFileSystem`) keep their files in a host directory
(`tmpdir`, under the server's temporary directory) and show it to the agent as `/`: the agent
names `/notes.txt`, the app opens `<tmpdir>/notes.txt`. An error the app raises names the path
it opened (`[Errno 2] No such file or directory: '<tmpdir>/notes.txt'`), so ARE's exception
text tells the agent where the server keeps its files, which it must not learn (the layout of
the host, the temporary directory's name, other sessions' neighbours). `HostPaths` rewrites
text about to reach an agent: a path under one of the environment's sandbox roots becomes the
path the agent gave (`/notes.txt`), the root itself `/`. A name that merely starts like a root
(`<tmpdir>_x`) is another directory and is left alone.

The roots are read from the apps each time (`as_agent_sees`): only failures pay for it, and a
copy of the session (a fork) whose apps moved to a sandbox of their own is rewritten with its
own roots.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

# A root ends where a path component ends: a separator next, or no name character.
_END = r"(?![\w.\-])"


class HostPaths:
    """The host roots of an environment's file systems, and text rewritten to hide them."""

    def __init__(self, roots: Iterable[str]) -> None:
        # Longest first: a root inside another is rewritten as its own.
        self.roots = sorted(set(roots), key=len, reverse=True)
        alternatives = "|".join(re.escape(root) for root in self.roots)
        self._pattern = re.compile(f"(?:{alternatives}){_END}")

    @classmethod
    def of(cls, apps: Iterable[Any]) -> HostPaths:
        """The roots of `apps`' file systems: each `tmpdir` as given and as its real path."""
        roots: set[str] = set()
        for app in apps:
            tmpdir = getattr(app, "tmpdir", None)
            if isinstance(tmpdir, str) and tmpdir.strip("/"):
                roots.update(
                    path.rstrip("/")
                    for path in (tmpdir, os.path.abspath(tmpdir), os.path.realpath(tmpdir))
                )
        return cls(roots)

    def shown(self, text: str) -> str:
        """`text` with every path under a root as the agent names it (the root itself: `/`)."""
        if not self.roots:
            return text
        return self._pattern.sub(_as_agent_sees, text)


def _as_agent_sees(match: re.Match[str]) -> str:
    """A root followed by `/rest` is dropped (leaving `/rest`); a root alone is `/`."""
    after = match.string[match.end() : match.end() + 1]
    return "" if after == "/" else "/"


def as_agent_sees(apps: Iterable[Any], text: str) -> str:
    """`text` (an error of `apps`' making) with their sandboxes' host paths as the agent's."""
    return HostPaths.of(apps).shown(text)
