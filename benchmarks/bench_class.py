"""A class presses Run: many visitors start Episode 7 runs of their own prompts at once.

Starts ``specdec-playable serve`` (this checkout, the real model) on a free loopback port and
opens, with the browserless visitor of ``_bokeh_client.py``:

- ``--visitors`` Episode 7 pages (12 by default, at most 24), each with its own typed prompt
  (a short distinct request), prompt lookup, k = 4 and ``--max-new`` new tokens, greedy. Each
  types its prompt (the text area's ``value_input`` and ``value``, as a browser sends them) and
  later presses Run (the button's ``button_click`` event), and records what its page shows over
  time: its place in line and estimated wait (the status line), the result (the verdict with the
  speedup, its interval and the work-based figure) or a refusal, and when each arrived;
- one Episode 3 page, whose first slider is stepped (value, then throttled value) and timed
  from the step leaving the client to the recomputed content arriving (as in ``load.py``).

The run, in order:

1. warm-up: two visitors run at once, so each worker's model process has loaded the model;
2. solo: each visitor's prompt is run alone, one after another (``--solo``): the single-visitor
   reference for the fairness check, and the measured run times the estimated waits start from;
3. idle: ``--idle-steps`` Episode 3 slider steps with nothing else running;
4. the class: every visitor presses Run within a few milliseconds of the others, and Episode 3's
   slider keeps stepping until every visitor's run has finished or been refused;
5. idle again: as many Episode 3 steps as in 3. The idle figure is both idle blocks together,
   so that other work on a shared machine, if it changes, weighs on idle as on the class.

It then checks that every visitor finished or was refused with the line-is-full message, that
the places in line shown are consistent (the first places shown with every worker busy are 1,
2, 3... once each, a visitor's place never goes up, a place beyond the workers never says a
worker is free, and none says "0 are running"), compares
each queued visitor's first estimated wait with the time it really waited, each visitor's class
speedup with its solo one (the intervals should overlap: the race gives both decodings the same
moments, so the others' load cannot skew it), and Episode 3's steps during the class with idle
(the target: within 1.5x, median and p90). ``--max-waiting`` shortens the server's line to
show refusals (default: the site's own length, ``runtime.jobs.SHARED_MAX_WAITING``).

Prints a markdown table; ``--json PATH`` also writes every figure. Loopback only; every wait
has a timeout and the whole run a time limit (``--time-limit``). This measures; it asserts
nothing.

With ``--faults``, the class under faults instead: the students press Run again and again
for ``--fault-s`` seconds (120) while a random model process of the server is killed
(``SIGKILL``) every ``--kill-every`` seconds (20), and an Episode 3 page steps its slider
throughout; a student whose run failed (or was refused) presses Run again, as the page offers.
It counts the runs started, finished, failed with a message, refused and retried, the
websockets dropped, the model processes before and after and the server's descriptors, and
the socket errors and tracebacks in the server's log.

Run: ``python benchmarks/bench_class.py [--visitors 12] [--max-new 32] [--json out.json]``, or
``python benchmarks/bench_class.py --faults [--fault-s 120] [--kill-every 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import html
import json
import math
import os
import platform
import random
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from _bokeh_client import OPEN_TIMEOUT_S, WsVisitor, model_changes  # noqa: E402
from _local import cpu_seconds, free_port, pct, start_server  # noqa: E402

EP7 = "ep7_real_models_real_text"
EP3 = "ep3_the_quality_dial"
MAX_VISITORS = 24
TARGET = 1.5
DRAFT, K = "lookup", 4
#: Short requests the model answers at some length, one per visitor (no two alike).
PROMPTS = (
    "Write one sentence about the sea.",
    "Describe a cat in two sentences.",
    "Give three tips for learning to code.",
    "Explain what a rainbow is.",
    "Write a short poem about autumn leaves.",
    "Repeat this sentence exactly: The quick brown fox jumps over the lazy dog.",
    "What do bees make, and how?",
    "Say hello to a new student in a friendly way.",
    "List four planets of the solar system.",
    "Tell me a fact about the moon.",
    "Why do we need sleep?",
    "Write a Python function that adds two numbers.",
    "Describe a rainy morning in a city.",
    "What is the capital of France? Answer in a sentence.",
    "Give two reasons to drink water.",
    "Write a thank-you note to a teacher.",
    "Explain what a computer does, simply.",
    "Name three fruits and their colours.",
    "Write a sentence about mountains.",
    "What is photosynthesis?",
    "Describe your favourite meal.",
    "Write a haiku about snow.",
    "How does a bicycle work?",
    "Tell a very short story about a dog.",
)

#: What the page's status line and verdict say (``episodes.ep7.words.status_line``, ``episodes.ep7.words.verdict``,
#: ``episodes.ep7.words.work_words``, ``episodes.ep7.words.full_line``), read back. ``tests/test_bench_class.py``
#: checks these against the state's own sentences.
QUEUED = re.compile(r"Waiting in line: position (\d+)\.")
BUSY = re.compile(r"All (\d+) workers are busy")
FREE = "A worker is free"
WAIT = re.compile(r"Estimated start (?:in a moment|in about ([\d.]+) (s|min))")
NO_ESTIMATE = "No run has finished on this server yet"
RUNNING = ("Racing, pass by pass", "Loading the model", "Starting")
SPEEDUP = re.compile(r"([\d.]+)× plain decoding’s speed")
INTERVAL = re.compile(r"interval ([\d.]+)× to ([\d.]+)×")
WORK = re.compile(r"([\d.]+) tokens per round ÷ [\d.]+ steps per round ≈ ([\d.]+)×\.")
REFUSED = "The line is full"
FAILED = "The run failed"


def paragraphs(markup: str) -> list[str]:
    """What an HTML pane shows, as text, one string per paragraph (Panel sends the pane's HTML
    escaped)."""
    text = html.unescape(markup or "")
    out = []
    for part in re.split(r"<p\b[^>]*>", text):
        words = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", part))).strip()
        if words:
            out.append(words)
    return out


def plain_text(markup: str) -> str:
    """What an HTML pane shows, as one line of text."""
    return " ".join(paragraphs(markup))


def read_status(text: str) -> dict:
    """The status line as a record: ``kind`` (queued, running, refused, failed, other), and for
    a queued run its ``position``, ``busy`` (workers said busy, or None when one is free) and
    ``wait_s`` (the estimated start; None when none is given)."""
    m = QUEUED.search(text)
    if m:
        busy = BUSY.search(text)
        wait = WAIT.search(text)
        wait_s = None
        if wait:
            unit = 60 if wait.group(2) == "min" else 1
            wait_s = 0.0 if wait.group(1) is None else float(wait.group(1)) * unit
        return dict(kind="queued", text=text, position=int(m.group(1)),
                    busy=int(busy.group(1)) if busy else None, free=FREE in text, wait_s=wait_s,
                    no_estimate=NO_ESTIMATE in text)
    if text.startswith(RUNNING):
        return dict(kind="running")
    if REFUSED in text:
        return dict(kind="refused")
    if FAILED in text:
        return dict(kind="failed")
    return dict(kind="other")


def read_result(text: str) -> dict | None:
    """The verdict's numbers: speedup, its interval, and the work-based figure with tokens per
    pass (None where the sentence has no speedup)."""
    sp, iv, work = SPEEDUP.search(text), INTERVAL.search(text), WORK.search(text)
    if sp is None:
        return None
    verdict = ("faster" if "was faster" in text else "slower" if "was slower" in text
               else "no measurable difference" if "No measurable difference" in text else "?")
    return dict(verdict=verdict, speedup=float(sp.group(1)),
                low=float(iv.group(1)) if iv else math.nan, high=float(iv.group(2)) if iv else math.nan,
                tokens_per_pass=float(work.group(1)) if work else math.nan,
                work=float(work.group(2)) if work else math.nan)


def overlap(a: dict | None, b: dict | None) -> bool | None:
    """Whether two results' intervals overlap (None when either is missing)."""
    if not a or not b or math.isnan(a["low"]) or math.isnan(b["low"]):
        return None
    return a["low"] <= b["high"] and b["low"] <= a["high"]


