"""`/metrics` of a front: the session workers' expositions, merged into one.

Each session worker counts its own (`service/metrics.py`: its `Service` renders them); the
front asks every worker up for its text over the pool's channel and adds them up. Every
sample a server renders is a count that sums over processes: the counters, the gauges of
sessions by state and clients by role, a histogram's buckets, sum and count. So the front's
sample is the sum of the workers' same sample, in the exposition a single process gives: the
same names, HELP, TYPE and labels, in its order (a labelled counter's samples sorted by
label, as a server sorts them). What cannot be summed is the front's own, labelled by
worker: `areasync_front_worker_up{worker}`, 1 for a worker that answered, else 0 (its counts
are then missing from the sums until it answers again; a restarted worker counts from zero).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["merge"]


@dataclass
class _Metric:
    header: list[str]  # its HELP and TYPE lines
    kind: str
    samples: dict[str, float] = field(default_factory=dict)  # the sample's name{labels} -> sum


def merge(texts: Iterable[str], up: Mapping[str, bool]) -> str:
    """The sum of the expositions `texts`, then whether each worker of `up` answered."""
    metrics: dict[str, _Metric] = {}
    for text in texts:
        current: _Metric | None = None
        for line in text.splitlines():
            if line.startswith("# HELP "):
                name = line.split(" ", 3)[2]
                current = metrics.setdefault(name, _Metric([line], "untyped"))
            elif line.startswith("# TYPE ") and current is not None:
                if len(current.header) == 1:
                    current.header.append(line)
                    current.kind = line.rsplit(" ", 1)[1]
            elif line and not line.startswith("#") and current is not None:
                key, _, value = line.rpartition(" ")
                current.samples[key] = current.samples.get(key, 0.0) + float(value)
    lines: list[str] = []
    for metric in metrics.values():
        lines += metric.header
        samples = metric.samples.items()
        ordered = samples if metric.kind == "histogram" else sorted(samples)
        lines += [f"{key} {_number(value)}" for key, value in ordered]
    lines += [
        "# HELP areasync_front_worker_up Whether a session worker answered for these sums.",
        "# TYPE areasync_front_worker_up gauge",
    ]
    lines += [f'areasync_front_worker_up{{worker="{name}"}} {int(ok)}' for name, ok in up.items()]
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:.9g}"
