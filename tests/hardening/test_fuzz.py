"""Fuzzing over a live socket: garbage changes nothing, is always answered, never crashes.

Each example plays the fixed control script of `fuzzing.py` on a fresh server with hypothesis'
garbage interleaved (random bytes and text, mutated frames, truncated msgpack, invalid UTF-8,
huge and deeply nested payloads, frames in the wrong order and before hello), and compares the
run with the reference run, which has no garbage.

`make test` runs a short version (FUZZ_EXAMPLES, default 20); `make fuzz` runs the long one
(marked `soak`; FUZZ_EXAMPLES, default 1000).
"""

from __future__ import annotations

import asyncio
import functools
import os

import pytest
from hypothesis import HealthCheck, event, example, given, settings

from areasync.conformance.normal_form import first_difference
from tests.hardening.fuzzing import FRAME_LIMIT, SCRIPT, Garbage, Outcome, garbage_plan, run_script

SHORT_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "20"))
LONG_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "1000"))


@functools.cache
def reference() -> Outcome:
    """The script with no garbage (computed once per test process)."""
    outcome = asyncio.run(run_script())
    assert outcome.faults == [] and outcome.violations == []
    return outcome


def check_against_reference(plan: list[list[Garbage]]) -> None:
    expected = reference()
    outcome = asyncio.run(run_script(plan))
    for answer in outcome.answers:
        event(answer)  # `--hypothesis-show-statistics` shows how garbage was answered
    assert outcome.faults == [], outcome.faults
    assert outcome.violations == [], outcome.violations
    assert outcome.replies == expected.replies
    assert outcome.log == expected.log, first_difference(outcome.log, expected.log)
    assert outcome.stream == expected.stream


def test_the_reference_run_is_deterministic() -> None:
    again = asyncio.run(run_script())
    assert (again.log, again.stream, again.replies) == (
        reference().log,
        reference().stream,
        reference().replies,
    )


def fuzz_settings(examples: int) -> settings:
    # Each example starts a server and plays a dozen round trips: slow by hypothesis' standard.
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# Every kind of garbage at least once, whatever hypothesis draws (explicit example).
_huge = '{"type": "ping", "id": 7, "x": "' + "x" * FRAME_LIMIT + '"}'
EVERY_KIND: list[Garbage] = [
    Garbage("agent", b"\x93\x01", False),  # truncated msgpack
    Garbage("controller", "{not json", True),
    Garbage("user", '{"type": "teleport", "id": 3}', True),  # unknown tag
    Garbage("observer", '{"type": "tick", "id": "four", "n": 1}', True),  # wrong type
    Garbage("observer", '{"type": "tick", "id": 5, "n": 1}', True),  # valid, forbidden here
    Garbage("agent", b"\x81\xa4type\xa4\xff\xfe\xfd\xfc", False),  # msgpack, bad UTF-8
    Garbage("controller", "[" * 20_000 + "]" * 20_000, True),  # deep nesting
    Garbage("controller", '{"type": "jump", "id": 6, "to": -1.0}', True),  # into the past
    Garbage("agent", '{"type": "hello", "id": 8, "role": "agent", "token": "x"}', True),
    Garbage("fresh", '{"type": "tick", "id": 9, "n": 1}', True),  # before hello
    Garbage("fresh", '{"type": "hello", "id": 10, "role": "admin", "token": "guess"}', True),
    Garbage("fresh-attached", b'{"type": "ping", "id": 11, "x": "\xff"}', True),  # not UTF-8
    Garbage("fresh-attached", _huge, True),  # above the limit
    Garbage("fresh-attached", _huge * 3, True),  # above twice the limit
]
EVERY_KIND_PLAN = [EVERY_KIND if index == 3 else [] for index in range(len(SCRIPT))]


@fuzz_settings(SHORT_EXAMPLES)
@example(plan=EVERY_KIND_PLAN)
@given(plan=garbage_plan())
def test_garbage_frames_are_answered_and_change_nothing(plan: list[list[Garbage]]) -> None:
    check_against_reference(plan)


@pytest.mark.soak
@fuzz_settings(LONG_EXAMPLES)
@given(plan=garbage_plan(max_per_step=8))
def test_garbage_frames_are_answered_and_change_nothing_long(plan: list[list[Garbage]]) -> None:
    check_against_reference(plan)
