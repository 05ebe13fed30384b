"""Does another visitor's Episode 3 slider stay responsive while Episode 7 generates?

Serves Episode 3 and Episode 7 from one Panel server process (as the site does), then drives
two Chromium pages with Playwright:

- visitor A moves Episode 3's first slider one step at a time (ArrowRight / ArrowLeft) and
  times, in the page, from the keydown to the first server change in the browser (*data*) and
  to the last canvas pixel change (*pixels*), with the probe of ``bench_ep3_latency.py``;
- visitor B, in *busy* blocks, keeps a live Episode 7 run going: a typed prompt (never shared,
  so it always runs), the untrained early-exit draft (the slowest), k = 4, 128 new tokens; when
  a run ends, B presses Run again before A's next step. In *idle* blocks B's page is closed.

With ``--visitor browser`` (the default) B is a second Chromium page, so its session polls its
run and its page repaints as tokens arrive, as a real visitor's would; but B's browser then
also runs on this 2-core machine, beside A's browser and the server, which a real class's
browsers do not. With ``--visitor server`` the server process itself keeps the same runs going
on its shared worker queue while a flag file exists (no B page, no polling): the cost of the
generation alone (a worker thread's core and its share of the interpreter lock). With
``--visitor process`` a separate Python process makes the same runs (one BLAS thread, niceness
10, as the server's workers): the core it takes, without the server's interpreter lock; the
difference from ``server`` is what sharing the lock costs.

Blocks alternate idle and busy, so load drift from other work on the machine hits both alike.
The model is loaded and one run made before the first block. Prints a markdown table (median and
p95 in ms) and the ratio busy / idle of the pixel p95 and median, against the target: at most
1.5x. This measures; it asserts nothing.

Run: ``python benchmarks/bench_ep7_latency.py [--samples 40] [--warmup 3] [--blocks 2]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from _local import CHROMIUM_ARGS, free_port, wait_live
from bench_ep3_latency import ep3_app, measure, print_table

TARGET = 1.5
EP7 = "ep7_real_models_real_text"
BUSY_QUERY = "task=custom&draft=early-exit&k=4&max_new=128"
BUSY_PROMPT = "Write a long story about a lighthouse keeper and a cat, with many details."


def ep7_app():
    from specdec_playable.episodes import ep7
    from specdec_playable.kit.page import safe_page

    return safe_page(ep7.page)


def keep_generating(flag: str) -> None:
    """In the server process: while ``flag`` exists, keep one Episode 7 run on the shared queue."""
    import threading

    from specdec_playable.runtime import jobs
    from specdec_playable.runtime.workers import generation_work as run_job
    from specdec_playable.episodes.ep7.state import JOB_BUDGET_S, Settings

    settings = Settings(task="custom", prompt=BUSY_PROMPT, draft="early-exit", k=4, max_new=128,
                        temperature=0.0, seed=0)

    def loop():
        while True:
            if not os.path.exists(flag):
                time.sleep(0.1)
                continue
            handle = jobs.shared_queue().submit(run_job(settings), budget_s=JOB_BUDGET_S)
            while not handle.job.wait(0.1):
                if not os.path.exists(flag):
                    handle.cancel()

    threading.Thread(target=loop, daemon=True, name="bench-generator").start()


def generate_in_process(flag: str) -> None:
    """A separate process: while ``flag`` exists, make the same runs as ``keep_generating``."""
    from specdec_playable.runtime import jobs

    q = jobs.JobQueue(workers=1, nice=jobs.WORKER_NICE)
    from specdec_playable import lm
    from specdec_playable.runtime.workers import generation_work as run_job
    from specdec_playable.episodes.ep7.state import JOB_BUDGET_S, Settings

    lm.get_model()  # loaded before the first busy block
    settings = Settings(task="custom", prompt=BUSY_PROMPT, draft="early-exit", k=4, max_new=128,
                        temperature=0.0, seed=0)
    while True:
        if not os.path.exists(flag):
            time.sleep(0.1)
            continue
        handle = q.submit(run_job(settings), budget_s=JOB_BUDGET_S)
        while not handle.job.wait(0.1):
            if not os.path.exists(flag):
                handle.cancel()


def serve(port: int, flag: str | None = None) -> None:
    import panel as pn

    if flag:
        keep_generating(flag)
    pn.serve({"ep3": ep3_app, EP7: ep7_app}, port=port, address="127.0.0.1",
             websocket_origin=[f"127.0.0.1:{port}"], show=False, liveness=True,
             admin=False, autoreload=False)


# --- visitor B: a live generation -------------------------------------------------------------


def _running(page) -> bool:
    """True while B's run is queued or running (its Cancel button is shown)."""
    return page.get_by_role("button", name="Cancel").is_visible()


