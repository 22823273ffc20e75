"""`areasync serve` boots its workers' fork server before it imports the front
(`areasync/front/boot.py`): the fork server's imports (ARE) run while the front imports and
starts, each on a core."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Runs `areasync serve` (workers by default) in this process; when it first imports the front
# (`areasync.front.server`), says whether this process has a child running multiprocessing's
# fork server yet, kills its children and exits there: nothing is served, nothing outlives it.
# A child is listed from its fork, and shows its own command line only once it has exec'd, which
# on a busy machine may come after the front's import: each child is given until it has (bounded).
AT_FRONTS_IMPORT = """
import os, signal, sys, time

def children():
    pid = os.getpid()
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        return [int(child) for child in listing.read().split()]

def command_line(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as line:
        return line.read().replace(b"\\0", b" ").decode()

def once_execd(pid):
    ours, deadline = command_line(os.getpid()), time.monotonic() + 60
    while (line := command_line(pid)) == ours and time.monotonic() < deadline:
        time.sleep(0.01)
    return line

def at_import(event, args):
    if event == "import" and args[0] == "areasync.front.server":
        running = [p for p in children() if "multiprocessing.forkserver" in once_execd(p)]
        print(f"fork servers running as the front is imported: {len(running)}", flush=True)
        for child in children():
            os.kill(child, signal.SIGKILL)
        os._exit(0)

sys.addaudithook(at_import)
from areasync.cli import main
main(["serve", "--port", "0", "--token", "boot-test", "--trace-dir", sys.argv[1]])
"""


def serve_under(script: str, trace_dir: Path) -> subprocess.CompletedProcess[str]:
    """`script` (which runs `areasync serve` under an audit hook) as its own process."""
    return subprocess.run(
        [sys.executable, "-c", script, str(trace_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


def test_serve_boots_the_fork_server_before_it_imports_the_front(tmp_path: Path) -> None:
    done = serve_under(AT_FRONTS_IMPORT, tmp_path)
    assert "fork servers running as the front is imported: 1" in done.stdout, (
        done.stdout + done.stderr
    )


# Runs `areasync serve` (workers by default) in this process; when it boots the fork server
# (imports `areasync.workers.forkserver`), says whether asyncio is imported yet, and exits there.
AT_BOOT = """
import os, sys

def at_import(event, args):
    if event == "import" and args[0] == "areasync.workers.forkserver":
        print(f"asyncio imported before the boot: {'asyncio' in sys.modules}", flush=True)
        os._exit(0)

sys.addaudithook(at_import)
from areasync.cli import main
main(["serve", "--port", "0", "--token", "boot-test", "--trace-dir", sys.argv[1]])
"""


def test_serve_boots_the_fork_server_before_it_imports_the_event_loop(tmp_path: Path) -> None:
    """What `serve` imports before the boot delays the fork server's import of ARE: checking
    the options needs no event loop (asyncio is the front's, imported after)."""
    done = serve_under(AT_BOOT, tmp_path)
    assert "asyncio imported before the boot: False" in done.stdout, done.stdout + done.stderr
