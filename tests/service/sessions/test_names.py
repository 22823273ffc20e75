"""No trace is lost to its name: session ids and trace file names are bounded and safe."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from areasync.service.sessions.names import MAX_ID_CHARS, safe_id
from areasync.service.sessions.session import session_id_for
from tests.scenarios import timeline
from tests.service.support import WAIT, serving

HOSTILE_IDS = [
    "s" * 300,
    "a/b/../../etc/passwd",
    "..",
    "../..",
    "nul\x00byte",
    "日本語のシナリオ",
    ".hidden",
    "",
]


@pytest.mark.parametrize("scenario_id", HOSTILE_IDS)
def test_a_session_id_is_a_bounded_safe_name(scenario_id: str) -> None:
    scenario = timeline()
    scenario.scenario_id = scenario_id
    sid = session_id_for(scenario_id, scenario) if scenario_id else session_id_for("x", scenario)
    assert 0 < len(sid) <= MAX_ID_CHARS
    assert sid == safe_id(sid) and not sid.startswith(".") and "/" not in sid and "\0" not in sid


def test_ids_cut_at_the_limit_stay_distinct() -> None:
    assert safe_id("s" * 300 + "a") != safe_id("s" * 300 + "b")


@pytest.mark.parametrize("scenario_id", HOSTILE_IDS)
async def test_no_trace_is_lost_to_its_scenario_id(scenario_id: str, tmp_path: Path) -> None:
    scenario = timeline(1)
    scenario.scenario_id = scenario_id
    async with serving(scenario, trace_dir=tmp_path, mode="fast", oracle=True) as service:
        (session,) = service.registry.sessions.values()
        with anyio.fail_after(WAIT):
            await session.done.wait()  # the oracle runs it to its end, then the trace is written
    assert session.trace_error is None
    assert session.trace_path is not None
    assert written_in(session.trace_path, tmp_path) and len(session.trace_path.name) < 255


def written_in(trace: Path, directory: Path) -> bool:
    return trace.parent == directory.resolve() and trace.is_file()
