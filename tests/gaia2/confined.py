"""Handlers for a confined bench worker's tests: `confinement.serving()`'s, plus ARE's
file-system app used the way a scenario's tools use it.

`python -c "from tests.gaia2.confined import main; main()"` starts a pool as a bench run
does, in a process of its own: its fork server preloads ARE (`local.PRELOAD`), so ARE's default
sandbox directory is made there, outside the worker's temp dir. It prints, as JSON, what the
worker reported and what `file_system` answered (or raised)."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from areasync.gaia2 import confinement


async def file_system(name: str, text: str) -> tuple[str, str]:
    """A `SandboxLocalFileSystem` made as a scenario makes it, `text` written to `name` in it
    and read back: (its directory, what was read)."""
    from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem

    app = SandboxLocalFileSystem()
    with app.open(name, "w") as f:
        f.write(text)
    return app.tmpdir, app.cat(name)


@contextmanager
def serving() -> Iterator[dict[str, Any]]:
    with confinement.serving() as handlers:
        yield {**handlers, "file_system": file_system}


BOUND_S = 300.0  # the fork server's imports, a worker start and a call: stops a hang


async def _run() -> dict[str, Any]:
    import msgspec

    from areasync.gaia2.local import PRELOAD
    from areasync.workers.pool import CallFailed, WorkerPool

    spec = confinement.bench_confinement({"oracle": True}, required=True)
    with tempfile.TemporaryDirectory() as tmp:
        spec = msgspec.structs.replace(spec, tmp_under=tmp)
        pool = WorkerPool(1, serving, preload=(*PRELOAD, __name__), confinement=spec)
        pool.start()
        try:
            await asyncio.wait_for(pool.ready(), BOUND_S)
            worker = pool.workers[0]
            out: dict[str, Any] = {"report": msgspec.to_builtins(worker.confined)}
            try:
                call = pool.call(worker, "file_system", "/notes.txt", "kept")
                where, text = await asyncio.wait_for(call, BOUND_S)
                out.update(where=where, text=text.decode())
            except CallFailed as failed:
                out["raised"] = str(failed)
            return out
        finally:
            await pool.close()


def main() -> None:
    json.dump(asyncio.run(_run()), sys.stdout)
