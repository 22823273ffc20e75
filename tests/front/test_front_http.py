"""The front's admin HTTP routes, as real processes: `/metrics` merged from both workers, and
a session's agent token (`/api/sessions/<id>/agent`) from its worker, as one process answers."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import anyio

from tests.front.support import ADMIN, REAL_PROCESSES, WAIT, front
from tests.scenarios import RunawayScenario

pytestmark = REAL_PROCESSES

TUTORIAL = "scenario_tutorial"
RUNAWAY = RunawayScenario.scenario_id


def _text(url: str) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {ADMIN}"})
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        return response.status, response.headers["Content-Type"], response.read().decode()


async def test_metrics_through_the_front_sum_every_workers_sessions(tmp_path: Path) -> None:
    async with front("--scenario", RUNAWAY, "--scenario", TUTORIAL, log=tmp_path / "log") as served:
        listed = await served.sessions()
        assert len({s["worker"] for s in listed["sessions"]}) == 2  # one session on each
        status, kind, text = await anyio.to_thread.run_sync(_text, f"http://{served.base}/metrics")
    lines = text.splitlines()
    assert status == 200 and kind.startswith("text/plain; version=0.0.4")
    assert 'areasync_sessions{state="live"} 2' in lines
    assert "areasync_sessions_created_total 2" in lines
    assert lines.count("# TYPE areasync_sessions gauge") == 1
    up = [line for line in lines if line.startswith("areasync_front_worker_up{")]
    assert len(up) == 2 and all(line.endswith(" 1") for line in up)


async def test_a_sessions_agent_token_is_its_workers_answer_through_the_front(
    tmp_path: Path,
) -> None:
    async with front("--scenario", RUNAWAY, log=tmp_path / "log") as served:
        agent = await anyio.to_thread.run_sync(served.get, f"/api/sessions/{RUNAWAY}/agent")
        assert agent == {
            "session_id": RUNAWAY,
            "url": served.url(RUNAWAY),
            "token": served.token(RUNAWAY, "agent"),
        }
