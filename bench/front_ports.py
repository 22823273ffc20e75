"""gaia2-cli's ports (per session and shared) and the MCP port through a front of session
workers, against a single process: round trips side by side in one run.

    PYTHONPATH=. python bench/front_ports.py [--calls 500]

Prints one JSON document. Every server is a real `areasync serve` process (manual mode,
`--gaia2-ports`, `--gaia2-port 0`, `--mcp-port 0`, the admin token `TOKEN`), with
`--workers 0` (with `--state-dir`: workers always journal) and `--workers 2`; each client is
one keep-alive `http.client` connection in this process (which connects again when a
response closes its connection, as the shared port's do through a front):

* `gaia2_status`: `GET /status` on the session's own gaia2-cli port (a read, no journal).
* `gaia2_notify`: `POST /notify` there (the user's message: a change, journaled first).
* `shared_status`, `shared_notify`: the same on the shared port, `/gaia2/<user token>/...`
  (through a front: a connection and a hand-off per request).
* `shared_status_fresh`: `GET /status` on the shared port, each on a connection of its own
  (as gaia2-cli's commands send theirs), in both set-ups.
* `mcp_call`: MCP `tools/call` of a cheap tool (`SystemApp__get_current_time`) on
  `/mcp/<session>` with the admin token (the SDK's stateless transport answers with an event
  stream that ends with the result).

Each in microseconds (median, p90, p99), after `calls // 10` warm-up requests; `machine`: the
cores and the load average before and after (the machine may be shared).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench.front import TOKEN, Server, _summary

TOOL = "SystemApp__get_current_time"
SESSION = "scenario_tutorial"


def _free_range(size: int) -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        first = min(int(sock.getsockname()[1]), 65535 - size)
    return f"{first}-{first + size - 1}"


def _start(workers: int, state_dir: str) -> tuple[Server, str, tuple[int, str], int]:
    """A server with the adapters; its session's gaia2-cli URL, the shared port's port and
    the session's path there, and its MCP port."""
    extra = ["--gaia2-ports", _free_range(8), "--gaia2-port", "0", "--mcp-port", "0"]
    server = Server(workers, 1, state_dir, extra)
    gaia2 = re.search(r"(http://127\.0\.0\.1:\d+)\s+\(its own port", server.banner)
    shared = re.search(r"http://127\.0\.0\.1:(\d+)(/gaia2/\S+)\s+\(the user's token", server.banner)
    mcp = re.search(r"http://127\.0\.0\.1:(\d+)/mcp/", server.banner)
    assert gaia2 and shared and mcp, server.banner
    return server, gaia2[1], (int(shared[1]), shared[2]), int(mcp[1])


def _timed(calls: int, request: Callable[[], object]) -> dict[str, float]:
    warmup = max(20, calls // 10)
    times = []
    for n in range(warmup + calls):
        started = time.perf_counter_ns()
        request()
        if n >= warmup:
            times.append((time.perf_counter_ns() - started) / 1000)
    return _summary(times)


def _exchange(conn: http.client.HTTPConnection, method: str, path: str, **kw: Any) -> bytes:
    conn.request(method, path, **kw)
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"{method} {path}: {response.status} {body[:300]!r}")
    return body


def _gaia2_round_trips(name: str, port: int, prefix: str, calls: int) -> dict[str, Any]:
    """`GET /status` and `POST /notify` at `prefix` on `port`, over one client connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    notify = json.dumps({"message": "hello"}).encode()
    json_type = {"Content-Type": "application/json"}
    try:
        return {
            f"{name}_status": _timed(calls, lambda: _exchange(conn, "GET", f"{prefix}/status")),
            f"{name}_notify": _timed(
                calls,
                lambda: _exchange(conn, "POST", f"{prefix}/notify", body=notify, headers=json_type),
            ),
        }
    finally:
        conn.close()


def _fresh(port: int, path: str) -> bytes:
    """`GET path` on a connection of its own, as gaia2-cli's commands send each request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        return _exchange(conn, "GET", path)
    finally:
        conn.close()


def measure(workers: int, calls: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="areasync-bench-ports-") as state:
        server, gaia2, (shared_port, path), mcp_port = _start(workers, state)
        try:
            json_type = {"Content-Type": "application/json"}
            out: dict[str, Any] = {}
            ports = {"gaia2": (int(gaia2.rsplit(":", 1)[1]), ""), "shared": (shared_port, path)}
            for name, (port, prefix) in ports.items():
                out.update(_gaia2_round_trips(name, port, prefix, calls))
            out["shared_status_fresh"] = _timed(
                calls, lambda: _fresh(shared_port, f"{path}/status")
            )
            mcp = http.client.HTTPConnection("127.0.0.1", mcp_port, timeout=60)
            headers = {
                "Authorization": f"Bearer {TOKEN}",
                "Accept": "application/json, text/event-stream",
                **json_type,
            }
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": TOOL, "arguments": {}},
            }
            body = json.dumps(call).encode()

            def call_tool() -> None:
                answer = _exchange(mcp, "POST", f"/mcp/{SESSION}", body=body, headers=headers)
                assert b'"isError":false' in answer, answer[:300]

            out["mcp_call"] = _timed(calls, call_tool)
            mcp.close()
            return out
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    before = os.getloadavg()
    result = {
        "workers_0_state_dir": measure(0, args.calls),
        "workers_2": measure(2, args.calls),
        "machine": {
            "cores": os.cpu_count(),
            "load_before": [round(x, 1) for x in before],
            "load_after": [round(x, 1) for x in os.getloadavg()],
        },
    }
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