def start_run(page) -> None:
    page.get_by_role("button", name="Run").click()
    page.wait_for_function("""() => { const f = r => { for (const b of r.querySelectorAll('button'))
        if (b.textContent.trim() === 'Cancel' && b.offsetParent !== null) return true;
        for (const el of r.querySelectorAll('*')) if (el.shadowRoot && f(el.shadowRoot)) return true;
        return false; }; return f(document); }""", timeout=10_000)


def open_generator(browser, url: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/{EP7}?{BUSY_QUERY}")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=30_000)
    page.locator("textarea").wait_for(timeout=30_000)
    page.locator("textarea").fill(BUSY_PROMPT)
    page.wait_for_timeout(300)
    return page


def warm_model(browser, url: str) -> float:
    """Load the model in the server and make one short run; return the seconds it took."""
    t = time.monotonic()
    page = browser.new_page()
    page.goto(f"{url}/{EP7}?task=table&max_new=4")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=30_000)
    page.get_by_role("button", name="Run").click()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        page.wait_for_timeout(500)
        if page.get_by_role("button", name="Run").is_enabled() and not _running(page):
            break
    page.close()
    return time.monotonic() - t


# --- visitor A: Episode 3's slider ------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=40, help="slider steps per condition")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=2, help="idle/busy pairs of blocks")
    ap.add_argument("--visitor", choices=("browser", "server", "process"), default="browser",
                    help="who keeps the generation going (see the module's docstring)")
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    ap.add_argument("--flag", help=argparse.SUPPRESS)
    ap.add_argument("--generate", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.generate:
        generate_in_process(args.generate)
        return 0
    if args.serve:
        serve(args.serve, args.flag)
        return 0

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("Chromium is needed: apt-get install -y chromium", file=sys.stderr)
        return 2
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    flag = None
    extra = []
    helper = None
    if args.visitor in ("server", "process"):
        flag = os.path.join(tempfile.mkdtemp(prefix="bench-ep7-"), "busy")
    if args.visitor == "server":
        extra = ["--flag", flag]
    elif args.visitor == "process":
        from specdec_playable.runtime import jobs

        helper = subprocess.Popen([sys.executable, __file__, "--generate", flag],
                                  env={**os.environ, **jobs.blas_env(jobs.BLAS_THREADS)},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    results: dict[str, dict[str, list[float]]] = {}
    runs_started = 0
    load_start = os.getloadavg()
    try:
        wait_live(url, proc)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            warm_s = warm_model(browser, url)
            per_block = max(1, args.samples // args.blocks)
            for name in ("idle", "busy") * args.blocks:
                gen = None

                def keep_busy():
                    nonlocal runs_started
                    if not _running(gen):
                        start_run(gen)
                        runs_started += 1

                if name == "busy" and flag:
                    open(flag, "w").close()
                    time.sleep(2.0)  # the run is past its prompt pass
                elif name == "busy":
                    gen = open_generator(browser, url)
                    keep_busy()
                    gen.wait_for_timeout(1000)  # the run is past its prompt pass
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                got = measure(page, f"{url}/ep3", per_block, args.warmup,
                              between=keep_busy if gen is not None else None,
                              redraw_timeout_s=10.0)
                page.close()
                if gen is not None:
                    gen.get_by_role("button", name="Cancel").click() if _running(gen) else None
                    gen.close()
                    time.sleep(1.0)  # the cancelled run stops at its next pass
                if flag and os.path.exists(flag):
                    os.remove(flag)
                    time.sleep(1.0)
                for key, vals in got.items():
                    results.setdefault(name, {}).setdefault(key, []).extend(vals)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
        if helper is not None:
            helper.terminate()
            helper.wait(10)

    import bokeh
    import panel

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Episode 3 slider step -> browser while another visitor's Episode 7 run generates, "
          f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPUs (load average "
          f"{load_start[0]:.1f} at the start, {load} at the end: other work shares this machine), "
          f"Python {platform.python_version()}, panel {panel.__version__}, bokeh {bokeh.__version__}, "
          f"Chromium headless; times from keydown in the page. Model load and a first run before "
          f"measuring: {warm_s:.0f} s. Generating visitor: {args.visitor}"
          + (f" (Episode 7 runs started during busy blocks: {runs_started})" if not flag else "")
          + ".\n")
    print_table(results, (("idle", "idle (no generation)"),
                          ("busy", "during an Episode 7 generation")),
                "condition", "Busy / idle", TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