#: Seconds between two runs' starts for the places in line to have settled between them: each
#: page learns of a start, and of its own new place, at its next poll (``episodes.ep7.view.POLL_MS``,
#: 300 ms), with room for a busy event loop.
SETTLED_S = 1.5


def check_places(runs: list[list[dict]], workers: int) -> list[str]:
    """Contradictions in the places in line that the visitors saw, as sentences (none: consistent).

    ``runs`` holds, per visitor, the statuses it saw in order (``read_status`` records, each with
    ``t``, seconds since its press; the visitors pressed within milliseconds of each other). A
    visitor's place never goes up; a place beyond the number of workers never comes with "a worker
    is free"; a line with every worker busy names them all. And midway between two runs' starts
    at least :data:`SETTLED_S` apart, what the waiting visitors' pages show is one line: places 1,
    2, 3, ... once each, and the next to start is the one at place 1. (Places shown within
    moments of a start cannot be compared: the line moves and each page polls in its own time.)
    """
    out = []
    starts = []
    for i, seen in enumerate(runs):
        places = [s["position"] for s in seen if s["kind"] == "queued"]
        start = next((s["t"] for s in seen if s["kind"] == "running"), None)
        if start is not None:
            starts.append((start, i))
        if any(b > a for a, b in zip(places, places[1:])):
            out.append(f"visitor {i + 1}: place in line went up ({places})")
        for s in seen:
            if s["kind"] != "queued":
                continue
            if s["position"] < 1:
                out.append(f"visitor {i + 1}: place {s['position']} in line")
            if s["free"] and s["position"] > workers:
                out.append(f"visitor {i + 1}: place {s['position']} but 'a worker is free'")
            if "0 are running" in s.get("text", ""):
                out.append(f"visitor {i + 1}: place {s['position']} and '0 are running'")
            if not s["free"] and s["busy"] != workers:
                out.append(f"visitor {i + 1}: place {s['position']} with {s['busy']} of {workers} "
                           "workers said busy")
    starts.sort()
    for (s0, _), (s1, nxt) in zip(starts, starts[1:]):
        if s1 - s0 < SETTLED_S:
            continue
        t = (s0 + s1) / 2
        shown = {}
        for i, seen in enumerate(runs):
            now = [s for s in seen if s["t"] <= t]
            if now and now[-1]["kind"] == "queued":
                shown[i] = now[-1]["position"]
        places = sorted(shown.values())
        if places != list(range(1, len(places) + 1)):
            out.append(f"{t:.1f} s in, the waiting visitors showed places {places}")
        if nxt in shown and shown[nxt] != 1:
            out.append(f"{t:.1f} s in, visitor {nxt + 1} showed place {shown[nxt]} and started next")
    return out


