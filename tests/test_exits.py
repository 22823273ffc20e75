"""A command's process exits without collecting its whole heap (`areasync/exits.py`); code
calling the CLI in-process keeps its collector."""

from __future__ import annotations

import subprocess
import sys

# Refused once parsed (before ARE's imports): what is checked is the process's exit.
REFUSED = ["serve", "--max-lag", "0"]


def freeze_count_at_exit(code: str) -> str:
    """What `code` printed last, with an atexit hook registered before it runs (so run
    after every hook `code` registers) printing the collector's frozen count."""
    probe = "import atexit, gc\natexit.register(lambda: print(gc.get_freeze_count()))\n" + code
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    return done.stdout.split()[-1]


def test_a_serve_commands_process_exits_with_its_heap_frozen() -> None:
    # The process's own command: `main()` reads sys.argv.
    code = f"import sys\nsys.argv = ['areasync', *{REFUSED!r}]\n"
    code += "from areasync.cli import main\nmain()\n"
    assert int(freeze_count_at_exit(code)) > 0


def test_the_cli_called_in_process_leaves_the_collector_alone() -> None:
    code = f"from areasync.cli import main\nmain({REFUSED!r})\n"
    assert freeze_count_at_exit(code) == "0"
