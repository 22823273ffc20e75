"""The package's layering, checked on its source: which part of areasync may import what.

The layers point one way: protocol/ (wire structs) <- engine/ (clock, ticks, stream) <- bridge/
(the one place the service stack imports ARE) <- simulation <- service/; client/ depends on
protocol/ only (and the package's lazy-import helper); no import cycles. The check parses
every module with `ast` and imports none of them, so it is fast and cannot be fooled by import
side effects. Imports inside functions count for the layer rules (a lazy import is still a
dependency); cycles are found among module-level imports, `if TYPE_CHECKING:` ones included.

What the layers cannot say is checked by importing, in a fresh interpreter: each sans-I/O
core loads no ARE and no I/O library (`SANS_IO`), and the front process of `areasync serve`
loads no ARE (`FRONT_ENTRY`).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "areasync"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

# Modules outside bridge/ that wrap ARE's own pipeline, and may therefore import ARE.
ARE_ADAPTERS = {
    # Gaia2 on ARE's own benchmark runner, dataset loader and submission tools.
    "areasync.gaia2",
    # ARE's own default agent (its ReAct loop, prompts, LLM engine) playing a live session.
    "areasync.agents.are.agent",
    "areasync.agents.are.session",
    # Runs the scenario's oracle with ARE in-process to learn the oracle agent's plan.
    "areasync.agents.oracle.plan",
    # Runs ARE's own Environment side by side with areasync's, as the reference to agree with.
    "areasync.conformance",
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str  # a dotted module name, resolved to the deepest module that exists
    module_level: bool  # at module level (including `if TYPE_CHECKING:`), not in a function


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(root, path): path for path in sorted(root.rglob("*.py"))}


def imports_of(root: Path) -> list[Import]:
    """Every import statement of every module under `root`, resolved to module names."""
    known = modules(root)
    found: list[Import] = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        for node, module_level in _import_nodes(tree, module_level=True):
            for target in _targets(node, name, is_package, known):
                found.append(Import(name, target, module_level))
    return found


def _import_nodes(
    node: ast.AST, *, module_level: bool
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, module_level
        else:
            in_function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            yield from _import_nodes(child, module_level=module_level and not in_function)


def _targets(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, known: dict[str, Path]
) -> list[str]:
    if isinstance(node, ast.Import):
        return [_deepest(alias.name, known) for alias in node.names]
    base = node.module or ""
    if node.level:
        package = importer.split(".") if is_package else importer.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([base] if base else [])])
    # `from package import submodule` depends on the submodule, `from module import name` on
    # the module.
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else _deepest(base, known)
        for alias in node.names
    ]


def _deepest(name: str, known: dict[str, Path]) -> str:
    parts = name.split(".")
    while len(parts) > 1 and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


# -- the rules ---------------------------------------------------------------------------------


def part_of(module: str) -> str:
    """The package part a module belongs to: `protocol`, `engine`, `bridge`, `service`..."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _within(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


# Which parts of the package each part may import (a part not listed may import any).
MAY_IMPORT = {
    "protocol": {"protocol"},
    "engine": {"protocol", "engine"},
    # `lazy`: the package's imports on first use (PEP 562; the standard library only).
    "client": {"protocol", "client", "lazy"},
    # The session journal is a storage layer: it knows nothing of ARE or of the service.
    "journal": {"journal"},
    # Worker processes and their supervisor: what a worker does is its handlers' business
    # (named by its pool), so the same pool can carry bench runs now and sessions later.
    "workers": {"workers"},
    # What runs in a session worker process: the service, and the worker machinery's types;
    # never the front (which holds the admin token) nor the CLI.
    "sessionworker": {
        "protocol",
        "engine",
        "bridge",
        "simulation",
        "journal",
        "service",
        "workers",
        "sessionworker",
    },
    # The front process: the service's screens, hello and hand-off, the worker pool and the
    # session workers' handlers (which it names); never ARE-facing layers directly.
    "front": {
        "protocol",
        "journal",
        "service",
        "workers",
        "sessionworker",
        "front",
        "signals",
        "privatedirs",
    },
}


# The cluster (areasync[ray]) is an optional part: only it imports Ray, and only it, the CLI's
# `serve --ray` and `bench run --ray` (gaia2/cli.py) import it, lazily.
RAY_PARTS = {"cluster"}
CLUSTER_IMPORTERS = {"cluster", "cli", "gaia2"}