# --- the visitors ------------------------------------------------------------------------------


def status_pane(page: WsVisitor, result: dict) -> str:
    """The id of the run's status line among the result column's panes: the one that says to
    press Run before any run."""
    ids = [c["id"] for c in result["attributes"]["children"]]
    for pane in page.models(lambda n: n.get("id") in ids):
        if "Press Run" in plain_text(pane.get("attributes", {}).get("text") or ""):
            return pane["id"]
    raise RuntimeError("Episode 7's run status line not found")


class ClassVisitor:
    """An Episode 7 page with a typed prompt: types it, presses Run, records what it is shown."""

    def __init__(self, base: str, prompt: str, max_new: int):
        query = f"task=custom&draft={DRAFT}&k={K}&max_new={max_new}&decoding=greedy"
        self.page = WsVisitor(base, f"/{EP7}?{query}")
        self.prompt = prompt
        self.reset()

    def reset(self) -> None:
        self.pressed: float | None = None
        self.seen: list[tuple[float, str]] = []  # (seconds since the press, status text)
        self.result_text = ""
        self.refusal = ""
        self.ended: float | None = None
        self.end = asyncio.Event()

    async def open(self) -> None:
        p = self.page
        await p.open(need_slider=False)
        by_name = lambda name: p.models(lambda n: n.get("attributes", {}).get("name") == name)  # noqa: E731
        areas = p.models(lambda n: n.get("name") == "panel.models.widgets.TextAreaInput")
        runs = p.models(lambda n: n.get("name") == "panel.models.widgets.Button"
                        and n.get("attributes", {}).get("label") == "Run")
        result, lanes = by_name("ep7-result"), by_name("ep7-lanes")
        if not (areas and runs and result and lanes):
            raise RuntimeError("Episode 7's text area, Run button, result or lanes not found")
        self.area_id, self.run_id = areas[0]["id"], runs[0]["id"]
        # The status line is the result column's pane that says to press Run (above it, the
        # model's status line); the verdict is in the pane just above the lanes.
        self.status_id = status_pane(p, result[0])
        lanes_id = lanes[0]["id"]
        parent = p.models(lambda n: any(isinstance(c, dict) and c.get("id") == lanes_id
                                        for c in n.get("attributes", {}).get("children") or []))
        kids = [c["id"] for c in parent[0]["attributes"]["children"]]
        self.notes_id = kids[kids.index(lanes_id) - 1]
        p.on_patch.append(self._patch)
        await p.change(self.area_id, value_input=self.prompt, value=self.prompt)

    def _patch(self, content: dict) -> None:
        if self.pressed is None or self.end.is_set():
            return
        now = time.perf_counter() - self.pressed
        texts = model_changes(content, "text")
        if self.status_id in texts:
            shown = paragraphs(texts[self.status_id])
            text = " ".join(shown)
            self.seen.append((now, text))
            self.refusal = next((p for p in shown if REFUSED in p), self.refusal)
            if read_status(text)["kind"] in ("refused", "failed"):
                self.ended = now
                self.end.set()
        notes = plain_text(texts.get(self.notes_id, ""))
        if notes:
            self.result_text, self.ended = notes, now
            self.end.set()

    async def press(self) -> None:
        self.reset()
        self.pressed = time.perf_counter()
        await self.page.click(self.run_id)

    async def wait(self, timeout_s: float) -> None:
        try:
            await asyncio.wait_for(self.end.wait(), timeout_s)
        except TimeoutError:
            self.page.errors.append(f"no result within {timeout_s:.0f} s of pressing Run")

    def summary(self) -> dict:
        statuses = [{**read_status(text), "t": t} for t, text in self.seen]
        queued = [(t, s) for (t, _), s in zip(self.seen, statuses) if s["kind"] == "queued"]
        started = next((t for (t, _), s in zip(self.seen, statuses)
                        if s["kind"] == "running"), None)
        first_wait = next((s["wait_s"] for _, s in queued if s["wait_s"] is not None), None)
        final = statuses[-1]["kind"] if statuses else "none"
        outcome = ("finished" if self.result_text else final if final in ("refused", "failed")
                   else "no result")
        return dict(prompt=self.prompt, outcome=outcome, statuses=statuses,
                    first_place=queued[0][1]["position"] if queued else None,
                    first_wait_s=first_wait, started_s=started, ended_s=self.ended,
                    estimates=[(t, s["wait_s"]) for t, s in queued if s["wait_s"] is not None],
                    result=read_result(self.result_text), result_text=self.result_text,
                    refusal=self.refusal,
                    errors=list(self.page.errors))


