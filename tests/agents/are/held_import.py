"""`python -m tests.agents.are.held_import MODULE PORT ARGS...`: the `areasync` command with
ARGS, its first import of MODULE held until the test lets it go.

What a busy machine does by chance (an import of ARE or LiteLLM taking tens of seconds), made
certain: when the command first imports MODULE, it connects to the test on loopback PORT, says
`held`, and waits until the test sends a byte or closes the connection (or the test is gone),
then imports MODULE as usual. Nothing of areasync is replaced.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import runpy
import socket
import sys
from collections.abc import Sequence
from types import ModuleType

HELD = b"held"


class HeldImport(importlib.abc.MetaPathFinder):
    """Holds the first import of `module` (module docstring); finds nothing itself."""

    def __init__(self, module: str, port: int) -> None:
        self.module = module
        self.port = port
        self.done = False

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.module and not self.done:
            self.done = True
            with socket.create_connection(("127.0.0.1", self.port)) as test:
                test.sendall(HELD)
                test.recv(1)  # a byte, or the test's end closing
        return None


def main(argv: list[str]) -> None:
    module, port, *args = argv
    sys.meta_path.insert(0, HeldImport(module, int(port)))
    sys.argv = ["areasync", *args]
    runpy.run_module("areasync.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
