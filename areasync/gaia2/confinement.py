"""What a `bench` worker process may do once confined (`areasync/workers/confine.py`).

A worker runs ARE's pipeline on scenarios it is sent as JSON, agents' tool calls included;
the driver writes every output (`remote.py`). So a worker needs little:

* **Read:** Python, areasync and ARE (`confine.runtime_paths()`), and ARE's local file-system
  datasets when they are local directories (`FS_PATH`, `DEMO_FS_PATH`): a scenario's
  file-system app falls back to them (ARE's default `DEMO_FS_PATH` is on the Hugging Face Hub:
  reachable only where port 443 is, below).
* **Write:** its own temp dir only (`Confinement.tmp_under`: a folder the driver makes for the
  pool and removes at the end, and a worker's own when it is lost), where its runs stage their
  files and ARE makes its file-system apps' sandboxes (`serving()` moves them there).
* **Network:** TCP to its model endpoints' ports only (`--endpoint`, `--judge_endpoint`,
  `--a2a_endpoint`, which defaults to `--endpoint`: the URL's port, or its scheme's; without
  an endpoint, a hosted provider: 443), and UDP for name resolution only when one is named by
  a host name (any UDP destination then: said on the start-up line). An `--oracle` run calls
  no model: no network.
* **Limits:** `MEMORY_BYTES` of address space, `FILES` descriptors.

`--require-confinement` refuses to start when the kernel cannot apply all of it
(`refusal`); without it the workers apply what the kernel has, and the start-up line says
what was left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from areasync.workers.confine import Confinement, Support, endpoint_reach, probe

__all__ = ["FILES", "MEMORY_BYTES", "bench_confinement", "describe", "refusal", "serving"]

# Far above a worker's needs (docs/topics/performance.md measures its address space when
# ready): a bound on a runaway, not a budget.
MEMORY_BYTES = 16 << 30
FILES = 4096
_ENDPOINTS = ("endpoint", "judge_endpoint", "a2a_endpoint")


def _network(options: Mapping[str, Any]) -> tuple[tuple[int, ...], bool]:
    """(TCP ports, whether name resolution is needed) of the run's model endpoints."""
    if options.get("oracle"):
        return (), False
    ports: set[int] = set()
    resolve = False
    for name in _ENDPOINTS:
        url = options.get(name)
        if name == "a2a_endpoint" and not url:
            continue  # ARE's Agent2Agent apps then call `--endpoint`
        port, named = endpoint_reach(url)
        ports.add(port)
        resolve = resolve or named
    return tuple(sorted(ports)), resolve


def _local_datasets() -> tuple[str, ...]:
    from are.simulation import config

    paths = (config.FS_PATH, config.DEMO_FS_PATH)
    return tuple(path for path in paths if os.path.isabs(path) and os.path.isdir(path))


def bench_confinement(options: Mapping[str, Any], *, required: bool) -> Confinement:
    """The confinement of a bench run's workers, from ARE's options (module docstring); its
    `tmp_under` is the pool's to fill (`local.local_runs`)."""
    ports, resolve = _network(options)
    return Confinement(
        read_only=_local_datasets(),
        connect_ports=ports,
        datagrams=resolve,
        memory_bytes=MEMORY_BYTES,
        files=FILES,
        required=required,
    )


def describe(spec: Confinement) -> str:
    """What the start-up line says of the workers' confinement."""
    if spec.connect_ports:
        ports = ", ".join(map(str, spec.connect_ports))
        network = f"TCP to port {ports} only"
        if spec.datagrams:
            network += ", UDP (name resolution)"
    else:
        network = "no network"
    return f"{probe().describe()}; network: {network}"


def refusal(support: Support | None = None) -> str | None:
    """Why `--require-confinement` must refuse on a kernel with `support` (by default this
    one's, `probe()`); None: it has it all."""
    missing = (support or probe()).missing
    if not missing:
        return None
    return (
        "--require-confinement: this kernel cannot confine the worker processes: "
        + "; ".join(missing)
        + ". Run on Linux 6.7 or later with Landlock enabled and seccomp, or drop "
        "--require-confinement to run them less confined."
    )


@contextmanager
def serving(models: bool = True) -> Iterator[Any]:
    """A confined bench worker's handlers: `remote.serving(models)`'s, with ARE's file-system
    sandboxes made in the worker's own temp dir (`own_are_sandboxes`)."""
    from areasync.bridge.sandbox.paths import own_are_sandboxes
    from areasync.gaia2 import remote

    with own_are_sandboxes(), remote.serving(models) as handlers:
        yield handlers


def oracle_serving() -> AbstractContextManager[Any]:
    """`serving()` for `--oracle` runs, which call no model (a `Serve`: no arguments)."""
    return serving(models=False)
