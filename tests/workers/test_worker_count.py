"""`serve`'s session workers: how many when `--workers` is left out, and what the banner says."""

from __future__ import annotations

import os

from areasync.workers.count import usable_cpus, worker_count


def test_the_default_is_one_worker_per_cpu_this_process_may_use() -> None:
    assert worker_count(None).count == usable_cpus()
    assert usable_cpus() == len(os.sched_getaffinity(0))


def test_workers_0_is_one_process_said_to_be_unconfined() -> None:
    workers = worker_count(0)
    assert workers.count == 0 and workers.one_process is not None
    assert "unconfined" in workers.one_process


def test_an_explicit_count_is_kept() -> None:
    assert worker_count(3).count == 3