def layer_violations(
    imports: Iterable[Import], are_adapters: Iterable[str]
) -> set[tuple[str, str]]:
    """(importer, imported) pairs that break a layer rule; ARE itself is named `are`."""
    adapters = set(are_adapters)
    found: set[tuple[str, str]] = set()
    for imp in imports:
        top = imp.imported.split(".")[0]
        part = part_of(imp.importer)
        if top == "ray" and part not in RAY_PARTS:
            found.add((imp.importer, "ray"))
        elif (
            top == PACKAGE and part_of(imp.imported) == "cluster" and part not in CLUSTER_IMPORTERS
        ):
            found.add((imp.importer, imp.imported))
        elif top == "are":
            if part != "bridge" and not _within(imp.importer, adapters):
                found.add((imp.importer, "are"))
        elif (
            top == PACKAGE and part in MAY_IMPORT and part_of(imp.imported) not in MAY_IMPORT[part]
        ):
            found.add((imp.importer, imp.imported))
    return found


def import_cycles(
    imports: Iterable[Import], ignored: Iterable[tuple[str, str]] = ()
) -> list[list[str]]:
    """The cycles among the package's modules (module-level imports): each strongly connected
    group of more than one module, or a module importing itself; `ignored` edges left out."""
    skip = set(ignored)
    graph: dict[str, set[str]] = {}
    for imp in imports:
        edge = (imp.importer, imp.imported)
        if imp.module_level and imp.imported.split(".")[0] == PACKAGE and edge not in skip:
            graph.setdefault(imp.importer, set()).add(imp.imported)
    return [
        sorted(group)
        for group in _strongly_connected(graph)
        if len(group) > 1 or next(iter(group)) in graph.get(next(iter(group)), set())
    ]


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iteratively (the import graph is deep enough to matter)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


# The service's own parts, lowest first (service/__init__.py says why this order): a part may
# import the parts before it and itself, never one after it, not even lazily. A part is a
# sub-package (`gate`, `adapters.openenv`) or a flat module (`config`, `server`); the package's
# root only hands names on (PEP 562) and has no place.
SERVICE_ORDER = (
    "ports",
    "fdlimit",
    "gc_policy",
    "metrics",
    "background",
    "gate",
    "config",
    "fanout",
    "durability",
    "sessions",
    "connection",
    "dashboard",
    "adapters",
    "adapters.openenv",
    "http",
    "adapters.mcp",
    "adapters.gaia2cli",
    "starting",
    "server",
)
SERVICE = f"{PACKAGE}.service"


def service_part(module: str, order: Iterable[str] = SERVICE_ORDER) -> str | None:
    """The part of the service `module` belongs to (its longest name in `order`), `""` for a
    service module with no place in it, None outside the service or for its root."""
    if not module.startswith(SERVICE + "."):
        return None
    within = module[len(SERVICE) + 1 :].split(".")
    places = set(order)
    for size in range(len(within), 0, -1):
        if ".".join(within[:size]) in places:
            return ".".join(within[:size])
    return ""


def service_back_edges(
    imports: Iterable[Import], order: tuple[str, ...] = SERVICE_ORDER
) -> set[tuple[str, str]]:
    """(importer, imported) pairs of the service's modules where a part imports a later one."""
    rank = {part: at for at, part in enumerate(order)}
    found: set[tuple[str, str]] = set()
    for imp in imports:
        lower, upper = service_part(imp.importer, order), service_part(imp.imported, order)
        if lower and upper and rank[lower] < rank[upper]:
            found.add((imp.importer, imp.imported))
    return found


# -- the package --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def package_imports() -> list[Import]:
    return imports_of(ROOT)


def test_the_package_breaks_no_layer_rule(package_imports: list[Import]) -> None:
    assert layer_violations(package_imports, ARE_ADAPTERS) == set()


def test_the_package_has_no_import_cycle(package_imports: list[Import]) -> None:
    assert import_cycles(package_imports) == []


# Lazy imports that close a cycle by design, each with its reason (none today: the front names
# a session worker's `serve` through `sessionworker/entry.py`, which nothing else imports).
LAZY_BY_DESIGN: set[tuple[str, str]] = set()


