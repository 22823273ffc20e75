"""`front/metrics.py`: the workers' expositions add up to what one process holding all their
sessions would render."""

from __future__ import annotations

from areasync.front.metrics import merge
from areasync.service.metrics import Metrics


def _rendered(metrics: Metrics, live: float, agents: float) -> str:
    return metrics.render(
        sessions={"live": live, "ended": 0.0}, connections={"agent": agents}, traces=1
    )


def _worker(created: int, code: str, seconds: float) -> Metrics:
    metrics = Metrics()
    metrics.sessions_created = created
    metrics.errors[code] += 1
    metrics.tool_call_seconds.observe(seconds)
    return metrics


def test_the_merge_of_two_workers_is_one_process_holding_both() -> None:
    first, second = _worker(2, "forbidden", 0.001), _worker(3, "bad_frame", 0.5)
    both = _worker(5, "forbidden", 0.001)
    both.errors["bad_frame"] += 1
    both.tool_call_seconds.observe(0.5)
    merged = merge(
        [_rendered(first, 1, 2), _rendered(second, 2, 0)], {"worker-0": True, "worker-1": True}
    )
    single = merged.split("# HELP areasync_front_worker_up", 1)[0]
    assert single == _rendered(both, 3, 2).replace(
        "traces_written_total 1", "traces_written_total 2"
    )


def test_a_worker_that_did_not_answer_is_named_by_the_front_gauge() -> None:
    merged = merge([_rendered(Metrics(), 0, 0)], {"worker-0": True, "worker-1": False})
    assert 'areasync_front_worker_up{worker="worker-0"} 1' in merged.splitlines()
    assert 'areasync_front_worker_up{worker="worker-1"} 0' in merged.splitlines()
