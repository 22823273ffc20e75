"""gaia2-cli's runner, as it drives one scenario's adapter: its calls, in its order (stdlib only).

Written from upstream's runner (`gaia2-cli/runner/gaia2_runner/runner.py`, `launcher.py`), not
from areasync's code. For one scenario the runner:

1. polls `GET {adapter}/health` until its `connected` is true (`wait_for_adapter`; upstream
   every 2 s, up to `--health-timeout`), the adapter being `http://127.0.0.1:{port}`;
2. sends the task with `POST /notify {"message"}` only when the scenario has no events (its
   daemon sends it otherwise): never for a Gaia2 scenario;
3. polls `GET /status` until `status` is `complete`, `stopped` or `error` (`_poll_for_response`;
   every 2 s), keeping the last terminal body as the daemon's status;
4. reads the run's artifacts, `events.jsonl` and `daemon_status.json` (upstream copies them
   out of the container; here the adapter serves them), and builds `result.json`: `success`
   from the daemon's `judgment` (None without one: "the verdict is lost"), `num_agent_events`
   the number of `events.jsonl` lines (its converter makes one event of each).

The polls here wait `interval` between calls (the tests' own, short) within a bound
(`tests.waiting.eventually`): a poll is the runner's contract, the bound a give-up.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import anyio

from tests.waiting import eventually

TERMINAL = frozenset({"complete", "stopped", "error"})
TIMEOUT = 10.0


def get(base: str, path: str) -> tuple[int, bytes]:
    """One `GET base+path` without a proxy, as the runner's `requests.Session` (trust_env off)."""
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT)
    try:
        conn.request("GET", url.path + path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@dataclasses.dataclass
class Run:
    """What the runner saw of one run, and the result it records."""

    health: dict[str, Any]
    statuses: list[dict[str, Any]]
    events_raw: str
    daemon_status: dict[str, Any]

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.events_raw.splitlines() if line.strip()]

    def result(self) -> dict[str, Any]:
        """`result.json`, as `ContainerRunner.run_scenario` builds it: from the last status
        polled if it was terminal, else from `daemon_status.json`."""
        last = self.statuses[-1] if self.statuses else {}
        daemon = last if last.get("status") in TERMINAL else self.daemon_status
        judgment = daemon.get("judgment")
        if judgment is None:
            return {"success": None, "num_agent_events": len(self.events)}
        success = judgment.get("success", False)
        return {
            "success": success,
            "reward": 1.0 if success else 0.0,
            "num_agent_events": len(self.events),
            "judged_in_container": True,
        }


class Runner:
    """gaia2-cli's runner against the adapter at `base` (`http://127.0.0.1:PORT`)."""

    def __init__(self, base: str, *, interval: float = 0.02, limit: float = 60.0) -> None:
        self.base = base
        self.interval = interval
        self.limit = limit

    async def get_json(self, path: str) -> dict[str, Any]:
        status, body = await anyio.to_thread.run_sync(get, self.base, path)
        assert status == 200, (path, status, body)
        data = json.loads(body)
        assert isinstance(data, dict)
        return data

    async def wait_connected(self) -> dict[str, Any]:
        async def connected() -> dict[str, Any] | None:
            health = await self.get_json("/health")
            return health if health.get("connected") else None

        health = await eventually(connected, within=self.limit, poll=self.interval)
        assert health is not None
        return health

    async def wait_terminal(self) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []

        async def terminal() -> bool:
            seen.append(await self.get_json("/status"))
            return seen[-1].get("status") in TERMINAL

        await eventually(terminal, within=self.limit, poll=self.interval)
        return seen

    async def artifacts(self) -> tuple[str, dict[str, Any]]:
        status, events = await anyio.to_thread.run_sync(get, self.base, "/events.jsonl")
        assert status == 200, (status, events)
        return events.decode(), await self.get_json("/daemon_status.json")

    async def run(self) -> Run:
        health = await self.wait_connected()
        statuses = await self.wait_terminal()
        events_raw, daemon_status = await self.artifacts()
        return Run(health, statuses, events_raw, daemon_status)