def test_the_package_has_no_import_cycle_even_through_a_lazy_import(
    package_imports: list[Import],
) -> None:
    """A lazy import is still a dependency: two modules that import each other, even inside
    functions, are one module in two files (but for `LAZY_BY_DESIGN`). The package's root is
    left out: it only hands names on (PEP 562), and importing it names the package, not a part
    of it."""
    every = [
        Import(imp.importer, imp.imported, module_level=True)
        for imp in package_imports
        if PACKAGE not in (imp.importer, imp.imported)
    ]
    assert import_cycles(every, LAZY_BY_DESIGN) == []


def test_the_service_parts_import_only_the_parts_below_them(package_imports: list[Import]) -> None:
    """`SERVICE_ORDER`, lowest first: no import (module-level, `TYPE_CHECKING` or lazy) goes
    up it."""
    assert service_back_edges(package_imports) == set()


def test_every_service_module_has_a_place_in_its_order() -> None:
    assert [name for name in modules(ROOT) if service_part(name) == ""] == []


def test_every_are_adapter_exists() -> None:
    known = modules(ROOT)
    assert {name for name in ARE_ADAPTERS if not _within_any(name, known)} == set()


def _within_any(prefix: str, known: dict[str, Path]) -> bool:
    return any(_within(name, [prefix]) for name in known)


# -- the sans-I/O cores, imported -------------------------------------------------------------

# Modules that decide without doing I/O: importing one loads neither ARE nor an I/O library, so
# that its tests drive it with plain values in milliseconds (ARCHITECTURE.md, "Two sans-I/O
# cores under thin asyncio layers").
SANS_IO = (
    "areasync.service.connection.protocol",
    # A stream item's frame bytes and a write's batching: plain bytes, no websockets.
    "areasync.service.fanout.frames",
    "areasync.client.stream",
    "areasync.client.requests",
    "areasync.client.handshake",
    "areasync.client.reconnect",
)
HEAVY = ("are", "websockets", "anyio", "areasync.bridge", "areasync.simulation")


def loaded_by(modules: str, heavy: Iterable[str]) -> list[str]:
    """The modules of `heavy` that importing `modules` (comma-separated) loads, in a fresh
    interpreter."""
    probe = (
        f"import json, sys; import {modules}; "
        f"print(json.dumps([m for m in {list(heavy)!r} if m in sys.modules]))"
    )
    path = os.pathsep.join(p for p in (str(ROOT.parent), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


@pytest.mark.parametrize("module", SANS_IO)
def test_a_sans_io_core_is_imported_without_are_or_an_io_library(module: str) -> None:
    assert loaded_by(module, HEAVY) == []


# What `areasync serve` (with session workers) imports before its banner: the command (its
# package and its `serve` module), the fork server's boot, the front. The front hands sessions
# to workers whose fork server imports ARE; the front itself needs plain values and frames, so
# it imports no ARE (about 2 s of CPU on the start-up's critical path,
# docs/topics/performance.md), no session or simulation, and neither LiteLLM (ARE's LLM engine)
# nor Ray (`serve --ray` only).
FRONT_ENTRY = ("areasync.cli", "areasync.cli.serve", "areasync.front.boot", "areasync.front.cli")
NOT_IN_THE_FRONT = (
    "are",
    "litellm",
    "ray",
    "areasync.simulation",
    "areasync.service.sessions.session",
    "areasync.service.sessions.registry",
    "areasync.sessionworker.handlers",
)


def test_the_front_process_imports_no_are_nor_a_session() -> None:
    assert loaded_by(", ".join(FRONT_ENTRY), NOT_IN_THE_FRONT) == []


# -- the checker, on a synthetic package ----------------------------------------------------


def write_package(root: Path, files: dict[str, str]) -> Path:
    """A package named like the real one under `root`, one module per entry."""
    package = root / PACKAGE
    for relative, source in {"__init__.py": "", **files}.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(package).parents:
            (package / parent / "__init__.py").touch()
        path.write_text(source)
    return package


def test_a_clean_package_has_no_violation_and_no_cycle(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "protocol/frames.py": "import msgspec\n",
            "engine/clock.py": "from areasync.protocol.frames import Frame\n",
            "bridge/env.py": "from are.simulation import Environment\nfrom ..loop import clock\n",
            "client/async_client.py": "from areasync.protocol import frames\n",
            "service/fanout/hub.py": "from areasync.bridge.env import AsyncEnvironment\n",
        },
    )
    found = imports_of(package)
    assert layer_violations(found, ()) == set()
    assert import_cycles(found) == []


def test_protocol_importing_another_part_is_a_violation(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "protocol/frames.py": "from areasync.engine.clock import VirtualClock\n",
            "engine/clock.py": "",
        },
    )
    assert layer_violations(imports_of(package), ()) == {
        ("areasync.protocol.frames", "areasync.engine.clock")
    }


