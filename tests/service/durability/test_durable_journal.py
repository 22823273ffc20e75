"""With --state-dir, every session's journal holds what its clients did before they hear back.

A real service over real sockets writes real journal files (`areasync.journal`); each test
reads the journal from disk when a reply arrives, so "durable before acknowledged" is checked
from the client's side: what the client was told has happened is already in the file.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import anyio
import msgspec
import pytest

from areasync.journal import Created, Ended, Journal, JournalStore
from areasync.protocol import CallTool, Pause, Resume, Role, SendUserMessage, Stop, Tick
from areasync.service.durability.restore import inputs_of
from areasync.service.durability.state_dir import Journals
from areasync.simulation import input_records as kinds
from areasync.simulation.input_records import Creation, InputRecord
from tests.service.support import ADMIN, TUTORIAL, attach, config, serving, tokens

SERVE = [sys.executable, "-m", "areasync.cli", "serve", "--workers", "0", "--port", "0"]


async def read_journal(state_dir: Path, session_id: str = TUTORIAL) -> Journal:
    return await anyio.to_thread.run_sync(JournalStore(state_dir).read, session_id)


def inputs(journal: Journal) -> list[InputRecord]:
    return inputs_of(journal)


async def test_every_tool_call_message_and_control_is_in_the_journal_when_its_reply_arrives(
    tmp_path: Path,
) -> None:
    async with (
        serving(state_dir=tmp_path) as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.USER) as user,
        attach(service, Role.CONTROLLER) as controller,
    ):
        requests = [
            (
                agent,
                CallTool,
                {"tool": "EmailClientApp__list_emails", "args": {"folder_name": "INBOX"}},
            ),
            (user, SendUserMessage, {"content": "hello, agent"}),
            (controller, Tick, {"n": 2}),
            (controller, Pause, {}),
            (controller, Resume, {}),
        ]
        for peer, kind, fields in requests:
            await peer.call(kind, **fields)
            last = inputs(await read_journal(tmp_path))[-1]
            wanted = {CallTool: "call_tool", SendUserMessage: "send_user_message"}
            assert last.source == wanted.get(kind, kind.__name__.lower())
        calls = [r for r in inputs(await read_journal(tmp_path)) if isinstance(r, kinds.CallTool)]
        assert (calls[-1].tool, calls[-1].args) == (
            "EmailClientApp__list_emails",
            {"folder_name": "INBOX"},
        )


async def test_created_holds_the_tokens_as_salted_hashes_and_no_token_is_on_disk(
    tmp_path: Path,
) -> None:
    async with serving(state_dir=tmp_path, seed=1234) as service:
        minted = tokens(service)
        session = service.registry.get(TUTORIAL)
        assert session is not None
        created = (await read_journal(tmp_path)).created
    assert isinstance(created, Created)
    assert created.session_id == TUTORIAL and created.epoch == session.epoch
    assert created.seed == 1234
    assert created.scenario.id == TUTORIAL  # type: ignore[union-attr]
    assert all(created.token_matches(role.value, token) for role, token in minted.items())
    journal_bytes = (tmp_path / "sessions" / f"{TUTORIAL}.journal").read_bytes()
    for token in [*minted.values(), ADMIN]:
        assert token.encode() not in journal_bytes


async def test_created_holds_the_simulations_creation_as_the_struct_it_is(
    tmp_path: Path,
) -> None:
    async with serving(state_dir=tmp_path, seed=1234) as service:
        session = service.registry.get(TUTORIAL)
        assert session is not None and session.sim.creation is not None
        created = (await read_journal(tmp_path)).created
        assert isinstance(created, Created)
        assert created.creation is not None and "creation" not in created.options
        assert msgspec.msgpack.decode(created.creation, type=Creation) == session.sim.creation


async def test_the_admin_token_is_kept_0600_in_the_state_dir_and_used_again(
    tmp_path: Path,
) -> None:
    async with serving(state_dir=tmp_path, admin_token=None) as first:
        minted = first.tokens.admin
    kept = tmp_path / "admin-token"
    assert kept.read_text().strip() == minted
    assert kept.stat().st_mode & 0o777 == 0o600
    async with serving(state_dir=tmp_path, admin_token=None) as second:
        assert second.tokens.admin == minted


async def test_an_ended_session_gets_ended_and_its_journal_outlives_it_until_retention(
    tmp_path: Path,
) -> None:
    async with serving(state_dir=tmp_path) as service, attach(service, Role.CONTROLLER) as c:
        await c.call(Stop)
        await c.until_ended()
        session = service.registry.get(TUTORIAL)
        assert session is not None and session.journal is not None
        with anyio.fail_after(10):
            await session.journal.finished.wait()  # `Ended` is durable
    ended = (await read_journal(tmp_path)).ended
    assert isinstance(ended, Ended) and ended.state == "stopped"
    # A restart keeps it within the retention, rebuilt for replay (ended, as it was), and
    # never reuses its session id.
    async with serving(state_dir=tmp_path) as service:
        assert [s.id for s in service.registry.live()] == [f"{TUTORIAL}-2"]
        kept = service.registry.get(TUTORIAL)
        assert kept is not None and kept.ended and kept.sim.state == "stopped"
        # Ended, not left live: a shutdown would suspend it, and the next start resume it.
        await service.registry.stop(f"{TUTORIAL}-2")
    assert (tmp_path / "sessions" / f"{TUTORIAL}.journal").exists()
    # A start-up with a shorter retention sweeps it away before it starts its sessions: the
    # id is free again.
    async with serving(state_dir=tmp_path, retention=0.001) as service:
        assert list(service.registry.sessions) == [TUTORIAL]
        created = (await read_journal(tmp_path)).created
        assert created is not None and created.epoch == service.registry.sessions[TUTORIAL].epoch


async def test_without_a_state_dir_sessions_have_no_journal(tmp_path: Path) -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        await agent.call(CallTool, tool="EmailClientApp__list_emails", args={})
        session = service.registry.get(TUTORIAL)
        assert session is not None
        assert session.journal is None and session.hub.gate is None
        assert service.registry.journals is None


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        (
            "--durability",
            "sometimes",
            b"argument --durability: expected `every` (one sync per record) or `group:MS`",
        ),
        (
            "--durability",
            "group:-1",
            b"argument --durability: expected `every` (one sync per record) or `group:MS`",
        ),
        ("--retention", "-5", b"argument --retention: expected a duration > 0"),
        ("--retention", "soon", b"argument --retention: expected a duration > 0"),
    ],
)
async def test_serve_refuses_a_bad_durability_option_naming_it(
    flag: str, value: str, says: bytes
) -> None:
    result = await anyio.run_process([*SERVE, flag, value], check=False)
    assert result.returncode == 2
    assert says in result.stderr


def test_servers_sharing_a_state_dir_all_start_when_they_settle_its_admin_token_at_once(
    tmp_path: Path,
) -> None:
    # A cluster's hosts share one state dir and start together: each writes the admin token.
    starters = 8
    barrier = threading.Barrier(starters)
    settled: list[str] = []
    failed: list[BaseException] = []

    def start() -> None:
        journals = Journals(config(state_dir=tmp_path, admin_token=ADMIN))
        barrier.wait(timeout=30)
        try:
            settled.append(journals._open(ADMIN))
        except Exception as exc:
            failed.append(exc)

    threads = [threading.Thread(target=start) for _ in range(starters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failed == []
    assert settled == [ADMIN] * starters
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("admin-token")] == [
        "admin-token"
    ]
    assert (tmp_path / "admin-token").read_text().strip() == ADMIN
