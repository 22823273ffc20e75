"""Records and journals the journal tests share."""

from __future__ import annotations

from areasync.journal import (
    Created,
    Ended,
    InlineScenario,
    Input,
    Record,
    RegisteredScenario,
    hash_token,
)
from areasync.journal.entries import Header
from areasync.journal.format import encode_preamble, encode_record

SALT = b"0123456789abcdef"


def created(session_id: str = "s1", *, inline: bool = False) -> Created:
    scenario = (
        InlineScenario.of('{"metadata": {"definition": {"scenario_id": "x"}}}')
        if inline
        else RegisteredScenario("scenario_find_image_file")
    )
    return Created(
        session_id=session_id,
        scenario=scenario,
        mode="fast",
        speed=1.0,
        oracle=False,
        import_mode="linear",
        seed=42,
        token_salt=SALT,
        token_hashes={"agent": hash_token(SALT, "agent-token")},
        epoch="0123abcd",
        created=1_700_000_000.5,
        options={"lease_policy": "strict", "max_idle": None},
    )


def tool_call(seq: int) -> Input:
    return Input(
        time=1_700_000_000.0 + seq * 0.25,
        seq=seq,
        source="call_tool",
        payload={
            "tool": "EmailClientApp__send_email",
            "args": {"recipients": ["bob@example.com"], "subject": f"hi {seq}", "content": "ok"},
        },
    )


def ended(seq: int = 3, wall: float = 1_700_000_100.0) -> Ended:
    return Ended(reason="finished", state="ended", seq=seq, wall=wall)


def records(n_inputs: int = 3, *, with_end: bool = True) -> list[Record]:
    out: list[Record] = [created(), *(tool_call(i) for i in range(n_inputs))]
    return [*out, ended(n_inputs)] if with_end else out


def journal_bytes(items: list[Record]) -> tuple[bytes, list[int]]:
    """A journal's bytes and the offset where each part starts: magic, version, header frame,
    then one per record (the last entry is the end of the file)."""
    preamble = encode_preamble(Header(areasync_version="0.1.0", created=1.0))
    offsets = [0, 8, 10, len(preamble)]
    data = preamble
    for item in items:
        data += encode_record(item)
        offsets.append(len(data))
    return data, offsets