async def step_ep3(v: WsVisitor, rng: random.Random, *, n: int | None = None,
                   until: asyncio.Event | None = None, limit_s: float = 600.0) -> list[float]:
    """Step Episode 3's slider ``n`` times, or until ``until`` is set (at most ``limit_s``); the
    step times in ms."""
    v.latencies.clear()
    t0, i = time.perf_counter(), 0
    while (n is None or i < n) and not (until is not None and until.is_set()):
        if time.perf_counter() - t0 > limit_s:
            v.errors.append(f"Episode 3 stepping stopped at its {limit_s:.0f} s bound")
            break
        await v.move(i)
        i += 1
        await asyncio.sleep(rng.uniform(0.15, 0.35))  # past Panel's 50 ms debounce, off any beat
    return list(v.latencies)


# --- the run -------------------------------------------------------------------------------------


async def open_class(ep3: WsVisitor, visitors: list[ClassVisitor]) -> None:
    """Open the Episode 3 page, then the class's pages, four at a time (as a class arrives)."""
    await asyncio.wait_for(ep3.open(), OPEN_TIMEOUT_S)
    for i in range(0, len(visitors), 4):
        await asyncio.wait_for(asyncio.gather(*(v.open() for v in visitors[i:i + 4])), OPEN_TIMEOUT_S)


async def warm_up(base: str, workers: int, timeout_s: float) -> float:
    """One short run per worker at once, so each worker's model process has loaded the model;
    the seconds from the presses to the last answer."""
    warm = [ClassVisitor(base, f"Say hi ({i + 1}).", 4) for i in range(workers)]
    await asyncio.gather(*(w.open() for w in warm))
    t = time.perf_counter()
    await asyncio.gather(*(w.press() for w in warm))
    await asyncio.gather(*(w.wait(timeout_s) for w in warm))
    took = time.perf_counter() - t
    for w in warm:
        await w.page.close()
    return took


async def close_class(visitors, ep3, proc) -> None:
    """Close every page of the class and stop the server."""
    for v in visitors:
        await v.page.close()
    if ep3 is not None:
        await ep3.close()
    proc.terminate()
    proc.wait(10)


def logged(log: Path, *marks: str, most: int = 10) -> list[str]:
    """The server log's first ``most`` lines holding any of ``marks``."""
    return [ln for ln in log.read_text().splitlines() if any(m in ln for m in marks)][:most]


SERVE_WITH_LINE = ("import sys; from specdec_playable.runtime import jobs; "
                   "jobs.SHARED_MAX_WAITING = int(sys.argv[1]); "
                   "from specdec_playable.app.cli import main; sys.exit(main(sys.argv[2:]))")


