"""Load and soak benchmark for `specdec-playable serve`, driven by real browser sessions.

Starts the server as a subprocess on a free loopback port and opens N concurrent
sessions as separate Playwright contexts in Debian's Chromium (one visitor each,
round-robin over the episodes). Every session then moves its first slider with the
keyboard M times, concurrently with the others, pausing like a person would.
Interaction latency is the time from the key press to the page's Bokeh data
changing after the server recomputed (it includes Panel's 50 ms event debounce and
the websocket round trip, like the bare-slider floor in PANEL_NOTES.md).

Reports p50/p95 latency, errors (timeouts, console errors, server errors logged) and
the server's RSS (idle, with all sessions open, per session). The soak then runs
one session through many slider moves and reports RSS growth.

Usage::

    python benchmarks/load.py                       # 50 sessions x 20 moves, soak 2,000 moves
    python benchmarks/load.py --sessions 10 --moves 5 --soak 100

Only loopback traffic; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["/ep1_writing_vs_checking", "/ep2_the_relay", "/ep3_the_quality_dial",
         "/ep4_boilerplate_vs_poetry", "/ep5_the_break_even_map"]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPLY_TIMEOUT_MS = 30_000

# Count server-sent changes to any ColumnDataSource's data (a slider press changes none itself).
HOOK = """() => {
  window.__sdp_n = 0;
  for (const m of Bokeh.documents[0].all_models) {
    if (m.type === 'ColumnDataSource') m.connect(m.properties.data.change, () => window.__sdp_n++);
  }
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def start_server(port: int, log_path: Path) -> subprocess.Popen:
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "specdec_playable", "serve", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/liveness", timeout=2)
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Visitor:
    def __init__(self, browser, url: str):
        self.browser, self.url = browser, url
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
                                              timeout=REPLY_TIMEOUT_MS, polling="raf")
            self.latencies.append((time.perf_counter() - t0) * 1000)
        except Exception as exc:  # noqa: BLE001 - a benchmark reports, it does not crash
            self.errors.append(f"no reply on {self.url}: {type(exc).__name__}")

    async def close(self) -> None:
        await self.ctx.close()


async def run(args) -> int:
    port = free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"specdec-load-{port}.log"
    proc = start_server(port, log)
    base = f"http://127.0.0.1:{port}"
    rng = random.Random(1)
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=shutil.which("chromium"),
                                               args=CHROMIUM_ARGS)
            idle = rss_mb(proc.pid)
            visitors = [Visitor(browser, base + PAGES[i % len(PAGES)]) for i in range(args.sessions)]
            t0 = time.perf_counter()
            for i in range(0, len(visitors), 5):  # arrive five at a time
                await asyncio.gather(*(v.open() for v in visitors[i:i + 5]))
            open_s = time.perf_counter() - t0
            await asyncio.sleep(1.0)
            with_sessions = rss_mb(proc.pid)

            async def play(v: Visitor):
                await asyncio.sleep(rng.uniform(0, 1.0))
                for i in range(args.moves):
                    await v.move(i)
                    await asyncio.sleep(rng.uniform(0.2, 0.6))  # a person pauses between moves

            t1 = time.perf_counter()
            await asyncio.gather(*(play(v) for v in visitors))
            play_s = time.perf_counter() - t1
            after = rss_mb(proc.pid)
            lat = [x for v in visitors for x in v.latencies]
            errors = [e for v in visitors for e in v.errors]
            for v in visitors:
                await v.close()
            per = (with_sessions - idle) / args.sessions
            print(f"## Load: {args.sessions} concurrent browser sessions x {args.moves} slider moves "
                  f"(round-robin over {len(PAGES)} episodes, {play_s:.0f} s of play)\n")
            print("| sessions | moves timed | errors | p50 ms | p95 ms | max ms | RSS idle MB | "
                  "RSS all open MB | MB per session | RSS after play MB |")
            print("|---|---|---|---|---|---|---|---|---|---|")
            print(f"| {args.sessions} | {len(lat)} | {len(errors)} | {pct(lat, 50):.0f} | {pct(lat, 95):.0f} | "
                  f"{max(lat) if lat else float('nan'):.0f} | {idle:.0f} | {with_sessions:.0f} | "
                  f"{per:.2f} | {after:.0f} |")
            print(f"\nsessions opened in {open_s:.1f} s")
            if errors:
                print("errors, first few:", *errors[:5], sep="\n  ")
            met = (args.sessions >= 50 and not errors and pct(lat, 95) <= 250 and per <= 5)
            print(f"target (50 sessions, 0 errors, p95 <= 250 ms, <= 5 MB per session): "
                  f"{'MET' if met else 'NOT MET'}")

            if args.soak:
                v = Visitor(browser, base + "/ep3_the_quality_dial")
                await v.open()
                for i in range(20):
                    await v.move(i)
                v.latencies.clear()
                start = rss_mb(proc.pid)
                t2 = time.perf_counter()
                for i in range(args.soak):
                    await v.move(i)
                    if time.perf_counter() - t2 > 1200:
                        v.errors.append("soak stopped at its 20-minute bound")
                        break
                end = rss_mb(proc.pid)
                await v.close()
                print(f"\n## Soak: one session, {len(v.latencies)} slider moves on Episode 3 "
                      f"({time.perf_counter() - t2:.0f} s)\n")
                print("| moves | errors | RSS start MB | RSS end MB | growth MB | p50 ms | p95 ms |")
                print("|---|---|---|---|---|---|---|")
                print(f"| {len(v.latencies)} | {len(v.errors)} | {start:.1f} | {end:.1f} | "
                      f"{end - start:+.1f} | {pct(v.latencies, 50):.0f} | {pct(v.latencies, 95):.0f} |")
                print(f"target (RSS growth <= 5 MB, no error): "
                      f"{'MET' if not v.errors and end - start <= 5 else 'NOT MET'}")
            await browser.close()
        logged = [ln for ln in log.read_text().splitlines() if " ERROR " in ln or "Traceback" in ln]
        print(f"\nserver errors logged: {len(logged)}")
        for ln in logged[:5]:
            print("  ", ln[:200])
    finally:
        proc.terminate()
        proc.wait(10)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--moves", type=int, default=20)
    ap.add_argument("--soak", type=int, default=2000, help="slider moves in the soak (0 to skip)")
    args = ap.parse_args()
    if not (1 <= args.sessions <= 100 and 1 <= args.moves <= 200 and 0 <= args.soak <= 5000):
        ap.error("sessions in [1, 100], moves in [1, 200], soak in [0, 5000]")
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
