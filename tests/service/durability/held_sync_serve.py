"""`areasync serve` in a process of its own whose journal syncs the test holds and releases.

A test that must show what a server in another process does while a record awaits its sync
cannot hold the sync from its own process (`support.replace_sync` patches this process only).
This runs `areasync.cli` with the journal's `sync_file` wrapped, and takes commands on stdin,
one a line: `arm` holds the next sync, which prints `sync held` on stdout before it waits;
`release` lets it (and every later sync) through. The test reads the banner and then
`sync held` from stdout as from `areasync serve` (`durable_support.read_until`).

    python -m tests.service.durability.held_sync_serve serve --state-dir ... (areasync's arguments)
"""

from __future__ import annotations

import sys
import threading

from areasync import cli
from areasync.journal import writer

ARM = "arm"
RELEASE = "release"
HELD = "sync held"


class Held:
    """The syncs' gate: open until armed, then closed until released, for good."""

    def __init__(self) -> None:
        self.armed = threading.Event()
        self.released = threading.Event()
        self._told = threading.Lock()
        self._held = False

    def listen(self) -> None:
        """Take the test's commands from stdin until it closes."""
        for line in sys.stdin:
            command = line.strip()
            if command == ARM:
                self.armed.set()
            elif command == RELEASE:
                self.released.set()

    def before_sync(self) -> None:
        if not self.armed.is_set() or self.released.is_set():
            return
        with self._told:
            first, self._held = not self._held, True
        if first:
            print(HELD, flush=True)
        self.released.wait()


def main() -> int:
    held = Held()
    threading.Thread(target=held.listen, name="held-sync-commands", daemon=True).start()
    real = writer.sync_file

    def sync_file(fd: int) -> None:
        held.before_sync()
        real(fd)

    writer.sync_file = sync_file
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
