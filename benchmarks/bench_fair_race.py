"""The fair race against the old two-clock method, with and without a load that arrives half way.

For one prompt and draft, four measurements of the same greedy reply:

* two clocks, quiet: ``speculate`` then ``generate`` (the old way), nothing else added;
* two clocks, load half way: the same, with ``--busy`` busy processes started when the
  speculative run ends, so the plain run meets them (what a second visitor's Run does);
* race, quiet: ``lm.race.race``, both runs taking turns pass by pass;
* race, load half way: the busy processes start when the plain run has written half its tokens.

Each is repeated ``--repeats`` times. The two-clock interval resamples each run's passes on
its own; the race's is the bootstrap over rounds of :func:`lm.race.fair_speedup`. The claim the
race makes: its interval under the load overlaps its quiet interval; the two-clock one does not.
Prints a markdown table with the load average at each measurement.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_fair_race.py [--task json-reshape]
[--draft lookup] [--max-new 32] [--busy 2] [--repeats 2]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from specdec_playable.lm import get_model
from specdec_playable.lm.compare import make_draft
from specdec_playable.lm.decode import generate, speculate
from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.lm.race import fair_speedup, race, two_clock_speedup

MAX_BUSY = 8


class Load:
    """Busy processes (``while True: pass``), started on demand and always stopped."""

    def __init__(self, n: int) -> None:
        self.n, self.procs = n, []

    def start(self) -> None:
        if not self.procs:
            self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                          for _ in range(self.n)]

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(10)
        self.procs = []


def two_clock(model, ids, draft, k, n, load: Load | None):
    spec = speculate(model, ids, make_draft(draft), k, max_new=n)
    if load is not None:
        load.start()
    try:
        plain = generate(model, ids, max_new=n)
    finally:
        if load is not None:
            load.stop()
    return two_clock_speedup(spec, plain, rng=0)


def fair(model, ids, draft, k, n, load: Load | None):
    def progress(run, update):
        if load is not None and run == "plain" and update.total_tokens >= n // 2:
            load.start()

    try:
        r = race(model, ids, make_draft(draft), k, max_new=n, progress=progress)
    finally:
        if load is not None:
            load.stop()
    f = fair_speedup(r.turns, rng=0)
    return f.speedup, f.low, f.high


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="json-reshape", choices=sorted(PROMPTS))
    ap.add_argument("--draft", default="lookup")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--max-new", type=int, default=32)
    ap.add_argument("--busy", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    if not 1 <= args.busy <= MAX_BUSY or not 1 <= args.repeats <= 10 or not 4 <= args.max_new <= 256:
        ap.error(f"--busy 1-{MAX_BUSY}, --repeats 1-10, --max-new 4-256")
    model = get_model()
    ids = model.tokenizer.chat(PROMPTS[args.task][1])
    load = Load(args.busy)
    print(f"{args.task}, {args.draft}, k = {args.k}, {args.max_new} tokens, greedy; load: "
          f"{args.busy} busy processes from half way; {os.cpu_count()} cores\n")
    print("| method | load | repeat | speedup | 95% interval | load average at start |")
    print("|---|---|---:|---:|---|---:|")
    results = {}
    for rep in range(1, args.repeats + 1):
        for name, fn in (("two clocks (before)", two_clock), ("race (now)", fair)):
            for cond, ld in (("quiet", None), ("half way", load)):
                la = os.getloadavg()[0]
                t = time.perf_counter()
                sp, lo, hi = fn(model, ids, args.draft, args.k, args.max_new, ld)
                results.setdefault((name, cond), []).append((sp, lo, hi))
                print(f"| {name} | {cond} | {rep} | {sp:.2f}x | {lo:.2f}x-{hi:.2f}x | {la:.1f} |"
                      f"  <!-- {time.perf_counter() - t:.0f} s -->", flush=True)
    print()
    for name in ("two clocks (before)", "race (now)"):
        pairs = zip(results[(name, "quiet")], results[(name, "half way")])
        ok = [q[1] <= h[2] and h[1] <= q[2] for q, h in pairs]
        print(f"{name}: quiet and loaded intervals overlap in {sum(ok)} of {len(ok)} repeats")
    return 0


if __name__ == "__main__":
    sys.exit(main())