def test_the_engine_importing_bridge_even_lazily_is_a_violation(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "engine/ticks.py": "def f():\n    from areasync.bridge import env\n",
            "bridge/env.py": "",
        },
    )
    assert layer_violations(imports_of(package), ()) == {
        ("areasync.engine.ticks", "areasync.bridge.env")
    }


def test_importing_are_outside_bridge_and_the_adapters_is_a_violation(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "service/sessions/session.py": "from are.simulation.scenarios import Scenario\n",
            "engine/ticks.py": "import are.simulation.types\n",
            "gaia2/runner.py": "import are.simulation.multi_scenario_runner\n",
        },
    )
    assert layer_violations(imports_of(package), ["areasync.gaia2"]) == {
        ("areasync.service.sessions.session", "are"),
        ("areasync.engine.ticks", "are"),
    }


def test_client_importing_the_service_is_a_violation(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "client/async_client.py": "from areasync.service.fanout import hub\n",
            "service/fanout/hub.py": "",
        },
    )
    assert layer_violations(imports_of(package), ()) == {
        ("areasync.client.async_client", "areasync.service.fanout.hub")
    }


def test_importing_ray_outside_the_cluster_is_a_violation(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {"service/server.py": "import ray\n", "cluster/host.py": "import ray\n"},
    )
    assert layer_violations(imports_of(package), ()) == {("areasync.service.server", "ray")}


def test_importing_the_cluster_outside_it_and_the_cli_is_a_violation(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "cluster/router.py": "",
            "service/server.py": "def f():\n    from areasync.cluster import router\n",
            "cli/__init__.py": "def f():\n    from areasync.cluster import router\n",
        },
    )
    assert layer_violations(imports_of(package), ()) == {
        ("areasync.service.server", "areasync.cluster.router")
    }


def test_a_relative_import_is_resolved_to_its_module(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {"engine/ticks.py": "from ..service.fanout.hub import Hub\n", "service/fanout/hub.py": ""},
    )
    assert layer_violations(imports_of(package), ()) == {
        ("areasync.engine.ticks", "areasync.service.fanout.hub")
    }


def test_a_cycle_through_a_type_checking_import_is_found(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "service/a.py": "from areasync.service.b import B\n",
            "service/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from areasync.service.a import A\n"
            ),
        },
    )
    assert import_cycles(imports_of(package)) == [["areasync.service.a", "areasync.service.b"]]


def test_an_import_inside_a_function_closes_no_cycle(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "service/a.py": "from areasync.service.b import B\n",
            "service/b.py": "def f():\n    from areasync.service.a import A\n",
        },
    )
    assert import_cycles(imports_of(package)) == []


def test_an_ignored_edge_breaks_its_cycle(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "service/a.py": "from areasync.service import b\n",
            "service/b.py": "from areasync.service import a\n",
        },
    )
    found = imports_of(package)
    assert import_cycles(found, {("areasync.service.b", "areasync.service.a")}) == []


def test_a_service_part_importing_a_later_part_is_a_back_edge(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "service/gate/screens.py": "from areasync.service.config import ServiceConfig\n",
            "service/config.py": "from areasync.service.gate import origin\n",
            "service/gate/origin.py": "",
            "service/fanout/hub.py": "def f():\n    from areasync.service.connection import wire\n",
            "service/connection/wire.py": "",
        },
    )
    assert service_back_edges(imports_of(package), ("gate", "config", "fanout", "connection")) == {
        ("areasync.service.gate.screens", "areasync.service.config"),
        ("areasync.service.fanout.hub", "areasync.service.connection.wire"),
    }


def test_a_module_of_a_sub_package_belongs_to_its_deepest_part_in_the_order() -> None:
    order = ("adapters", "adapters.openenv", "server")
    assert [
        service_part(f"{SERVICE}.{name}", order)
        for name in ("adapters.openenv.routes", "adapters.mcp.port", "server", "dashboard")
    ] == ["adapters.openenv", "adapters", "server", ""]


def test_no_service_or_client_module_may_import_are() -> None:
    assert [name for name in ARE_ADAPTERS if part_of(name) in ("service", "client")] == []