async def run(args) -> dict:
    t_all = time.perf_counter()
    from specdec_playable.runtime import jobs

    workers = max(1, os.cpu_count() or 1)
    line = args.max_waiting if args.max_waiting is not None else jobs.SHARED_MAX_WAITING
    # Serve this checkout's code, whatever is installed.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    port = free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"specdec-class-{port}.log"
    command = None
    if args.max_waiting is not None:
        command = [sys.executable, "-c", SERVE_WITH_LINE, str(args.max_waiting), "serve"]
    load_start = os.getloadavg()
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    proc = start_server(port, log, command=command)
    base = f"http://127.0.0.1:{port}"
    rng = random.Random(1)
    out: dict = dict(date=date, cpus=os.cpu_count(), workers=workers, line=line,
                     site_line=jobs.SHARED_MAX_WAITING,
                     visitors=args.visitors, max_new=args.max_new, draft=DRAFT, k=K,
                     machine=f"{platform.machine()} {platform.system()}",
                     python=platform.python_version(), load_start=load_start)
    visitors: list[ClassVisitor] = []
    ep3 = None
    try:
        budget = lambda: max(1.0, args.time_limit - (time.perf_counter() - t_all))  # noqa: E731
        ep3 = WsVisitor(base, f"/{EP3}")
        visitors = [ClassVisitor(base, PROMPTS[i], args.max_new) for i in range(args.visitors)]
        await open_class(ep3, visitors)

        # 1. Warm-up: each worker's model process loads the model.
        out["warm_s"] = await warm_up(base, workers, min(300, budget()))

        # 2. Each prompt alone: the single-visitor reference.
        solo = []
        for v in visitors[:args.solo]:
            await v.press()
            await v.wait(min(300, budget()))
            solo.append(v.summary())
        out["solo"] = solo

        # 3. Episode 3's slider with nothing running.
        for i in range(5):  # warm up the page
            await ep3.move(i)
            await asyncio.sleep(0.2)
        idle = await step_ep3(ep3, rng, n=args.idle_steps, limit_s=min(300, budget()))

        # 4. The class presses Run; Episode 3 keeps stepping until everyone has an answer.
        ended = asyncio.Event()
        stepping = asyncio.create_task(step_ep3(ep3, rng, until=ended, limit_s=budget()))
        await asyncio.sleep(0.5)
        t_class, cpu0 = time.perf_counter(), cpu_seconds(proc.pid)
        await asyncio.gather(*(v.press() for v in visitors))
        press_spread = max(v.pressed for v in visitors) - min(v.pressed for v in visitors)
        await asyncio.gather(*(v.wait(budget()) for v in visitors))
        class_s = time.perf_counter() - t_class
        out["server_cpu"] = (cpu_seconds(proc.pid) - cpu0) / class_s
        ended.set()
        busy = await stepping
        # 5. Idle again: other work on a shared machine shows up as a change between the two.
        after = await step_ep3(ep3, rng, n=args.idle_steps, limit_s=min(300, budget()))
        out.update(press_spread_ms=1000 * press_spread, class_s=class_s,
                   class_runs=[v.summary() for v in visitors], ep3_idle_ms=idle + after,
                   ep3_before_ms=idle, ep3_after_ms=after, ep3_class_ms=busy,
                   ep3_errors=list(ep3.errors), load_end=os.getloadavg())
    finally:
        await close_class(visitors, ep3, proc)
    out["server_errors"] = logged(log, " ERROR ", "Traceback")
    out["total_s"] = time.perf_counter() - t_all
    return out


# --- the class under faults ------------------------------------------------------------------------


