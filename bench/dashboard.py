"""Dashboard benchmark: N events (20,000) rendered in the real page, and clicks with them on it.

    python bench/dashboard.py [--events 20000] [--repeats 5]     # prints JSON; ~15 s
    python bench/dashboard.py --no-batch              # one WebSocket message per frame
    python bench/dashboard.py --main-thread-socket    # the page's socket without its worker

Runs the areasync service in a subprocess with one session, the synthetic scenario of N ENV
events (`bench.synthetic`) in manual mode, and drives Debian's chromium with Playwright:

- `live`: the page is attached when a controller jumps the clock past the last event, so the N
  events arrive over the socket as one burst: time from the jump to all N rows rendered; the
  gaps between animation frames meanwhile (what a user scrolling would feel), the page's long
  tasks (main thread busy > 50 ms), and the dashboard's own longest units of work (one socket
  batch, one rendered frame) to tell its cost from the browser's (GC, IPC);
- `replay`: a fresh page opens the session after the fact: from navigation start to all N rows
  rendered (hello since=0: the server replays the whole stream);
- `bare_websocket`: the same replay read by a bare WebSocket in the same browser (parse and
  count, no UI), with the same `batch` choice: the floor the `replay` figure compares against;
- `feed`: the page's own ingest (`__areasync.feed`) with N JSON text frames and no socket: parse,
  dedupe, store and render;
- `clicks`, with the N events on the page (median and max of `--repeats`), each from the input
  event's timestamp to the DOM showing its effect (painted in the following frame): pause and
  resume (a round trip to the server), hiding and showing a type (re-filters all N rows),
  opening a row's detail;
  `scroll_to_top` from setting scrollTop to the frame showing the first row;
- `dom_rows`: row elements in the DOM (virtualised: a screenful, not N), and the JS heap.

The service runs with its default slow-consumer bound: a burst of 20,000 events is a backlog the
page reads through on its socket, not lag (see `areasync/service/fanout/hub.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (`python bench/dashboard.py`)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "bench-dashboard-token"
SESSION = "areasync_bench_synthetic"
VIEWPORT = {"width": 1360, "height": 820}

# In-page helpers: a frame-gap recorder, and `arm(predicate)`, which resolves with the time from
# the next input event (click/change) to the moment the DOM shows its effect (`predicate`).
PAGE_HELPERS = """
(() => {
  const bench = (window.__bench = { inputAt: 0, frames: [], recording: false });
  for (const type of ["click", "change"]) {
    document.addEventListener(type, (ev) => { bench.inputAt = ev.timeStamp; }, true);
  }
  bench.longTasks = [];
  new PerformanceObserver((list) => {
    if (bench.recording) for (const e of list.getEntries()) bench.longTasks.push(e.duration);
  }).observe({ type: "longtask", buffered: true });
  bench.record = () => {
    bench.frames = []; bench.longTasks = []; bench.recording = true;
    let last = performance.now();
    const loop = (t) => {
      bench.frames.push(t - last);
      last = t;
      if (bench.recording) requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  };
  bench.stop = () => {
    bench.recording = false;
    return { frames: bench.frames, longTasks: bench.longTasks };
  };
  // Checked on every DOM mutation (the app updates the DOM inside its animation frame, and the
  // paint follows in that frame) and on every frame (for effects that mutate nothing).
  bench.arm = (predicate) => {
    bench.inputAt = 0;
    const test = new Function(`return (${predicate});`);
    bench.done = new Promise((resolve) => {
      let finished = false;
      const finish = () => {
        if (finished || !bench.inputAt || !test()) return;
        finished = true;
        observer.disconnect();
        resolve(performance.now() - bench.inputAt);
      };
      const observer = new MutationObserver(finish);
      const all = { subtree: true, childList: true, attributes: true, characterData: true };
      observer.observe(document.body, all);
      const check = () => { finish(); if (!finished) requestAnimationFrame(check); };
      requestAnimationFrame(check);
    });
  };
  // Resolves with performance.now() at the first frame where `predicate` holds.
  bench.when = (predicate) => new Promise((resolve) => {
    const test = new Function(`return (${predicate});`);
    const check = () => (test() ? resolve(performance.now()) : requestAnimationFrame(check));
    check();
  });
})();
"""

# The dashboard's own longest units of work: one socket batch (parse + dedupe + queue) and one
# animation frame (apply the queue + render), to attribute long tasks to the page or not.
PAGE_WORK = """({
  longest_batch_ms: Math.round(window.__areasync.conn.stats.maxBatchMs * 10) / 10,
  longest_render_ms: Math.round(window.__areasync.debug.maxFrameMs * 10) / 10,
})"""
STATE_IS = "document.getElementById('state').dataset.state === '{}'"
ROWS_SHOWN = "document.querySelectorAll('.row:not([hidden])').length"
DETAIL_OPEN = (
    "!document.getElementById('detail').hidden && !!document.querySelector('{row}.selected')"
)


# -- the service, in its own process --------------------------------------------------------


def serve(port: int, n_events: int) -> None:
    """`--serve`: run the service with the synthetic session until SIGINT/SIGTERM."""
    import anyio

    from areasync.protocol.frames import Mode
    from areasync.service import Service, ServiceConfig
    from bench.synthetic import synthetic_scenario

    async def main() -> None:
        config = ServiceConfig(
            port=port,
            admin_token=TOKEN,
            mode=Mode.MANUAL,
            trace_dir=None,
        )
        async with Service(config, [synthetic_scenario(n_events)]) as service:
            print(service.dashboard_url(), flush=True)
            async with anyio.create_task_group() as tg:
                tg.start_soon(orphaned, tg.cancel_scope)
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        break
                tg.cancel_scope.cancel()

    async def orphaned(scope: anyio.CancelScope) -> None:
        # A bench killed outright (timeout, ^C twice) cannot stop us: leave when it is gone.
        parent = os.getppid()
        while os.getppid() == parent:  # noqa: ASYNC110 - no event tells of a parent's death
            await anyio.sleep(1)
        scope.cancel()

    anyio.run(main)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def service(n_events: int) -> Iterator[str]:
    """Start the service subprocess; yields its base URL."""
    port = free_port()
    script = str(Path(__file__).resolve())
    command = [sys.executable, script, "--serve", str(port), "--events", str(n_events)]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/health", timeout=1):
                        break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        err = log.read().decode(errors="replace")
                        raise RuntimeError(f"the bench service did not start:\n{err}") from None
                    time.sleep(0.1)
            yield base
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# -- a controller of our own ----------------------------------------------------------------


@contextlib.asynccontextmanager
async def controller(base: str) -> AsyncIterator[Any]:
    import websockets

    url = base.replace("http://", "ws://") + f"/sessions/{SESSION}"
    async with websockets.connect(url, max_size=None) as ws:
        hello = {"type": "hello", "id": 1, "role": "controller", "token": TOKEN}
        await ws.send(json.dumps(hello))
        welcome = json.loads(await ws.recv())
        assert welcome["type"] == "welcome", welcome
        yield ws


async def request(ws: Any, frame: dict[str, Any], request_id: int) -> Any:
    """Send `frame` and skip stream items until its reply."""
    await ws.send(json.dumps({**frame, "id": request_id}))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == request_id and reply["type"] in ("result", "error"):
            if reply["type"] == "error":
                raise RuntimeError(reply)
            return reply.get("value")


# -- measurements ---------------------------------------------------------------------------


def progress(step: str) -> None:
    print(f"[dashboard bench] {step}", file=sys.stderr, flush=True)


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(samples), 1),
        "max_ms": round(max(samples), 1),
    }


def frame_stats(recorded: dict[str, list[float]]) -> dict[str, Any]:
    """Gaps between animation frames, and the page's long tasks (main thread busy > 50 ms)."""
    gaps, long_tasks = recorded["frames"], recorded["longTasks"]
    return {
        "frames": len(gaps),
        "max_frame_gap_ms": round(max(gaps, default=0.0), 1),
        "frame_gaps_over_50ms": sum(1 for g in gaps if g > 50),
        "long_tasks": len(long_tasks),
        "longest_task_ms": round(max(long_tasks, default=0.0), 1),
    }


async def click_latency(page: Any, selector: str, predicate: str) -> float:
    await page.evaluate("(p) => window.__bench.arm(p)", predicate)
    await page.click(selector)
    latency = await page.evaluate(
        "Promise.race([window.__bench.done, new Promise((r) => setTimeout(() => r(null), 30000))])"
    )
    if latency is None:
        raise RuntimeError(f"clicking {selector} never led to: {predicate}")
    return float(latency)


async def open_page(browser: Any, url: str) -> Any:
    # bypass_csp: the bench's probes use wait_for_function, which evaluates its predicate with
    # `new Function`, refused by the dashboard's policy (tests/service/dashboard checks the policy).
    page = await browser.new_page(viewport=VIEWPORT, bypass_csp=True)
    await page.add_init_script(PAGE_HELPERS)
    await page.goto(url)
    await page.wait_for_function("document.getElementById('conn').dataset.state === 'live'")
    return page


async def measure_live(browser: Any, base: str, url: str, n: int) -> tuple[Any, dict[str, Any]]:
    page = await open_page(browser, url)
    async with controller(base) as ws:
        last_offset = (n - 1) - (n - 1) // 5  # bench.synthetic.event_offset(n - 1)
        await page.evaluate("window.__bench.record()")
        started = time.perf_counter()
        await request(ws, {"type": "jump", "to": float(last_offset)}, 2)
        server_done = time.perf_counter()
        await page.wait_for_function(f"window.__areasync.store.events >= {n}", timeout=180_000)
        await page.evaluate("window.__areasync.settled()")
        rendered = time.perf_counter()
        recorded = await page.evaluate("window.__bench.stop()")
        work = await page.evaluate(PAGE_WORK)
    return page, {
        "server_jump_ms": round((server_done - started) * 1000, 1),
        "jump_to_all_rendered_ms": round((rendered - started) * 1000, 1),
        "after_server_done_ms": round((rendered - server_done) * 1000, 1),
        **frame_stats(recorded),
        **work,
    }


async def measure_replay(browser: Any, url: str, n: int) -> dict[str, Any]:
    page = await browser.new_page(viewport=VIEWPORT, bypass_csp=True)
    await page.add_init_script(PAGE_HELPERS)
    await page.add_init_script("window.__bench.record()")
    await page.goto(url)
    done = await page.evaluate(
        f"window.__bench.when(`window.__areasync && window.__areasync.store.events >= {n}`)"
    )
    await page.evaluate("window.__areasync.settled()")
    recorded = await page.evaluate("window.__bench.stop()")
    work = await page.evaluate(PAGE_WORK)
    await page.close()
    return {
        "navigation_to_all_rendered_ms": round(float(done), 1),
        **frame_stats(recorded),
        **work,
    }


SOCKET_FLOOR_SCRIPT = """
async ([url, token, n, batch]) => new Promise((resolve, reject) => {
  const t0 = performance.now();
  const ws = new WebSocket(url);
  let events = 0;
  const hello = {type: "hello", id: 1, role: "observer", token, since: 0};
  if (batch) hello.batch = true;
  ws.onopen = () => ws.send(JSON.stringify(hello));
  ws.onmessage = (msg) => {
    const frame = JSON.parse(msg.data);
    for (const f of frame.type === "batch" ? frame.frames : [frame]) {
      if (f.type === "event" && ++events >= n) {
        resolve(performance.now() - t0);
        ws.close();
      }
    }
  };
  ws.onerror = () => reject(new Error("websocket error"));
})
"""


async def measure_socket_floor(browser: Any, base: str, n: int, batch: bool) -> dict[str, Any]:
    """The same replay read by a bare WebSocket in the browser: parse each frame, count, no UI."""
    page = await browser.new_page(bypass_csp=True)
    await page.goto(f"{base}/health")
    ws_url = base.replace("http://", "ws://") + f"/sessions/{SESSION}"
    elapsed = await page.evaluate(SOCKET_FLOOR_SCRIPT, [ws_url, TOKEN, n, batch])
    await page.close()
    return {"replay_all_received_ms": round(float(elapsed), 1)}


FEED_SCRIPT = """
async (n) => {
  const frames = [];
  for (let seq = 1; seq <= n; seq += 1) {
    frames.push(JSON.stringify({type: "event", seq, event: {event_id: `ENV-BenchApp.bump-${seq}`,
      event_type: "ENV", time: seq - Math.floor((seq - 1) / 5), app: "BenchApp", function: "bump",
      args: {amount: 1}, return_value: seq, exception: null}}));
  }
  const clock = {state: "running", time: 0, tick: 0, mode: "manual", speed: 1, start_time: 0};
  window.__areasync.feed([{type: "welcome", session_id: "feed", role: "observer", epoch: "e",
    seq: 0, scenario_id: "feed", clock, replay: "full"}]);
  const t0 = performance.now();
  window.__areasync.feed(frames);
  const fed = performance.now();
  await window.__areasync.settled();
  return {feed_ms: fed - t0, feed_to_rendered_ms: performance.now() - t0};
}
"""


async def measure_feed(browser: Any, base: str, n: int) -> dict[str, Any]:
    page = await browser.new_page(viewport=VIEWPORT, bypass_csp=True)
    await page.goto(f"{base}/?token={TOKEN}&offline&session=feed")
    await page.wait_for_function("window.__areasync")
    result = await page.evaluate(FEED_SCRIPT, n)
    await page.close()
    return {key: round(float(value), 1) for key, value in result.items()}


MIDDLE_ROW_SEQ = """(offset) => {
  const a = window.__areasync, vp = document.getElementById('viewport');
  const i = Math.floor((vp.scrollTop + vp.clientHeight / 2) / a.timeline.rowHeight) - offset;
  return a.store.rowAtVisible(i).seq;
}"""


async def measure_clicks(page: Any, n: int, repeats: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {
        "pause": [],
        "resume": [],
        "hide_type": [],
        "show_type": [],
        "open_row_detail": [],
    }
    chip = '.chip[data-type="ENV"]'
    for i in range(repeats):
        samples["pause"].append(await click_latency(page, "#btn-toggle", STATE_IS.format("paused")))
        samples["resume"].append(
            # the session is on a manual clock: resumed, the page calls it "manual", not "running"
            await click_latency(page, "#btn-toggle", STATE_IS.format("manual"))
        )
        hidden = f"window.__areasync.store.visible.length === 0 && {ROWS_SHOWN} === 0"
        samples["hide_type"].append(await click_latency(page, chip, hidden))
        shown = f"window.__areasync.store.visible.length === {n} && {ROWS_SHOWN} > 0"
        samples["show_type"].append(await click_latency(page, chip, shown))
        # A row in the middle of the viewport (rows are recycled: select it by its seq).
        seq = await page.evaluate(MIDDLE_ROW_SEQ, i)
        row = f'.row[data-seq="{seq}"]'
        opened = DETAIL_OPEN.format(row=row)
        samples["open_row_detail"].append(await click_latency(page, row, opened))
        await page.click("#detail-close")
    scroll = await page.evaluate(
        """async () => {
          const vp = document.getElementById('viewport');
          const t0 = performance.now();
          vp.scrollTop = 0;
          const first = window.__areasync.store.rowAtVisible(0).seq;  // seq 1 is a clock item
          const shown = `document.querySelector('.row[data-seq="${first}"]:not([hidden])')`;
          const t1 = await window.__bench.when(shown);
          return t1 - t0;
        }"""
    )
    result: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    result["scroll_to_top"] = {"ms": round(float(scroll), 1)}
    return result


async def run(n: int, repeats: int, *, worker: bool = True, batch: bool = True) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    with service(n) as base:
        url = f"{base}/?token={TOKEN}&session={SESSION}"
        url += ("" if worker else "&worker=0") + ("" if batch else "&batch=0")
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            progress(f"live: {n} events over the socket")
            page, live = await measure_live(browser, base, url, n)
            progress("clicks")
            clicks = await measure_clicks(page, n, repeats)
            dom_rows = await page.evaluate("document.querySelectorAll('.row').length")
            heap = await page.evaluate("performance.memory ? performance.memory.usedJSHeapSize : 0")
            await page.close()
            progress("replay")
            replay = await measure_replay(browser, url, n)
            progress("bare WebSocket floor")
            floor = await measure_socket_floor(browser, base, n, batch)
            progress("feed")
            feed = await measure_feed(browser, base, n)
            version = browser.version
            await browser.close()
    return {
        "benchmark": "dashboard",
        "events": n,
        "repeats": repeats,
        "socket": "worker" if worker else "main thread",
        "batch": batch,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "chromium": version,
        },
        "live": live,
        "replay": replay,
        "bare_websocket": floor,
        "feed": feed,
        "clicks": clicks,
        "dom_rows": dom_rows,
        "js_heap_mb": round(heap / 2**20, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--no-batch",
        action="store_true",
        help="do not ask the server for `batch` messages (?batch=0): one message per frame",
    )
    parser.add_argument(
        "--main-thread-socket",
        action="store_true",
        help="read the WebSocket on the page's main thread (?worker=0), for comparison",
    )
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.events)
        return 0
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: run `make browser` first", file=sys.stderr)
        return 2
    worker, batch = not args.main_thread_socket, not args.no_batch
    result = asyncio.run(run(args.events, args.repeats, worker=worker, batch=batch))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
