"""Load and soak benchmark for `specdec-playable serve`.

Starts the server as a subprocess on a free loopback port and opens N concurrent
sessions (one visitor each, round-robin over the episodes). Every session then moves
its first slider M times, concurrently with the others, pausing like a person would.

Two kinds of visitor:

- ``--client ws`` (default): a browserless client that speaks Bokeh's websocket
  protocol itself, exactly the messages a page's BokehJS sends and receives
  (``_bokeh_client.py``, shared with ``bench_open.py``). It GETs
  the episode page (which creates the server session and carries its token), opens
  the session's websocket, pulls the document, then sends the slider change as a
  PATCH-DOC. Cheap on the client side, so 50 of them measure the *server*, not the
  machine's ability to run 50 browsers.
- ``--client browser``: a Playwright context in Debian's Chromium per visitor, pressing
  the arrow keys on the slider handle. Complete, but on a 2-core machine the browsers
  take the CPU the server needs.

Interaction latency is the time from the slider change leaving the client to the first
recomputed content arriving from the server (browser: a ColumnDataSource's new data;
ws: any change other than the URL query or the slider's own value). Both include Panel's
50 ms server-side event debounce, like the bare-slider floor in PANEL_NOTES.md.

Reports p50/p95 latency, errors (timeouts, protocol errors, console errors, server
errors logged) and the server's RSS (idle, with all sessions open, per session). The
soak then runs one session through many slider moves and reports RSS growth.

Usage::

    python benchmarks/load.py                          # 50 ws sessions x 20 moves, soak 2,000
    python benchmarks/load.py --procs 2 --soak 0       # the same class on two processes
    python benchmarks/load.py --pause 1 3 --sessions 100 --soak 0   # a calmer class, one process
    python benchmarks/load.py --cost-moves 40 --sessions 1 --moves 1 --soak 0   # CPU per move
    python benchmarks/load.py --client browser --sessions 10 --moves 5 --soak 100

The pause between one visitor's moves sets the pace: 0.2-0.6 s (the default) is a class
where every student keeps dragging; 1-3 s is closer to students reading between moves.

Only loopback traffic; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from _bokeh_client import REPLY_TIMEOUT_S, WsVisitor  # noqa: E402
from _local import CHROMIUM_ARGS, cpu_seconds, free_port, pct, rss_mb, start_server  # noqa: E402
from specdec_playable.episodes import EPISODES, ep3  # noqa: E402

PAGES = [f"/{ep.slug}" for ep in EPISODES]


# --- the browser visitor ---------------------------------------------------------------------

# Count server-sent changes to any ColumnDataSource's data (a slider press changes none itself).
HOOK = """() => {
  window.__sdp_n = 0;
  for (const m of Bokeh.documents[0].all_models) {
    if (m.type === 'ColumnDataSource') m.connect(m.properties.data.change, () => window.__sdp_n++);
  }
}"""


class BrowserVisitor:
    """One visitor as a Playwright context in Chromium, pressing arrow keys on the slider."""

    def __init__(self, browser, base: str, path: str):
        self.browser, self.url, self.path = browser, base + path, path
        self.latencies: list[float] = []
        self.errors: list[str] = []

    async def open(self) -> None:
        self.ctx = await self.browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = await self.ctx.new_page()
        self.page.on("console", lambda m: self.errors.append(f"console: {m.text}")
                     if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        await self.page.goto(self.url)
        await self.page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0",
                                          timeout=60_000)
        self.handle = self.page.locator(".noUi-handle").first
        await self.handle.wait_for(timeout=60_000)
        await self.page.evaluate(HOOK)

    async def move(self, i: int) -> None:
        n0 = await self.page.evaluate("() => window.__sdp_n")
        await self.handle.focus()
        t0 = time.perf_counter()
        await self.handle.press("ArrowLeft" if i % 2 == 0 else "ArrowRight")
        try:
            await self.page.wait_for_function("n => window.__sdp_n > n", arg=n0,
                                              timeout=REPLY_TIMEOUT_S * 1000, polling="raf")
            self.latencies.append((time.perf_counter() - t0) * 1000)
        except Exception as exc:  # noqa: BLE001 - a benchmark reports, it does not crash
            self.errors.append(f"no reply on {self.url}: {type(exc).__name__}")

    async def close(self) -> None:
        await self.ctx.close()


# --- the run -----------------------------------------------------------------------------------


async def per_episode_cost(visitor, pid: int, moves: int) -> None:
    """One visitor at a time on each episode: server CPU per slider move, and its latency."""
    print(f"## Server CPU per slider move: one visitor at a time, {moves} moves per episode\n")
    print("| page | server CPU per move | p50 ms | p95 ms | errors |")
    print("|---|---|---|---|---|")
    for path in PAGES:
        v = visitor(path)
        await v.open()
        for i in range(5):  # warm up
            await v.move(i)
            await asyncio.sleep(0.15)
        v.latencies.clear()
        cpu0 = cpu_seconds(pid)
        for i in range(moves):
            await v.move(i)
            await asyncio.sleep(0.15)
        per_move = (cpu_seconds(pid) - cpu0) / moves * 1000
        await v.close()
        print(f"| {path} | {per_move:.1f} ms | {pct(v.latencies, 50):.0f} | {pct(v.latencies, 95):.0f} "
              f"| {len(v.errors)} |")
    print()


async def run(args) -> int:
    ports = [free_port() for _ in range(args.procs)]
    logs = [Path(os.environ.get("TMPDIR", "/tmp")) / f"specdec-load-{port}.log" for port in ports]
    procs = [start_server(port, log) for port, log in zip(ports, logs)]
    bases = [f"http://127.0.0.1:{port}" for port in ports]

    def rss() -> float:
        return sum(rss_mb(p.pid) for p in procs)

    def cpu() -> float:
        return sum(cpu_seconds(p.pid) for p in procs)

    rng = random.Random(1)
    pw = browser = None
    try:
        if args.client == "browser":
            from playwright.async_api import async_playwright

            pw = await async_playwright().start()
            browser = await pw.chromium.launch(executable_path=shutil.which("chromium"),
                                               args=CHROMIUM_ARGS)

        def visitor(path: str, i: int = 0):
            # Several processes: each visitor sticks to one, as a proxy's sticky sessions do.
            base = bases[i % len(bases)]
            return WsVisitor(base, path) if browser is None else BrowserVisitor(browser, base, path)

        idle = rss()
        visitors = [visitor(PAGES[i % len(PAGES)], i) for i in range(args.sessions)]
        t0 = time.perf_counter()
        for i in range(0, len(visitors), 5):  # arrive five at a time
            await asyncio.gather(*(v.open() for v in visitors[i:i + 5]))
        open_s = time.perf_counter() - t0
        await asyncio.sleep(1.0)
        with_sessions = rss()

        async def play(v):
            await asyncio.sleep(rng.uniform(0, 1.0))
            for i in range(args.moves):
                await v.move(i)
                await asyncio.sleep(rng.uniform(args.pause[0], args.pause[1]))

        cpu0, t1 = cpu(), time.perf_counter()
        await asyncio.gather(*(play(v) for v in visitors))
        play_s, cpu_s = time.perf_counter() - t1, cpu() - cpu0
        after = rss()
        lat = [x for v in visitors for x in v.latencies]
        errors = [e for v in visitors for e in v.errors]
        for v in visitors:
            await v.close()
        per = (with_sessions - idle) / args.sessions
        load = os.getloadavg()[0]
        print(f"## Load: {args.sessions} concurrent {args.client} sessions x {args.moves} slider moves, "
              f"{args.procs} server process{'es' if args.procs > 1 else ''} "
              f"(round-robin over {len(PAGES)} episodes, pause {args.pause[0]}-{args.pause[1]} s "
              f"between moves, {play_s:.0f} s of play)\n")
        print("| client | processes | sessions | moves timed | moves/s | server CPU | errors | p50 ms | "
              "p95 ms | max ms | RSS idle MB | RSS all open MB | MB per session | RSS after play MB |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        print(f"| {args.client} | {args.procs} | {args.sessions} | {len(lat)} | {len(lat) / play_s:.0f} | "
              f"{100 * cpu_s / play_s:.0f}% of a core | {len(errors)} | {pct(lat, 50):.0f} | "
              f"{pct(lat, 95):.0f} | {max(lat) if lat else float('nan'):.0f} | {idle:.0f} | "
              f"{with_sessions:.0f} | {per:.2f} | {after:.0f} |")
        print(f"\nsessions opened in {open_s:.1f} s; load average {load:.1f} at the end of play")
        if errors:
            print("errors, first few:", *errors[:5], sep="\n  ")
        met = (args.sessions >= 50 and not errors and pct(lat, 95) <= 250 and per <= 5)
        print(f"target (50 sessions, 0 errors, p95 <= 250 ms, <= 5 MB per session): "
              f"{'MET' if met else 'NOT MET'}")

        if args.soak:
            v = visitor("/" + ep3.EPISODE.slug)
            await v.open()
            for i in range(20):
                await v.move(i)
            v.latencies.clear()
            start = rss()
            t2 = time.perf_counter()
            for i in range(args.soak):
                await v.move(i)
                # Longer than Panel's 50 ms debounce, which would merge two quick moves into one.
                await asyncio.sleep(0.1)
                if time.perf_counter() - t2 > 1200:
                    v.errors.append("soak stopped at its 20-minute bound")
                    break
            end = rss()
            await v.close()
            print(f"\n## Soak: one {args.client} session, {len(v.latencies)} slider moves on "
                  f"Episode 3 ({time.perf_counter() - t2:.0f} s)\n")
            print("| moves | errors | RSS start MB | RSS end MB | growth MB | p50 ms | p95 ms |")
            print("|---|---|---|---|---|---|---|")
            print(f"| {len(v.latencies)} | {len(v.errors)} | {start:.1f} | {end:.1f} | "
                  f"{end - start:+.1f} | {pct(v.latencies, 50):.0f} | {pct(v.latencies, 95):.0f} |")
            if v.errors:
                print("errors, first few:", *v.errors[:5], sep="\n  ")
            print(f"target (RSS growth <= 5 MB, no error): "
                  f"{'MET' if not v.errors and end - start <= 5 else 'NOT MET'}")
        if args.cost_moves:  # last, so its sessions do not count in the memory figures above
            print()
            await per_episode_cost(visitor, procs[0].pid, args.cost_moves)
        logged = [ln for log in logs for ln in log.read_text().splitlines()
                  if " ERROR " in ln or "Traceback" in ln]
        print(f"\nserver errors logged: {len(logged)}")
        for ln in logged[:5]:
            print("  ", ln[:200])
    finally:
        if browser is not None:
            await browser.close()
        if pw is not None:
            await pw.stop()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--client", choices=("ws", "browser"), default="ws")
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--procs", type=int, default=1,
                    help="server processes; visitors are spread over them round-robin and stay")
    ap.add_argument("--moves", type=int, default=20)
    ap.add_argument("--pause", type=float, nargs=2, default=(0.2, 0.6), metavar=("MIN", "MAX"),
                    help="seconds a visitor waits between moves (uniform), default 0.2 0.6")
    ap.add_argument("--soak", type=int, default=2000, help="slider moves in the soak (0 to skip)")
    ap.add_argument("--cost-moves", type=int, default=0,
                    help="then measure server CPU per move on each episode with this many moves")
    args = ap.parse_args()
    if not (1 <= args.sessions <= 200 and 1 <= args.procs <= 8 and 0 <= args.cost_moves <= 500 and 1 <= args.moves <= 200 and 0 <= args.soak <= 5000
            and 0 <= args.pause[0] <= args.pause[1] <= 60):
        ap.error("sessions in [1, 200], procs in [1, 8], cost-moves in [0, 500], moves in [1, 200], soak in [0, 5000], 0 <= pause MIN <= MAX <= 60")
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
