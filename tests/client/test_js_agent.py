"""The JavaScript agent in examples/js-agent runs against a real server (when Node.js is here).

It speaks the protocol from the published schema alone, with the `ws` package: lists the
tools, hands its turn back until the user writes (scenario_tutorial's user writes at 6 s), and
answers with a tool call. `make test` installs its npm dependency first.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from areasync.testing import AreasyncServer

AGENT_DIR = Path(__file__).resolve().parents[2] / "examples" / "js-agent"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.browser,  # Node.js: `make test-browser`
    pytest.mark.skipif(NODE is None, reason="Node.js is not installed"),
    pytest.mark.skipif(
        not (AGENT_DIR / "node_modules" / "ws").is_dir(),
        reason="the JS agent's dependency is not installed: make js (npm ci)",
    ),
]


async def test_the_js_agent_answers_the_user_with_a_tool_call(
    areasync_server: AreasyncServer,
) -> None:
    assert NODE is not None
    command = [
        NODE,
        str(AGENT_DIR / "agent.mjs"),
        "--url",
        areasync_server.url,
        "--token",
        areasync_server.token,
        "--reply",
        "Done, from JS",
        "--timeout",
        "30",
    ]
    with anyio.fail_after(60):
        result = await anyio.run_process(command, check=False, cwd=AGENT_DIR)
    report = json.loads(result.stdout)
    assert result.returncode == 0, report
    assert report["ok"] is True
    assert report["session_id"] == "scenario_tutorial"
    assert report["tools"] == len(areasync_server.simulation().list_tools())
    assert "transferring the pdf" in report["user_message"]
    assert report["user_message_time"] == 6.0
    replies = [
        event
        for event in areasync_server.simulation().events()
        if (event.event_type, event.app, event.function)
        == ("AGENT", "AgentUserInterface", "send_message_to_user")
    ]
    assert [event.args["content"] for event in replies] == [report["reply"]]
    assert replies[0].time == 6.0  # fast mode: the clock stood still while the agent worked


async def test_the_js_agent_replies_to_the_users_words_not_the_notifications_headers(
    areasync_server: AreasyncServer,
) -> None:
    assert NODE is not None
    command = [NODE, str(AGENT_DIR / "agent.mjs"), "--url", areasync_server.url]
    command += ["--token", areasync_server.token, "--timeout", "30"]
    with anyio.fail_after(60):
        result = await anyio.run_process(command, check=False, cwd=AGENT_DIR)
    report = json.loads(result.stdout)
    assert result.returncode == 0, report
    # What the user sent, as ARE logged it (the notification wraps it in header lines).
    [sent] = [
        event.args["content"]
        for event in areasync_server.simulation().events()
        if event.function == "send_message_to_agent"
    ]
    assert report["user_message"] == sent.strip()
    assert sent.strip() in report["reply"]
    for header in ("Read at", "Received at", "Sender:", "Already read"):
        assert header not in report["reply"]
