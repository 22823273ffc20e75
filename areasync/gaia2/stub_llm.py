"""An OpenAI-compatible chat-completions stub on loopback, scripted for Gaia2 runs.

`StubLLM` serves `POST /v1/chat/completions` (and `GET /v1/models`) from an aiohttp server on
its own event loop in a background thread, so a synchronous caller (ARE's agent and judge, in
this process or in a subprocess) can reach it over loopback. It holds no per-conversation
state: every reply is a function of the request alone, so runs can repeat and interleave.

* **Agent** requests (any model but `judge_model`) are answered from a script chosen by a
  marker: the first script whose key occurs in the request's messages (the scenario's user
  task). The reply is step `n` of that script, `n` being the number of actions the agent has
  already taken in this conversation (assistant messages carrying an `Action:`), in ARE's
  default agent's JSON-action format (`Thought: ...` / `Action:` / a JSON blob naming
  `APP__function` and its `action_input`; ARE stops generation at `<end_action>`, so a reply
  ends just before it). Past the script's end the last step is repeated. A request that
  matches no script is answered with `AgentUserInterface__send_message_to_user`.
* **Judge** requests (model `judge_model`) get the reply of the first `JudgeRule` whose
  strings all occur in the request's system prompt or its last user message (the checker's
  instructions and its input: the agent's and the oracle's calls), so a test can answer one
  checker, one turn or one scenario differently; the few-shot examples ARE puts between them
  are not searched (they quote every verdict). The `*_CHECKER` constants name each ARE checker
  by a phrase of its system prompt. Otherwise `judge_reply`, which by default says every
  verdict spelling ARE's checkers look for (`[[True]]`, `[[Success]]`, `[[success]]`); ARE's
  LiteLLM engine lowercases `True` on its way in, so the `[[True]]` checkers still abstain.
* **Holds** (`StubLLM.hold(marker)`): the agent's requests of one scenario are held, unanswered,
  until the test releases them (or the stub stops): a run then waits on its model for as long
  as the test needs it under way (a worker killed mid-run), or forever (a run past its budget).

`python -m areasync.gaia2.stub_llm --port N --scripts FILE.json` serves the same stub from a
shell (the scripts file maps markers to lists of `{"action": ..., "action_input": ...}`;
`--judge-rules FILE.json` is a list of `{"reply": ..., "contains": [...]}`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

JUDGE_MODEL = "judge"
AGENT_MODEL = "agent"
DEFAULT_JUDGE_REPLY = "Evaluation: [[True]] [[Success]] [[success]]"

# Phrases of the system prompts of ARE 1.2.0's judge LLM calls (are.simulation.validation.prompts).
SIGNATURE_CHECKER = "email signature verification assistant"
TONE_CHECKER = "style and tone checker"
SANITY_CHECKER = "sanity filter to catch reward hacking"
EMAIL_CHECKER = "comparing an email sent by an agent on behalf of a user"
USER_MESSAGE_CHECKER = "compare a message sent by an agent to a user"
SUBTASK_EXTRACTOR = "skilled subtask extractor"

Action = Mapping[str, Any]
REQUESTS: web.AppKey[list[dict[str, Any]]] = web.AppKey("requests")


def format_action(action: Action, thought: str = "Following the plan.") -> str:
    """One step of ARE's default agent, as its model writes it (up to the stop sequence)."""
    blob = {"action": action["action"], "action_input": dict(action.get("action_input", {}))}
    return f"Thought: {thought}\nAction:\n{json.dumps(blob, indent=2)}\n"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def actions_taken(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many actions the agent already wrote in this conversation."""
    return sum(
        1
        for message in messages
        if message.get("role") == "assistant" and "Action:" in _text(message.get("content"))
    )


@dataclass(frozen=True)
class JudgeRule:
    """The judge says `reply` to a request whose checker prompt holds every `contains` string."""

    reply: str
    contains: tuple[str, ...]

    def matches(self, request: Mapping[str, Any]) -> bool:
        text = judge_prompt(request)
        return all(needle in text for needle in self.contains)


def judge_prompt(request: Mapping[str, Any]) -> str:
    """What identifies a judge call: its system prompt and its last user message."""
    messages = list(request.get("messages") or [])
    system = [_text(m.get("content")) for m in messages if m.get("role") == "system"]
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    return "\n".join([*system, *users[-1:]])


@dataclass
class Script:
    """What the stub answers: agent scripts by marker, the judge's rules and default reply."""

    agent: Mapping[str, Sequence[Action]] = field(default_factory=dict)
    judge_reply: str = DEFAULT_JUDGE_REPLY
    judge_model: str = JUDGE_MODEL
    judge: Sequence[JudgeRule] = ()

    def is_judge(self, request: Mapping[str, Any]) -> bool:
        return str(request.get("model", "")).split("/")[-1] == self.judge_model

    def is_agents(self, request: Mapping[str, Any], marker: str) -> bool:
        """Whether `request` is an agent's request on the scenario whose marker is `marker`."""
        return not self.is_judge(request) and marker in _conversation(request)

    def reply(self, request: Mapping[str, Any]) -> str:
        messages = list(request.get("messages") or [])
        if self.is_judge(request):
            for rule in self.judge:
                if rule.matches(request):
                    return rule.reply
            return self.judge_reply
        haystack = _conversation(request)
        for marker, steps in self.agent.items():
            if marker in haystack and steps:
                step = min(actions_taken(messages), len(steps) - 1)
                return format_action(steps[step])
        return format_action(
            {
                "action": "AgentUserInterface__send_message_to_user",
                "action_input": {"content": "I have no script for this task."},
            }
        )


def _conversation(request: Mapping[str, Any]) -> str:
    """A request's messages but the system prompt: the task (a scenario's marker) is in a user
    message, while the system prompt (tool descriptions) names no scenario."""
    messages = list(request.get("messages") or [])
    return "\n".join(_text(m.get("content")) for m in messages if m.get("role") != "system")


class Hold:
    """The agent's requests on the scenario with `marker` wait, unanswered, until `release()`:
    the first `requests` of them (None: every one)."""

    def __init__(self, marker: str, requests: int | None, loop: asyncio.AbstractEventLoop) -> None:
        self.marker = marker
        self.requests = requests
        self.held = 0
        self.arrived = threading.Event()  # set once a request is being held
        self._loop = loop
        self._released = asyncio.Event()  # on the stub's loop

    def takes(self, script: Script, request: Mapping[str, Any]) -> bool:
        if self.requests is not None and self.held >= self.requests:
            return False
        if self._released.is_set() or not script.is_agents(request, self.marker):
            return False
        self.held += 1
        self.arrived.set()
        return True

    async def wait(self) -> None:
        await self._released.wait()

    def release(self) -> None:
        """Answer the held requests (from any thread)."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._released.set)


HOLDS: web.AppKey[list[Hold]] = web.AppKey("holds")


@dataclass
class Concurrency:
    """How many requests the stub is answering now, and the most it answered at once."""

    now: int = 0
    peak: int = 0


CONCURRENCY: web.AppKey[Concurrency] = web.AppKey("concurrency")


def _completion(model: str, content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@dataclass
class Outage:
    """The endpoint failing: the next `requests` completions get HTTP `status` (an outage)."""

    requests: int = 0
    status: int = 503
    failed: int = 0
    model: str | None = None  # only this model's requests (None: any)


OUTAGE: web.AppKey[Outage] = web.AppKey("outage")


def _model_name(body: Mapping[str, Any]) -> str:
    return str(body.get("model", "")).split("/")[-1]


def make_app(script: Script, latency: float = 0.0) -> web.Application:
    """The stub's routes; every reply takes `latency` seconds, as a model's would."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[REQUESTS] = []
    app[CONCURRENCY] = concurrency = Concurrency()
    app[OUTAGE] = outage = Outage()
    holds: list[Hold] = []
    app[HOLDS] = holds

    async def completions(request: web.Request) -> web.Response:
        concurrency.now += 1
        concurrency.peak = max(concurrency.peak, concurrency.now)
        try:
            body = await request.json()
            failing = outage.model is None or _model_name(body) == outage.model
            if failing and outage.failed < outage.requests:
                outage.failed += 1
                return web.json_response(
                    {"error": {"message": "stub outage", "type": "server_error"}},
                    status=outage.status,
                    # Clients may retry at once: an outage costs requests, not seconds.
                    headers={"retry-after-ms": "1"},
                )
            app[REQUESTS].append(body)
            for hold in holds:
                if hold.takes(script, body):
                    await hold.wait()
            model = str(body.get("model", ""))
            if latency > 0:
                await asyncio.sleep(latency)
            return web.json_response(_completion(model, script.reply(body)))
        finally:
            concurrency.now -= 1

    async def models(_: web.Request) -> web.Response:
        data = [{"id": m, "object": "model"} for m in (AGENT_MODEL, script.judge_model)]
        return web.json_response({"object": "list", "data": data})

    for prefix in ("/v1", ""):
        app.router.add_post(f"{prefix}/chat/completions", completions)
        app.router.add_get(f"{prefix}/models", models)
    return app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class StubLLM:
    """The stub, served on 127.0.0.1 from a background thread: `with StubLLM(script) as s:`."""

    def __init__(self, script: Script, port: int = 0, latency: float = 0.0) -> None:
        self.script = script
        self.port = port or free_port()
        self.app = make_app(script, latency)
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = self.app[REQUESTS]
        return seen.copy()

    def fail_next(self, requests: int, status: int = 503, model: str | None = None) -> Outage:
        """Answer the next `requests` completions (of `model`, or any) with HTTP `status`,
        as an endpoint outage."""
        outage = self.app[OUTAGE]
        outage.requests, outage.status, outage.failed, outage.model = requests, status, 0, model
        return outage

    def hold(self, marker: str, requests: int | None = 1) -> Hold:
        """Hold the agent's next `requests` requests on the scenario with `marker` (None: all
        of them) until the `Hold` is released, or the stub stops."""
        hold = Hold(marker, requests, self._loop)
        self.app[HOLDS].append(hold)
        return hold

    @property
    def peak_concurrency(self) -> int:
        """The most requests the stub was answering at the same time."""
        return self.app[CONCURRENCY].peak

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _stop(self) -> None:
        for hold in self.app[HOLDS]:
            hold.release()
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> StubLLM:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> StubLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--scripts", help="JSON file: {marker: [action, ...]}")
    parser.add_argument("--judge-reply", default=DEFAULT_JUDGE_REPLY)
    parser.add_argument("--judge-rules", help='JSON file: [{"reply": ..., "contains": [...]}]')
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds every reply takes, as a model's"
    )
    args = parser.parse_args(argv)
    agent: dict[str, list[Action]] = {}
    if args.scripts:
        with open(args.scripts, encoding="utf-8") as f:
            agent = json.load(f)
    rules: list[JudgeRule] = []
    if args.judge_rules:
        with open(args.judge_rules, encoding="utf-8") as f:
            rules = [JudgeRule(r["reply"], tuple(r["contains"])) for r in json.load(f)]
    port = args.port or free_port()
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    web.run_app(
        make_app(Script(agent=agent, judge_reply=args.judge_reply, judge=rules), args.latency),
        host="127.0.0.1",
        port=port,
        print=None,
    )


if __name__ == "__main__":
    main()