def model_processes(server_pid: int) -> list[int]:
    """The server's model processes: its child processes (from /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == server_pid:
                out.append(int(d.name))
    return sorted(out)


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def student(v: ClassVisitor, until: float, runs: list[dict], t0: float) -> None:
    """Press Run, wait for the page's answer, and press again, until ``until``; after a failure or
    a refusal the student presses again (the page offers it), and a student whose last run did
    not finish keeps pressing (after the faults stop) until one does or time is up."""
    last = None
    while time.perf_counter() < until or (last != "finished" and time.perf_counter() < until + 240):
        await v.press()
        await v.wait(240)
        r = v.summary()
        last = r["outcome"]
        failed = next((t.split(" This run:")[0] for _, t in v.seen if FAILED in t), "")
        runs.append(dict(prompt=v.prompt, outcome=last, at_s=v.pressed - t0, took_s=v.ended,
                         message=failed or r["refusal"], errors=r["errors"]))
        if last != "finished":
            await asyncio.sleep(1.0)  # a student reads the line, then presses Run again


async def run_faults(args) -> dict:
    """A class of ``--visitors`` students pressing Run again and again for ``--fault-s`` seconds
    while one of the server's model processes is killed (SIGKILL) every ``--kill-every`` seconds,
    and an Episode 3 page stepping its slider throughout."""
    import signal

    t_all = time.perf_counter()
    workers = max(1, os.cpu_count() or 1)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    port = free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"specdec-class-faults-{port}.log"
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    proc = start_server(port, log)
    base = f"http://127.0.0.1:{port}"
    rng = random.Random(2)
    out: dict = dict(date=date, cpus=os.cpu_count(), workers=workers, visitors=args.visitors,
                     max_new=args.max_new, fault_s=args.fault_s, kill_every=args.kill_every,
                     machine=f"{platform.machine()} {platform.system()}", load_start=os.getloadavg())
    visitors: list[ClassVisitor] = []
    ep3 = None
    try:
        ep3 = WsVisitor(base, f"/{EP3}")
        visitors = [ClassVisitor(base, PROMPTS[i], args.max_new) for i in range(args.visitors)]
        await open_class(ep3, visitors)
        await warm_up(base, workers, 600)  # every worker's model process has loaded the model
        out["processes_before"] = len(model_processes(proc.pid))
        out["fds_before"] = open_fds(proc.pid)

        kills: list[dict] = []
        runs: list[dict] = []
        t0 = time.perf_counter()
        until = t0 + args.fault_s

        async def killer() -> None:
            while True:
                await asyncio.sleep(args.kill_every)
                if time.perf_counter() > until:
                    return
                pids = model_processes(proc.pid)
                if pids:
                    pid = rng.choice(pids)
                    os.kill(pid, signal.SIGKILL)
                    kills.append(dict(at_s=time.perf_counter() - t0, pid=pid))

        stop = asyncio.Event()
        stepping = asyncio.create_task(step_ep3(ep3, rng, until=stop, limit_s=args.fault_s + 600))
        await asyncio.gather(killer(), *(student(v, until, runs, t0) for v in visitors))
        stop.set()
        steps = await stepping
        await asyncio.sleep(2.0)
        out.update(kills=kills, runs=runs, ep3_steps=len(steps), ep3_errors=list(ep3.errors),
                   ep3_p90_ms=pct(steps, 90), class_s=time.perf_counter() - t0,
                   processes_after=len(model_processes(proc.pid)), fds_after=open_fds(proc.pid),
                   dropped=[e for page in [ep3, *(v.page for v in visitors)] for e in page.errors
                            if "closed" in e.lower() or "reader stopped" in e])
    finally:
        await close_class(visitors, ep3, proc)
    out["server_socket_errors"] = logged(log, "non-socket", "Bad file descriptor")
    out["server_errors"] = logged(log, " ERROR ", "Traceback")
    out["total_s"] = time.perf_counter() - t_all
    return out


def report_faults(out: dict) -> str:
    runs = out["runs"]
    n = lambda kind: sum(r["outcome"] == kind for r in runs)  # noqa: E731
    failed = [r for r in runs if r["outcome"] == "failed"]
    retried = sum(1 for i, r in enumerate(runs) if r["outcome"] != "finished"
                  and any(q["prompt"] == r["prompt"] for q in runs[i + 1:]))
    last = {}
    for r in runs:
        last[r["prompt"]] = r["outcome"]
    messages = sorted({r["message"] for r in failed})
    lines = [
        f"**{out['date']}**, {out['machine']}, {out['cpus']} cores, {out['workers']} workers; "
        f"{out['visitors']} students pressing Run again and again ({out['max_new']} new tokens, "
        f"{DRAFT}, k = {K}) for {out['fault_s']:.0f} s while a random model process was killed "
        f"(SIGKILL) every {out['kill_every']:.0f} s; an Episode 3 page stepping its slider "
        f"throughout. Load average {out['load_start'][0]:.1f} at the start.",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| model processes killed | {len(out['kills'])} |",
        f"| runs started | {len(runs)} |",
        f"| finished | {n('finished')} |",
        f"| failed with a message | {len(failed)} |",
        f"| refused (line full) | {n('refused')} |",
        f"| no result | {len(runs) - n('finished') - len(failed) - n('refused')} |",
        f"| runs after a failure or refusal (retried) | {retried} |",
        f"| students whose last run finished | {sum(v == 'finished' for v in last.values())} of "
        f"{len(last)} |",
        f"| websockets dropped | {len(out['dropped'])} |",
        f"| Episode 3 slider steps (errors) | {out['ep3_steps']} ({len(out['ep3_errors'])}) |",
        f"| model processes before / after | {out['processes_before']} / {out['processes_after']} |",
        f"| server descriptors before / after | {out['fds_before']} / {out['fds_after']} |",
        f"| server log: socket errors, tracebacks | {len(out['server_socket_errors'])}, "
        f"{len(out['server_errors'])} |",
    ]
    if messages:
        lines += ["", "The failed runs said: " + "; ".join(f"“{m}”" for m in messages)]
    return "\n".join(lines)


# --- the report ----------------------------------------------------------------------------------


def analyse(out: dict) -> dict:
    """The checks and the figures the table shows, from what :func:`run` recorded."""
    runs = out["class_runs"]
    outcomes = [r["outcome"] for r in runs]
    refusals = [r["refusal"] for r in runs if r["outcome"] == "refused"]
    waited = [dict(estimated_s=r["first_wait_s"], waited_s=r["started_s"],
                   ratio=r["started_s"] / r["first_wait_s"] if r["first_wait_s"] > 0 else math.nan)
              for r in runs if r["first_wait_s"] is not None and r["started_s"] is not None]
    # Once the first class run has ended, the estimates can draw on runs made with every
    # worker busy, as the runs behind a line are: the next estimate each waiting visitor saw.
    first_end = min((r["ended_s"] for r in runs if r["outcome"] == "finished"), default=math.inf)
    later = []
    for r in runs:
        nxt = next(((t, w) for t, w in r["estimates"] if t >= first_end), None)
        if nxt and r["started_s"] is not None and r["started_s"] > nxt[0] and nxt[1] > 0:
            later.append(dict(estimated_s=nxt[1], waited_s=r["started_s"] - nxt[0],
                              ratio=(r["started_s"] - nxt[0]) / nxt[1]))
    solo = {s["prompt"]: s["result"] for s in out.get("solo", [])}
    fair = [dict(prompt=r["prompt"], solo=solo.get(r["prompt"]), cls=r["result"],
                 overlap=overlap(solo.get(r["prompt"]), r["result"])) for r in runs]
    idle, busy = out["ep3_idle_ms"], out["ep3_class_ms"]
    ratio_med = statistics.median(busy) / statistics.median(idle) if idle and busy else math.nan
    ratio_p90 = pct(busy, 90) / pct(idle, 90) if idle and busy else math.nan
    return dict(
        finished=outcomes.count("finished"), refused=outcomes.count("refused"),
        other=len(outcomes) - outcomes.count("finished") - outcomes.count("refused"),
        refusals=sorted(set(refusals)), clear=all(REFUSED in t for t in refusals),
        places=check_places([r["statuses"] for r in runs], out["workers"]),
        saw_place=sum(r["first_place"] is not None for r in runs),
        saw_wait=sum(r["first_wait_s"] is not None for r in runs), waited=waited, later=later,
        first_end_s=first_end, fair=fair,
        ratio_med=ratio_med, ratio_p90=ratio_p90, met=ratio_med <= TARGET and ratio_p90 <= TARGET)


def _r(r: dict | None) -> str:
    """A result as ``1.23x [1.01-1.50]``."""
    if not r:
        return "–"
    iv = "" if math.isnan(r["low"]) else f" [{r['low']:.2f}-{r['high']:.2f}]"
    return f"{r['speedup']:.2f}x{iv}"


def _work(r: dict | None) -> str:
    return f"{r['work']:.2f}x" if r and math.isfinite(r["work"]) else "–"


def _range(xs) -> str:
    return f"{min(xs):.0f}-{max(xs):.0f}"


def report(out: dict, a: dict) -> str:
    """The markdown that docs/performance.md quotes: a line of conditions, the checks, the
    fairness table."""
    la = lambda t: "/".join(f"{x:.1f}" for x in t)  # noqa: E731
    line_flag = "" if out["line"] == out["site_line"] else f" --max-waiting {out['line']}"
    lines = [
        f"`python benchmarks/bench_class.py --visitors {out['visitors']} --max-new {out['max_new']}"
        f"{line_flag}`, {out['date']}, {out['machine']}, {out['cpus']} CPUs, Python {out['python']}; "
        f"load average {la(out['load_start'])} at the start, {la(out['load_end'])} at the end. "
        f"{out['visitors']} browserless visitors on Episode 7, each with its own typed prompt "
        f"(prompt lookup, k = {out['k']}, up to {out['max_new']} new tokens, greedy), press Run "
        f"within {out['press_spread_ms']:.0f} ms of each other; {out['workers']} workers, a line of "
        f"{out['line']}. Before the class: a warm-up ({out['warm_s']:.0f} s: each worker's process "
        f"loads the model) and each prompt run alone. The class took {out['class_s']:.0f} s, the "
        f"whole benchmark {out['total_s']:.0f} s.",
        "",
        "| what | measured |",
        "|---|---|",
        f"| visitors | {out['visitors']}: {a['finished']} finished, {a['refused']} refused, "
        f"{a['other']} neither |",
    ]
    if a["refusals"]:
        clear = "every refusal says so" if a["clear"] else "NOT every refusal says the line is full"
        lines.append(f"| refusal shown ({clear}) | “{a['refusals'][0]}” |")
    places = "yes" if not a["places"] else "NO: " + "; ".join(a["places"][:3])
    lines += [
        f"| saw a place in line / an estimated wait | {a['saw_place']} / {a['saw_wait']} |",
        f"| places in line consistent (never up; between starts one line 1, 2, 3... with place 1 "
        f"next to run; no free worker behind the workers) | {places} |",
    ]
    for key, what in (("waited", "waited / the first estimate shown"),
                      ("later", f"waited / the estimate shown once the first class run had ended "
                                f"({a['first_end_s']:.0f} s in)")):
        ratios = [w["ratio"] for w in a[key] if math.isfinite(w["ratio"])]
        if ratios:
            lines.append(
                f"| {what} ({len(ratios)} queued visitors) | median "
                f"{statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f} "
                f"(estimates {_range([w['estimated_s'] for w in a[key]])} s, waits "
                f"{_range([w['waited_s'] for w in a[key]])} s) |")
    idle, busy = out["ep3_idle_ms"], out["ep3_class_ms"]
    n_errors = sum(len(r["errors"]) for r in out["class_runs"])
    lines += [
        f"| Episode 3 slider step, idle before and after (N = {len(idle)}) | median "
        f"{statistics.median(idle):.0f} ms, p90 {pct(idle, 90):.0f} ms (before: "
        f"{statistics.median(out['ep3_before_ms']):.0f} / {pct(out['ep3_before_ms'], 90):.0f} ms, "
        f"after: {statistics.median(out['ep3_after_ms']):.0f} / {pct(out['ep3_after_ms'], 90):.0f} ms) |",
        f"| Episode 3 slider step, during the class (N = {len(busy)}) | median "
        f"{statistics.median(busy):.0f} ms, p90 {pct(busy, 90):.0f} ms |",
        f"| class / idle | median {a['ratio_med']:.2f}x, p90 {a['ratio_p90']:.2f}x (target <= "
        f"{TARGET}x: {'met' if a['met'] else 'NOT met'}) |",
        f"| server process (event loop; the runs are in its model processes) | "
        f"{100 * out['server_cpu']:.0f}% of a core during the class |",
        f"| errors | visitors {n_errors}, Episode 3 {len(out['ep3_errors'])}, server log "
        f"{len(out['server_errors'])} |",
        "",
        "| visitor's prompt | alone: speedup [95% interval] | by the work | in the class "
        "| by the work | tokens per pass | intervals overlap |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for f in a["fair"]:
        s, c = f["solo"], f["cls"]
        tpp = f"{(c or s)['tokens_per_pass']:.2f}" if (c or s) else "–"
        same = {True: "yes", False: "NO", None: "–"}[f["overlap"]]
        lines.append(f"| {f['prompt'][:48]} | {_r(s)} | {_work(s)} | {_r(c)} | {_work(c)} | {tpp} "
                     f"| {same} |")
    both = [f for f in a["fair"] if f["overlap"] is not None]
    lines += ["", f"Intervals of the same prompt alone and in the class overlap for "
                  f"{sum(f['overlap'] for f in both)} of {len(both)} visitors."]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--visitors", type=int, default=12, help=f"Episode 7 visitors, 1-{MAX_VISITORS}")
    ap.add_argument("--max-new", type=int, default=32, help="new tokens per run, 2-128 (default 32)")
    ap.add_argument("--solo", type=int, default=None,
                    help="how many visitors' prompts to run alone first (default: all)")
    ap.add_argument("--idle-steps", type=int, default=60,
                    help="Episode 3 steps idle, before and again after the class, 10-500")
    ap.add_argument("--max-waiting", type=int, default=None,
                    help="the server's line length (default: the site's own)")
    ap.add_argument("--time-limit", type=float, default=1200, help="seconds for everything, 60-3600")
    ap.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the figures here")
    ap.add_argument("--faults", action="store_true",
                    help="the class under faults instead: kill a model process every --kill-every s")
    ap.add_argument("--fault-s", type=float, default=120, help="seconds of faults, 20-1800 (default 120)")
    ap.add_argument("--kill-every", type=float, default=20, help="seconds between kills, 2-600 (default 20)")
    args = ap.parse_args(argv)
    if args.faults:
        if not (1 <= args.visitors <= MAX_VISITORS and 2 <= args.max_new <= 128
                and 20 <= args.fault_s <= 1800 and 2 <= args.kill_every <= 600):
            ap.error(f"visitors in [1, {MAX_VISITORS}], max-new in [2, 128], fault-s in [20, 1800], "
                     "kill-every in [2, 600]")
        out = asyncio.run(run_faults(args))
        print(report_faults(out))
        if args.json is not None:
            args.json.write_text(json.dumps(out, indent=1, default=str))
        return 0
    args.solo = args.visitors if args.solo is None else args.solo
    if not (1 <= args.visitors <= MAX_VISITORS and 2 <= args.max_new <= 128
            and 0 <= args.solo <= args.visitors and 10 <= args.idle_steps <= 500
            and 60 <= args.time_limit <= 3600
            and (args.max_waiting is None or 0 <= args.max_waiting <= 64)):
        ap.error(f"visitors in [1, {MAX_VISITORS}], max-new in [2, 128], solo in [0, visitors], "
                 "idle-steps in [10, 500], time-limit in [60, 3600], max-waiting in [0, 64]")
    out = asyncio.run(run(args))
    a = analyse(out)
    print(report(out, a))
    if args.json is not None:
        args.json.write_text(json.dumps({**out, "analysis": a}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
