"""`kill -9` of a real judged `areasync serve --state-dir` while its judge's LLM is asked, and
a restart on the same port: the run goes on, asking the model only what it had no answer to.

The server is a real subprocess whose judge is the stub LLM in this process; the stub answers
turn 1's first question and holds the second, the test waits until the first answer is in the
journal on disk, then kills the server with SIGKILL. The agent's client reconnects by itself
and plays turn 2; the final validation is compared with an uninterrupted run's.
"""

from __future__ import annotations

import json
import re
import signal
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from areasync.client import connect
from areasync.gaia2.dataset import DONE
from areasync.gaia2.stub_llm import JUDGE_MODEL, StubLLM
from tests.service.durability.test_durable_judged import (
    ADMIN,
    EMAIL_REWORDED,
    TURNS,
    HoldingScript,
    create,
    holding,
    journaled_judge_answers,
    judged_server,
    script,
    stub,
)
from tests.service.durability.test_durable_restore import server
from tests.service.sessions.test_gaia2_judge import (
    TURN_2_TASK,
    WALL_S,
    calendar_json,
    play,
    without_ids,
)
from tests.waiting import eventually

# The stub's fixtures, shared with the judged durability tests.
__all__ = ["holding", "script", "stub"]

SECOND = [EMAIL_REWORDED, DONE]  # turn 2, whose email only the model can judge


def serve_command(state: Path, port: int, scenario: Path, endpoint: str) -> list[str]:
    return [
        *(sys.executable, "-m", "areasync.cli", "serve", "--workers", "0", "--port", str(port)),
        *("--token", ADMIN),
        *("--scenario", str(scenario), "--mode", "fast", "--trace-dir", ""),
        *("--state-dir", str(state), "--durability", "group:0"),
        *("--judge_model", f"openai/{JUDGE_MODEL}", "--judge_provider", "local"),
        *("--judge_endpoint", endpoint),
    ]


def judge_questions(stub: StubLLM, since: int = 0) -> list[str]:
    """The judge requests the stub got (from the `since`-th request on), as comparable text."""
    return [
        json.dumps(request["messages"], sort_keys=True)
        for request in stub.requests[since:]
        if str(request.get("model", "")).endswith(JUDGE_MODEL)
    ]


async def wait_journaled(state: Path, session_id: str, answers: int) -> None:
    """Until the session's journal on disk holds `answers` judge answers (bounded)."""
    await eventually(
        lambda: len(journaled_judge_answers(state, session_id)) >= answers, within=WALL_S
    )


@pytest.mark.slow  # a judged server killed and started again
async def test_kill_9_while_the_judge_is_asked_restores_the_run_asking_only_what_was_unanswered(
    tmp_path: Path, stub: StubLLM, holding: HoldingScript
) -> None:
    scenario = tmp_path / "two_turns.json"
    scenario.write_text(calendar_json("two_turns", second_turn=True))
    async with judged_server(tmp_path, tmp_path / "reference", stub.endpoint) as service:
        reference = await play(await create(service), TURNS[0], SECOND)  # uninterrupted
    state, log = tmp_path / "state", tmp_path / "server.log"
    before = len(stub.requests)
    options: dict[str, Any] = {"backoff_max": 0.2, "max_reconnect_attempts": None}
    try:
        async with AsyncExitStack() as stack:
            first, banner = await stack.enter_async_context(
                server(serve_command(state, 0, scenario, stub.endpoint), log)
            )
            url = re.search(r"ws://127\.0\.0\.1:(\d+)/sessions/two_turns", banner)
            token = re.search(r"^  agent\s+(\S+)$", banner, re.MULTILINE)
            assert url and token, banner
            with anyio.fail_after(WALL_S * 2):
                async with connect(url[0], role="agent", token=token[1], **options) as agent:
                    await agent.wait_for_notification(timeout=3600)
                    holding.hold(after=1)  # turn 1's judgment: one answer, then held
                    for action in TURNS[0]:
                        await agent.call_tool(action["action"], **action["action_input"])
                    await agent.idle()
                    assert await anyio.to_thread.run_sync(holding.held.wait, WALL_S)
                    await wait_journaled(state, "two_turns", 1)
                    first.send_signal(signal.SIGKILL)
                    await first.wait()
                    asked = judge_questions(stub, before)
                    holding.unhold()  # the held request's answer goes to a dead socket
                    again = len(stub.requests)
                    _, restarted = await stack.enter_async_context(
                        server(serve_command(state, int(url[1]), scenario, stub.endpoint), log)
                    )
                    notes = await agent.wait_for_notification(timeout=3600)  # carries on
                    for action in SECOND:
                        await agent.call_tool(action["action"], **action["action_input"])
                    await agent.idle()
                    ended = await agent.wait_ended()
    finally:
        holding.unhold()
    assert restarted.count("/sessions/two_turns") == 1  # restored, not started again
    assert any(TURN_2_TASK in str(note) for note in notes)
    assert agent.reconnects >= 1 and agent.welcome.restored
    assert without_ids(ended.validation) == without_ids(reference.validation)
    answered, unanswered = asked[:-1], asked[-1]
    after = judge_questions(stub, again)
    assert answered and unanswered in after  # asked again: its answer never reached the disk
    assert not set(answered) & set(after)  # none answered before the crash was asked again
