"""The exact bytes of a server's `/health`: without `--state-dir` its status and protocol, with
it also its journals' counts (`service/http/routes.py`). A front answers its own
(`tests/front/test_front_answers_wire.py`)."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import anyio
import anyio.to_thread
import msgspec

from areasync.protocol.frames import PROTOCOL
from areasync.service import Service
from tests.service.support import in_process_only, serving


async def health_body(service: Service) -> bytes:
    def get() -> bytes:
        with urllib.request.urlopen(service.http_url + "/health", timeout=10) as response:
            body: bytes = response.read()
            return body

    with anyio.fail_after(30):
        return await anyio.to_thread.run_sync(get)


@in_process_only("a front answers /health with its workers")
async def test_a_servers_health_is_these_bytes() -> None:
    async with serving() as service:
        body = await health_body(service)
    assert body == msgspec.json.encode({"status": "ok", "protocol": PROTOCOL})


@in_process_only("a front answers /health with its workers")
async def test_a_durable_servers_health_has_its_journals_counts_in_these_bytes(
    tmp_path: Path,
) -> None:
    async with serving(state_dir=tmp_path) as service:
        body = await health_body(service)
    journal = {"failed_sessions": 0, "refused_journals": 0}
    assert body == msgspec.json.encode({"status": "ok", "protocol": PROTOCOL, "journal": journal})
